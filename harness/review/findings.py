"""The review's findings: each distinct behaviour change once, most harmful first.

The direct comparison keeps every distinct difference of each run (its
signature: what differed | the SD command in progress | the card state;
see :mod:`harness.check.scoreboard`).  Here the changed runs' differences
are grouped by signature across scenarios and machine types: one
:class:`ReviewFinding` per signature, with the runs that show it, in how many it
came first, the shortest run's decoded difference and its reproducers.  A
difference that follows from an earlier one of the same run (the same
value read again) was counted on that one by the scoreboard and is no
finding of its own.

Order: data lost or wrong data first (card image, DMA memory, the data
port), then a QEMU crashing or hanging, then interrupts and status, then
identity registers (:data:`harness.check.scoreboard.HARM_ORDER`).  A
benchmark whose own check fails on patched (an erase that leaves data) is
a data finding too (:func:`from_bench`).

The model's word per finding (:func:`judge`): the model check of each
build lists what differed from the model; a finding's ``what | command``
among base's but not patched's means the model agrees with patched, and so
on.  An interrupt difference names each side's events, so base's check
(model against base) shows it with the sides swapped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.check.scoreboard import DATA, HARM_ORDER, Finding, signature_text
from harness.review.classify import CHANGED, ModelEvidence, ReviewRow
from harness.review.direct import BASE_PATCHED, DirectDifference
from harness.review.speed import Comparison


@dataclass
class ReviewFinding:
    """One distinct behaviour change (see the module doc)."""

    signature: str
    #: ``(scenario@machine, difference)`` of every run that shows it
    runs: list[tuple[str, DirectDifference]] = field(default_factory=list)
    #: the first patch whose build shows it (``--each``)
    patch: str = ""
    #: whom the model agrees with (:func:`judge`)
    model: str = ""
    #: a benchmark's failed check: the benchmark and what it found
    bench: str = ""
    #: a benchmark finding's reproducers (scripts, command lines)
    reproducers: list[str] = field(default_factory=list)
    #: the harm class when the signature does not say it (a benchmark's)
    harm_class: str = ""
    #: the benchmark whose check failed (:func:`harness.review.speed.failure` names)
    check: str = ""

    @property
    def finding(self) -> Finding:
        """The scoreboard's finding of these runs (its harm, in how many it
        came first, its shortest example), which this one wraps."""
        return Finding(self.signature, [(k, d.difference) for k, d in self.runs])

    @property
    def harm(self) -> str:
        return self.harm_class or self.finding.harm

    @property
    def first_in(self) -> int:
        return self.finding.first_in

    def example(self) -> tuple[str, DirectDifference] | None:
        """The scoreboard's example (the shortest run where it is the first
        difference, else the shortest where it comes after others) with its
        reproducers; None for a benchmark's."""
        if not self.runs:
            return None
        name, diff = self.finding.example()
        return next((k, d) for k, d in self.runs if k == name and d.difference is diff)

    def title(self) -> str:
        """The signature as a reviewer reads it (base and patched named, no
        card state where there is none)."""
        return self.bench or signature_text(self.signature, BASE_PATCHED).removesuffix(" | -")

    def to_json(self) -> dict[str, Any]:
        ex = self.example()
        return {"signature": self.signature, "harm": self.harm, "runs": len(self.runs),
                "first_in": self.first_in, "patch": self.patch, "model": self.model,
                "bench": self.bench, "reproducers": self.reproducers,
                "run_names": [k for k, _ in self.runs],
                "example": None if ex is None else {"run": ex[0], **ex[1].to_json()}}


def rank(f: ReviewFinding) -> tuple[int, int, str]:
    """Sort key: harm class, then the most runs, then the signature."""
    return HARM_ORDER.index(f.harm), -len(f.runs), f.signature


def group(rows: Iterable[ReviewRow]) -> list[ReviewFinding]:
    """The distinct differences of the changed runs, most harmful first."""
    by: dict[str, ReviewFinding] = {}
    for r in rows:
        if r.category != CHANGED or r.direct is None:
            continue
        for d in r.direct.differences:
            by.setdefault(d.signature, ReviewFinding(d.signature)).runs.append((r.key, d))
    return sorted(by.values(), key=rank)


def what_of(signature: str) -> str:
    """What differed, of a signature (its first part)."""
    return signature.split(" | ", 1)[0]


def changes(found: list[ReviewFinding]) -> list[list[ReviewFinding]]:
    """The findings by change: the same what (register fields, memory zone,
    card image, interrupt events) and patch, under whatever SD commands (a
    status bit a patch sets at the end of every DMA transfer is one
    signature per command); wrong data that one patch brings is one change,
    however it shows (through the data port, in DMA memory, in a benchmark's
    own check); the finding with the most runs first in each.  Ordered by
    that finding's harm, then by the runs the change has."""
    by: dict[tuple[str, str], list[ReviewFinding]] = {}
    for f in found:
        what = DATA if f.patch and f.harm == DATA else f.bench or what_of(f.signature)
        by.setdefault((what, f.patch), []).append(f)
    groups = [sorted(g, key=lambda f: (-len(f.runs), rank(f))) for g in by.values()]
    return sorted(groups, key=lambda g: (HARM_ORDER.index(g[0].harm),
                                         -len({k for f in g for k, _ in f.runs})))


def from_bench(comps: Iterable[Comparison]) -> list[ReviewFinding]:
    """A benchmark whose own check fails on patched and not on base: a data finding."""
    return [ReviewFinding(f"benchmark {c.name}: {c.failed['patched']}",
                    bench=f"benchmark {c.name}: patched's {c.failed['patched']} (base's passes)",
                    reproducers=list(c.reproducers), harm_class=DATA, check=c.name)
            for c in comps if "patched" in c.failed and "base" not in c.failed]


def what_command(signature: str) -> str:
    """``what | command`` of a signature (the card state dropped: base's
    QEMU has no card state to name in a direct comparison)."""
    return " | ".join(signature.split(" | ")[:2])


def swapped(wc: str) -> str:
    """``what | command`` with the sides swapped (an interrupt difference
    names each side's events: ``irq:model=R/1,qemu=/0``)."""
    what, _, command = wc.partition(" | ")
    if what.startswith("irq:model=") and ",qemu=" in what:
        m, q = what[len("irq:model="):].split(",qemu=", 1)
        what = f"irq:model={q},qemu={m}"
    return f"{what} | {command}"


AGREES_BASE = "the model agrees with base: patched diverges from it"
AGREES_PATCHED = "the model agrees with patched (base diverged from it)"
NEITHER = "the model agrees with neither"
NO_RULE = "neither build's model check shows it: the model has no rule for it (or never got there)"


def judge(f: ReviewFinding, base: Mapping[str, ModelEvidence],
          patched: Mapping[str, ModelEvidence]) -> str:
    """Whom the model agrees with on ``f``: its ``what | command`` among
    what base's model check found on the same runs (sides swapped) and
    what patched's found (see the module doc)."""
    wc = what_command(f.signature)
    keys = [k for k, _ in f.runs]
    in_base = any(swapped(wc) in base[k].whats for k in keys if k in base)
    in_patched = any(wc in patched[k].whats for k in keys if k in patched)
    if in_patched and not in_base:
        return AGREES_BASE
    if in_base and not in_patched:
        return AGREES_PATCHED
    return NEITHER if in_base else NO_RULE


def judge_all(found: list[ReviewFinding], base: Mapping[str, ModelEvidence],
              patched: Mapping[str, ModelEvidence]) -> None:
    """:func:`judge` for every finding of the direct comparison."""
    for f in found:
        if f.runs:
            f.model = judge(f, base, patched)
