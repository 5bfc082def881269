"""``sdqtest bench check``: scenarios per second through ``check``, step
by step against optimistic lockstep (:mod:`harness.check.optimistic`) on
reused QEMUs, and with ``--fresh`` each QEMU launched afresh too, side by
side.

Every way runs the same scenario runs in the same process with the same
worker count, one after the other, and the load average of the machine is
printed before and after: other work on the cores shows in the figures.
Nothing is asserted; the ratio of each way to the first is printed, and so
are the optimistic runs that fell back to step by step.  A run whose status
differs between two ways is named (it would be a bug, or a flaky scenario).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from harness.check import parallel
from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES
from harness.check.testbench import RunSpec
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
    #: Runs that went optimistic, and that fell back to step by step (why).
    optimistic: int = 0
    fallbacks: list[str] = field(default_factory=list)
    #: CPU seconds of this process and its workers, and of the QEMUs they
    #: ran (every process waited for by the end: ``getrusage``).
    cpu_harness: float = 0.0
    cpu_qemu: float = 0.0
    #: Distinct divergences (signatures) the runs found.
    findings: int = 0

    @property
    def rate(self) -> float:
        return self.runs / self.seconds if self.seconds > 0 else 0.0


#: The ways :func:`measure` runs, by name: (label, reuse, lockstep mode,
#: distinct differences a run records: 1 is ``--first-only``).
WAYS: dict[str, tuple[str, bool, str, int]] = {
    "fresh": ("fresh launch, step", False, "step", DEFAULT_MAX_DIFFERENCES),
    "step": ("reused, step by step", True, "step", DEFAULT_MAX_DIFFERENCES),
    "optimistic": ("reused, optimistic", True, "optimistic", DEFAULT_MAX_DIFFERENCES),
    "first-only": ("reused, optimistic, first only", True, "optimistic", 1),
}


def measure(runs: Sequence[RunSpec], jobs: Sequence[int],
            progress: Callable[[str], None] = lambda text: None,
            ways: Sequence[str] = ("step", "optimistic")) -> list[Measure]:
    """Time ``runs`` each of ``ways`` (:data:`WAYS`) for each worker count."""
    out: list[Measure] = []
    if runs:  # imports, images made: not in the first way's figures
        parallel.run_all(runs[:1], parallel.SharedOptions(), 1)
    for j in jobs:
        for way in ways:
            label, reuse, mode, most = WAYS[way]
            head = f"{label} -j{j}"

            def tick(done: int, r: RunSpec, head: str = head) -> None:
                progress(f"{head} [{done}/{len(runs)}] {r.build.name} {r.scenario.name}")

            t0, c0 = time.monotonic(), _cpu()
            results, stats = parallel.run_all(
                runs, parallel.SharedOptions(reuse=reuse, lockstep=mode, max_differences=most), j,
                progress=tick)
            c1 = _cpu()
            out.append(Measure(
                label, j, len(runs), time.monotonic() - t0, stats.launched, stats.reused,
                [r.status for r in results],
                sum(r.lockstep in ("optimistic", "fallback") for r in results),
                [f"{r.build} {r.machine} {r.scenario}: {r.fallback}"
                 for r in results if r.lockstep == "fallback"],
                c1[0] - c0[0], c1[1] - c0[1],
                len({d.signature for r in results for d in r.differences})))
    return out


def _cpu() -> tuple[float, float]:
    """CPU seconds so far of this process and of its waited-for children
    (``check -j`` workers, and through them or directly, QEMU processes:
    each is waited for as it closes).  Forked workers are harness, not QEMU:
    their own time is in ``RUSAGE_CHILDREN`` too, so the QEMU figure counts
    them when ``-j`` > 1 (said in the report)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def report(ms: list[Measure], runs: Sequence[RunSpec], load_before: tuple[float, ...],
           load_after: tuple[float, ...]) -> list[str]:
    """The table and notes, as lines."""
    import io

    buf = io.StringIO()
    first: dict[int, Measure] = {}
    rows = []
    for m in ms:
        base = first.setdefault(m.jobs, m)
        ratio = m.rate / base.rate if base.rate else 0.0
        cpu, base_cpu = m.cpu_harness + m.cpu_qemu, base.cpu_harness + base.cpu_qemu
        rows.append([m.label, str(m.jobs), str(m.runs), f"{m.seconds:.1f}", f"{m.rate:.1f}",
                     f"{ratio:.2f}x", f"{cpu:.1f}", f"{m.cpu_qemu:.1f}" if m.jobs == 1 else "-",
                     f"{base_cpu / cpu:.2f}x" if cpu else "-", str(m.launched), str(m.reused),
                     f"{len(m.fallbacks)}/{m.optimistic}" if m.optimistic else "-",
                     str(m.findings)])
    print_table(["way", "workers", "runs", "seconds", "runs/s", "vs first", "CPU s",
                 "of it QEMU", "CPU vs first", "launched", "reused", "fell back",
                 "distinct"], rows, buf)
    lines = buf.getvalue().splitlines()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines.append(f"{cores} cores; load average before {load_before[0]:.2f}, after "
                 f"{load_after[0]:.2f} (1 min); CPU s: harness and QEMU processes, user + "
                 "system (QEMU's share shown with one worker)")
    base_statuses = ms[0].statuses if ms else []
    for m in ms[1:]:
        for r, a, b in zip(runs, base_statuses, m.statuses, strict=True):
            if a != b:
                lines.append(f"status differs: {r.build.name} {r.machine} {r.scenario.name}: "
                             f"{ms[0].label} {a}, {m.label} -j{m.jobs} {b}")
    for m in ms:
        lines += [f"  {m.label} -j{m.jobs} fell back: {f}" for f in m.fallbacks[:10]]
        if len(m.fallbacks) > 10:
            lines.append(f"  {m.label} -j{m.jobs}: {len(m.fallbacks) - 10} more fell back")
    return lines


