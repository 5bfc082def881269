"""Speed of base against patched: the same requests, rounds interleaved.

``bench data`` cells (:func:`harness.bench.data.bench_build`, one round per
call) and ``bench erase`` cases (:func:`harness.bench.erase.erase_once`) run
base, patched, base, patched...: a load change on the shared machine hits
both alike.  Each round gives a ratio patched/base; the median ratio and the
lowest and highest are reported, and a difference whose ratios straddle 1
(or lie within :data:`NOISE` of it) is "within noise".
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench import data, erase
from harness.bench import guest as bench_guest
from harness.qemu.builds import QemuBuild

#: Ratios within this of 1.0 are not a difference on a loaded machine.
NOISE = 0.10
#: Fewest rounds that may call a slowdown a problem (fewer: a note).
MIN_ROUNDS = 5
#: The cells measured by default: a small and a large ADMA2 read and write,
#: an SDMA read (the seed series' fio block size is 128 KiB).
DATA_CELLS = (("read", "adma2", 128), ("write", "adma2", 128), ("read", "sdma", 16),
              ("write", "pio", 16))
ERASE_CASE = erase.Case("64 MiB", 4 * erase.GIB, 64 * erase.MIB)


@dataclass
class Comparison:
    """One measurement on both builds: per-round values and ratios."""

    name: str
    unit: str
    higher_is_better: bool
    base: list[float] = field(default_factory=list)
    patched: list[float] = field(default_factory=list)
    error: str = ""
    #: what the benchmark's own check of the result found, if anything
    note: str = ""
    #: a figure that is a verdict, not a number (the guest's integrity checks):
    #: each side's, per round
    base_status: list[str] = field(default_factory=list)
    patched_status: list[str] = field(default_factory=list)

    @property
    def status_differs(self) -> bool:
        """A verdict figure on which the builds answer differently."""
        return bool(self.base_status) and set(self.base_status) != set(self.patched_status)

    @property
    def ratios(self) -> list[float]:
        return [p / b for b, p in zip(self.base, self.patched, strict=False) if b > 0]

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def within_noise(self) -> bool:
        r = self.ratios
        return not r or (min(r) <= 1.0 <= max(r)) or all(abs(x - 1) <= NOISE for x in r)

    @property
    def conclusive(self) -> bool:
        """Enough rounds, each beyond noise the same way, to call it a difference."""
        r = self.ratios
        return len(r) >= MIN_ROUNDS and (all(x > 1 + NOISE for x in r)
                                         or all(x < 1 - NOISE for x in r))

    def speedup(self) -> float | None:
        """How many times faster patched is (>1 faster, <1 slower)."""
        r = self.ratio
        if r is None or r == 0:
            return None
        return r if self.higher_is_better else 1 / r

    def describe(self) -> str:
        if self.base_status or self.patched_status:
            return (f"{self.name}: base {'/'.join(sorted(set(self.base_status)))}, patched "
                    f"{'/'.join(sorted(set(self.patched_status)))}")
        if self.error:
            return f"{self.name}: not measured ({self.error})"
        r = self.ratios
        if not r:
            return f"{self.name}: no samples"
        b, p = statistics.median(self.base), statistics.median(self.patched)
        s = self.speedup() or 0.0
        lo, hi = min(r), max(r)
        if not self.higher_is_better:
            lo, hi = 1 / hi, 1 / lo
        verdict = "within noise" if self.within_noise else (
            f"{s:.2f}x faster" if s > 1 else f"{1 / s:.2f}x slower")
        return (f"{self.name}: base {b:,.3g} {self.unit}, patched {p:,.3g} {self.unit}: "
                f"{verdict} (speed ratio {s:.2f}, rounds {lo:.2f}..{hi:.2f}, n={len(r)})"
                + (f"; {self.note}" if self.note else ""))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "base": self.base,
                "patched": self.patched, "ratio": self.ratio, "speedup": self.speedup(),
                "within_noise": self.within_noise, "error": self.error,
                "note": self.note, "base_status": self.base_status,
                "patched_status": self.patched_status}


def _order(rnd: int, base: QemuBuild, patched: QemuBuild) -> list[tuple[str, QemuBuild]]:
    """Base first in even rounds, patched first in odd ones: a load that
    drifts within a round does not favour one side."""
    pair = [("base", base), ("patched", patched)]
    return pair if rnd % 2 == 0 else pair[::-1]


def _data(base: QemuBuild, patched: QemuBuild, rounds: int, workdir: Path,
          progress: Callable[[str], None]) -> list[Comparison]:
    image, content = data.make_image(workdir)
    comps = {c: Comparison(f"{d} {m} {k} KiB", "MiB/s", True) for c in DATA_CELLS
             for d, m, k in [c]}
    try:
        for rnd in range(rounds):
            for side, b in _order(rnd, base, patched):
                progress(f"bench data round {rnd + 1}/{rounds} {side}")
                cells = data.bench_build(b, image, content, DATA_CELLS, 1, 256 * 1024)
                for c in DATA_CELLS:
                    cell = cells[c]
                    comp = comps[c]
                    if cell.errors or cell.mismatches:
                        comp.note = f"{side}: " + (
                            cell.errors or [f"{cell.mismatches} data mismatches"])[0]
                    (comp.base if side == "base" else comp.patched).extend(cell.mibps)
    finally:
        image.unlink(missing_ok=True)
    return list(comps.values())


def _erase(base: QemuBuild, patched: QemuBuild, rounds: int, workdir: Path,
           progress: Callable[[str], None]) -> Comparison:
    mark = random.Random(3).randbytes(erase.MARK)
    comp = Comparison(f"erase {ERASE_CASE.name}", "s", False)
    image = erase.make_image(workdir, ERASE_CASE, "raw", mark)
    try:
        for rnd in range(rounds):
            for side, b in _order(rnd, base, patched):
                progress(f"bench erase round {rnd + 1}/{rounds} {side}")
                o = erase.erase_once(b, image, "raw", ERASE_CASE, None, 60.0, mark)
                if not o.finished or o.error:
                    comp.error = o.error or "over the 60 s limit"
                    return comp
                if o.erased != "yes":
                    comp.note = f"{side}'s erase did not erase the range: {o.erased}"
                (comp.base if side == "base" else comp.patched).append(o.seconds)
    finally:
        image.unlink(missing_ok=True)
    return comp


def compare(base: QemuBuild, patched: QemuBuild, rounds: int = 5,
            progress: Callable[[str], None] = lambda s: None) -> list[Comparison]:
    """Data transfers and an erase on both builds, ``rounds`` interleaved rounds."""
    with tempfile.TemporaryDirectory(prefix="sdqtest-review-bench-") as tmp:
        work = Path(tmp)
        out = _data(base, patched, rounds, work, progress)
        out.append(_erase(base, patched, rounds, work, progress))
    return out



#: The statuses of the guest's verdict figures (its end-to-end integrity checks).
VERDICTS = frozenset({"yes", "NO"})


def guest_options() -> bench_guest.Options:
    """The guest benchmark in a review: the 128 KiB fio table (short jobs)
    and a 64 MiB erase; no block-size sweep, no qtest figure."""
    return bench_guest.Options(runtime=5, sizes=(), erase_mib=64, fio_mib=64,
                               erase_limit=120.0, qtest=False)


def guest(base: QemuBuild, patched: QemuBuild, rounds: int = 1,
          progress: Callable[[str], None] = lambda s: None) -> list[Comparison]:
    """``sdqtest bench guest`` (:mod:`harness.bench.guest`, a Linux guest
    running fio on the card) on both builds, in alternate rounds: one
    comparison per fio job and per erase setting."""
    opts = guest_options()
    comps: dict[object, Comparison] = {}
    with tempfile.TemporaryDirectory(prefix="sdqtest-review-guest-") as tmp:
        for rnd in range(rounds):
            for side, build in _order(rnd, base, patched):
                progress(f"guest benchmark, round {rnd + 1}/{rounds}: {side}")
                res = bench_guest.run([build], opts, workdir=Path(tmp), log=lambda s: None)
                for f in res.figures:
                    key = (f.table, tuple(sorted((k, v) for k, v in f.labels.items()
                                                 if k != "accel")))
                    name = f"{f.table} " + " ".join(f"{k}={v}" for k, v in key[1])
                    c = comps.setdefault(key, Comparison(name, f.unit, f.higher_is_better))
                    if not f.samples and f.status in VERDICTS:
                        (c.base_status if side == "base" else c.patched_status).append(f.status)
                        continue
                    if not f.samples:
                        c.error = c.error or f"{side}: {f.status}"
                        continue
                    (c.base if side == "base" else c.patched).append(statistics.median(f.samples))
    return list(comps.values())


def load() -> str:
    """The 1-minute load average, for the figures' context."""
    return f"{os.getloadavg()[0]:.1f}"
