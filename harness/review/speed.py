"""Speed of base against patched: the same requests, rounds interleaved.

``bench data`` cells (:func:`harness.bench.data.bench_build`, one round per
call) and ``bench erase`` cases (:func:`harness.bench.erase.erase_once`) run
base, patched, base, patched...: a load change on the shared machine hits
both alike.  Each round gives a ratio patched/base; the median ratio and the
lowest and highest are reported, and a difference whose ratios straddle 1
(or lie within :data:`NOISE` of it) is "within noise".

A benchmark checks its own result (the data read back, the erased range);
a check that fails on one side is kept in :attr:`Comparison.failed` and
is a finding of the review (harm: data), with a reproducer: for the erase,
a qtest trace of the erase and of the read that finds the old data
(:func:`erase_reproducer`).
"""

from __future__ import annotations

import os
import random
import shlex
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench import data, erase
from harness.bench import guest as bench_guest
from harness.driver.host import HostDriver
from harness.machine import CardImage, Machine, reproducer_header
from harness.qemu.argv import shell_line
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget

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
    #: the benchmark's own check of the result, failed: side -> what it found
    failed: dict[str, str] = field(default_factory=dict)
    #: what shows a failed check again (a script, a command line)
    reproducers: list[str] = field(default_factory=list)

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
                "patched_status": self.patched_status, "failed": self.failed,
                "reproducers": self.reproducers}


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
                        what = (cell.errors or [f"{cell.mismatches} data mismatches"])[0]
                        comp.note = f"{side}: {what}"
                        comp.failed.setdefault(side, what)
                        comp.reproducers = [f"sdqtest bench data --qemu {b.binary} --directions "
                                            f"{c[0]} --modes {c[1]} --sizes {c[2]}"]
                    (comp.base if side == "base" else comp.patched).extend(cell.mibps)
    finally:
        image.unlink(missing_ok=True)
    return list(comps.values())


def _mark() -> bytes:
    """The data the erase benchmark writes around the range before erasing."""
    return random.Random(3).randbytes(erase.MARK)


def _erase(base: QemuBuild, patched: QemuBuild, rounds: int, workdir: Path,
           progress: Callable[[str], None]) -> Comparison:
    mark = _mark()
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
                    comp.failed.setdefault(side, f"the erase did not erase the range: "
                                           f"{o.erased.removeprefix('NO: ')}")
                (comp.base if side == "base" else comp.patched).append(o.seconds)
    finally:
        image.unlink(missing_ok=True)
    return comp


def compare(base: QemuBuild, patched: QemuBuild, rounds: int = 5,
            progress: Callable[[str], None] = lambda s: None,
            repro_dir: Path | None = None) -> list[Comparison]:
    """Data transfers and an erase on both builds, ``rounds`` interleaved
    rounds; an erase check that fails on patched gets a reproducer in
    ``repro_dir``."""
    with tempfile.TemporaryDirectory(prefix="sdqtest-review-bench-") as tmp:
        work = Path(tmp)
        out = _data(base, patched, rounds, work, progress)
        out.append(_erase(base, patched, rounds, work, progress))
    comp = out[-1]
    if "patched" in comp.failed and repro_dir is not None:
        progress("bench erase: recording a reproducer")
        script, found = erase_reproducer(patched, repro_dir)
        comp.reproducers = [script] + ([] if found else [
            "(the recorded run read the range erased: the failure is not every time)"])
    return out


def erase_reproducer(build: QemuBuild, out_dir: Path) -> tuple[str, str]:
    """The erase benchmark's case once more on ``build``, recorded: a card
    image (sparse, kept in ``out_dir``), then ``.qtest`` and ``.sh`` files
    that replay the erase and the read of the range's last block.  Returns
    the script and what that read found ("" when it reads erased)."""
    image = erase.make_image(out_dir, ERASE_CASE, "raw", _mark())
    last = ERASE_CASE.length // erase.BLOCK - 1
    with QemuTarget(build.binary, Machine(image=CardImage(image, format="raw")),
                    name=build.name, timeout=60.0) as t:
        d = HostDriver(t)
        d.setup()
        d.init_card()
        d.erase(0, last)
        r = d.read_blocks(last, 1)
        found = "" if not r.error and r.data == b"\xff" * erase.BLOCK else \
            f"block {last} reads {(r.data or b'')[:4]!r}"
        stem = out_dir / f"erase-{ERASE_CASE.length >> 20}m-{build.name}"
        what = (f"sdqtest review: the erase benchmark's case: CMD32/33/38 erase blocks 0..{last},"
                f" then block {last} read back (PIO): {found or 'reads erased (0xff)'}")
        trace = stem.with_suffix(".qtest")
        trace.write_text(reproducer_header(t.machine, what) + "\n".join(t.trace) + "\n")
        script = stem.with_suffix(".sh")
        script.write_text(f"#!/bin/sh\n# {what}\n# the last answers are the block's data\n"
                          f"grep -v '^#' {shlex.quote(str(trace))} | exec timeout -k 1 "
                          f"\"${{REPLAY_SECONDS:-10}}\" {shell_line(t.replay_argv())}\n")
        script.chmod(0o755)
    return str(script), found


def failure(build: QemuBuild, name: str) -> str:
    """What the benchmark ``name`` (a :class:`Comparison`'s) finds on
    ``build`` in one round, its own check failed; "" when it passes."""
    if name == f"erase {ERASE_CASE.name}":
        return erase_failure(build)
    cell = next((c for c in DATA_CELLS if f"{c[0]} {c[1]} {c[2]} KiB" == name), None)
    if cell is None:
        return ""
    with tempfile.TemporaryDirectory(prefix="sdqtest-review-bench-") as tmp:
        image, content = data.make_image(Path(tmp))
        got = data.bench_build(build, image, content, (cell,), 1, 256 * 1024)[cell]
        image.unlink(missing_ok=True)
    return (got.errors or [f"{got.mismatches} data mismatches"])[0] \
        if got.errors or got.mismatches else ""


def erase_failure(build: QemuBuild) -> str:
    """What the erase benchmark's own check finds on ``build`` (one erase;
    "" when the range reads erased or the erase did not finish)."""
    with tempfile.TemporaryDirectory(prefix="sdqtest-review-erase-") as tmp:
        image = erase.make_image(Path(tmp), ERASE_CASE, "raw", _mark())
        o = erase.erase_once(build, image, "raw", ERASE_CASE, None, 60.0, _mark())
    return "" if o.error or not o.finished or o.erased == "yes" else \
        f"the erase did not erase the range: {o.erased.removeprefix('NO: ')}"



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