def profile(runs: Sequence[RunSpec], ways: Sequence[str] = ("step", "optimistic"),
            progress: Callable[[str], None] = lambda text: None) -> list[str]:
    """The time of ``runs`` on one worker split by concern
    (:mod:`harness.bench.profile_split`), one column per way; each way is
    run once without the profiler for its wall time, then once under it."""
    from harness.bench import profile_split

    cols: list[tuple[str, float, float, float, dict[str, float]]] = []
    parallel.run_all(runs[:1], parallel.SharedOptions(), 1)  # imports, images: not in the figures
    for way in ways:
        label, reuse, mode, most = WAYS[way]
        opts = parallel.SharedOptions(reuse=reuse, lockstep=mode, max_differences=most)
        progress(f"profile {label}: without the profiler")
        t0, c0 = time.monotonic(), _cpu()
        parallel.run_all(runs, opts, 1)
        c1 = _cpu()
        wall, harness, qemu = time.monotonic() - t0, c1[0] - c0[0], c1[1] - c0[1]
        progress(f"profile {label}: under cProfile")
        _, split = profile_split.profiled(partial(parallel.run_all, runs, opts, 1))
        cols.append((label, wall, harness, qemu, split))
    return profile_split.lines(cols)


def equivalence(runs: Sequence[RunSpec],
                progress: Callable[[str], None] = lambda text: None) -> list[str]:
    """Run each of ``runs`` on a fresh QEMU step by step, on a reused one
    (the pool having served the runs before it) step by step, and on a
    reused one optimistically; name each whose lockstep history or qtest
    trace differs between the first two (:func:`first_difference`), or
    whose history, trace or report differs between the last two
    (:func:`mode_difference`); one process."""
    from harness.check import runner
    from harness.check.equivalence import first_difference, mode_difference
    from harness.qemu.pool import QemuPool

    out: list[str] = []
    optimistic = fell_back = 0
    with QemuPool() as pool:
        for i, r in enumerate(runs):
            progress(f"equivalence [{i + 1}/{len(runs)}] {r.build.name} {r.machine} "
                     f"{r.scenario.name}")
            sc = r.scenario
            fresh = runner.run(r.build, sc, r.machine,
                               runner.RunOptions(keep=True, lockstep="step"))
            step = runner.run(r.build, sc, r.machine,
                              runner.RunOptions(keep=True, pool=pool, lockstep="step"))
            opt = runner.run(r.build, sc, r.machine, runner.RunOptions(keep=True, pool=pool))
            optimistic += opt.lockstep in ("optimistic", "fallback")
            fell_back += opt.lockstep == "fallback"
            why = first_difference(fresh, step)
            if why:
                out.append(f"{r.build.name} {r.machine} {r.scenario.name}: fresh vs reused: {why}")
            why = mode_difference(step, opt)
            if why:
                out.append(f"{r.build.name} {r.machine} {r.scenario.name}: step vs optimistic: "
                           f"{why}")
        out.append(f"{len(runs)} runs compared: {len(out)} differ; {optimistic} ran "
                   f"optimistic, {fell_back} of them fell back to step by step; QEMU launched "
                   f"{pool.stats.launched} times, reused {pool.stats.reused} times"
                   + "".join(f"\n  fell back: {f}" for f in pool.stats.fallbacks))
    return out
