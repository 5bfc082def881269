"""Known differences between a QEMU build and the model, as data.

The model mirrors each build's version where QEMU changed on purpose (the
profile selects that).  A quirk is what remains: a difference we choose to
document rather than model, such as a QEMU bug that a later release fixed.
Each entry says which builds, what differs, why, and the QEMU change behind
it.  The report lists the quirks a run applied and the ones that no longer
occur (stale: the build is covered, the scenario ran, the difference never
showed up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.check.step import Step
from harness.profile import BuildProfile, Version


@dataclass(frozen=True)
class Quirk:
    key: str
    #: The builds it concerns, for people ("QEMU < 8.0")...
    builds: str
    #: ...and for the machine.
    applies: Callable[[BuildProfile], bool]
    what: str
    why: str
    #: The QEMU change that introduced or fixed it (commit, release).
    change: str
    #: Does a divergence ``(step, kind)`` match this quirk?
    match: Callable[[Step, str], bool]
    #: Scenarios where it is expected (empty: any).
    scenarios: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:
        # Its rules are closures: a ``check -j`` worker sends the key.
        return (by_key, (self.key,))


def by_key(key: str) -> Quirk:
    """The entry of :data:`QUIRKS` named ``key``."""
    return next(q for q in QUIRKS if q.key == key)


def version_below(v: Version) -> Callable[[BuildProfile], bool]:
    return lambda p: p.version < v


def version_at_least(v: Version) -> Callable[[BuildProfile], bool]:
    return lambda p: p.version >= v


def read_of(offset: int, mask: int = ~0) -> Callable[[Step, str], bool]:
    """Matches a register read at ``offset`` whose values differ only in ``mask``."""

    def m(step: Step, kind: str) -> bool:
        return (
            kind == "result" and step.op == "read" and step.args[0] == offset
            and (int(step.model) ^ int(step.qemu)) & ~mask == 0
        )

    return m


def _hostctl2_lost(step: Step, kind: str) -> bool:
    return (kind == "result" and step.op == "read" and step.args[0] == 0x3E
            and step.args[1] == 2 and step.qemu == 0)


#: The table.  Keep each entry's reason specific enough to act on.
QUIRKS: tuple[Quirk, ...] = (
    Quirk(
        key="migration-loses-hostctl2",
        builds="every build here (7.2 to 11.1; still so in the 10.2.2, 11.0.3 and 11.1.1 "
               "sources)",
        applies=lambda _p: True,
        what="after a migration Host Control 2 (0x3E) reads 0: UHS mode, 1.8 V "
             "enable, driver strength, sampling clock select are gone",
        why="sdhci's vmstate has no field for hostctl2, so the destination keeps its "
            "reset value; a QEMU bug (README: Migration), not modelled",
        change="none yet (hw/sd/sdhci.c sdhci_vmstate)",
        match=_hostctl2_lost,
        scenarios=("migrate-uhs-tuned",),
    ),
)


class QuirkSet:
    """The quirks that concern one build, and which of them a run used."""

    def __init__(self, quirks: tuple[Quirk, ...], profile: BuildProfile | None = None,
                 scenario: str = "") -> None:
        self.quirks = tuple(q for q in quirks if profile is None or q.applies(profile))
        self.scenario = scenario
        self.used: set[str] = set()

    def explain(self, step: Step, kind: str) -> Quirk | None:
        for q in self.quirks:
            if q.scenarios and self.scenario not in q.scenarios:
                continue
            if q.match(step, kind):
                self.used.add(q.key)
                return q
        return None

    def expected_here(self) -> list[Quirk]:
        return [q for q in self.quirks if not q.scenarios or self.scenario in q.scenarios]


def to_json(q: Quirk) -> dict[str, Any]:
    return {"key": q.key, "builds": q.builds, "what": q.what, "why": q.why, "change": q.change}
