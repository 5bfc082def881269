"""``sdqtest bench check``: scenarios per second through ``check``, each
QEMU launched afresh against reused (reset) processes, side by side.

Both ways run the same scenario runs in the same process with the same
worker count, one after the other, and the load average of the machine is
printed before and after: other work on the cores shows in the figures.
Nothing is asserted; a run whose status differs between the two ways is
named (it would be a reuse bug, or a flaky scenario).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.check import parallel
from harness.table import print_table


@dataclass
class Measure:
    """One way of running: its label, workers, wall time and pool figures."""

    label: str
    jobs: int
    runs: int
    seconds: float
    launched: int
    reused: int
    statuses: list[str]

    @property
    def rate(self) -> float:
        return self.runs / self.seconds if self.seconds > 0 else 0.0


def measure(runs: Sequence[parallel.Run], jobs: Sequence[int],
            progress: Callable[[str], None] = lambda text: None) -> list[Measure]:
    """Time ``runs`` without and with reuse for each worker count."""
    out: list[Measure] = []
    for j in jobs:
        for reuse in (False, True):
            label = "reused" if reuse else "fresh launch"
            head = f"{label} -j{j}"

            def tick(done: int, r: parallel.Run, head: str = head) -> None:
                progress(f"{head} [{done}/{len(runs)}] {r.build.name} {r.scenario}")

            t0 = time.monotonic()
            results, stats = parallel.run_all(runs, parallel.Options(reuse=reuse), j,
                                              progress=tick)
            out.append(Measure(label, j, len(runs), time.monotonic() - t0, stats.launched,
                               stats.reused, [r.status for r in results]))
    return out


def report(ms: list[Measure], runs: Sequence[parallel.Run], load_before: tuple[float, ...],
           load_after: tuple[float, ...]) -> list[str]:
    """The table and notes, as lines."""
    import io

    buf = io.StringIO()
    rows = [[m.label, str(m.jobs), str(m.runs), f"{m.seconds:.1f}", f"{m.rate:.1f}",
             str(m.launched), str(m.reused)] for m in ms]
    print_table(["QEMU", "workers", "runs", "seconds", "runs/s", "launched", "reused"],
                rows, buf)
    lines = buf.getvalue().splitlines()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines.append(f"{cores} cores; load average before {load_before[0]:.2f}, after "
                 f"{load_after[0]:.2f} (1 min)")
    base = ms[0].statuses if ms else []
    for m in ms[1:]:
        for r, a, b in zip(runs, base, m.statuses, strict=True):
            if a != b:
                lines.append(f"status differs: {r.build.name} {r.machine} {r.scenario}: "
                             f"{ms[0].label} {a}, {m.label} -j{m.jobs} {b}")
    return lines


def equivalence(runs: Sequence[parallel.Run],
                progress: Callable[[str], None] = lambda text: None) -> list[str]:
    """Run each of ``runs`` on a fresh QEMU and on a reused one (the pool
    having served the runs before it) and name each whose lockstep history
    or qtest trace differs (:mod:`harness.check.equivalence`); one process."""
    from harness.check import runner
    from harness.check.equivalence import first_difference
    from harness.qemu.pool import QemuPool
    from harness.scenarios import all_scenarios

    out: list[str] = []
    with QemuPool() as pool:
        for i, r in enumerate(runs):
            progress(f"equivalence [{i + 1}/{len(runs)}] {r.build.name} {r.machine} {r.scenario}")
            sc = all_scenarios()[r.scenario]
            fresh = runner.run(r.build, sc, r.machine, keep=True)
            reused = runner.run(r.build, sc, r.machine, keep=True, pool=pool)
            why = first_difference(fresh, reused)
            if why:
                out.append(f"{r.build.name} {r.machine} {r.scenario}: {why}")
        out.append(f"{len(runs)} runs compared: {len(out)} differ; QEMU launched "
                   f"{pool.stats.launched} times, reused {pool.stats.reused} times"
                   + "".join(f"\n  fell back: {f}" for f in pool.stats.fallbacks))
    return out
