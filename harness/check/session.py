"""A check session: a typed request in, an outcome out.

:class:`CheckRequest` says what to check (the selection, the builds, the
boards, the shard, the lockstep mode, where reproducers go); :func:`plan`
turns it into the run specs (every build's inputs checked first), and
:func:`run` runs them: the scenario runs through the worker pools, the
compat matrix and the realize cases beside them.  The :class:`CheckOutcome`
holds each scenario result with the :class:`RunSpec` it ran (objects, not
names), the side phases' verdicts, the notes, what the pools did and the
verdict.  ``sdqtest check`` and the tools that check a build of their own
(bisect, bugs) call it in-process; JSON and JUnit are written at the edge,
by the command.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import harness.scenarios as scenarios
from harness.check import (
    boards,
    compat_matrix,
    explore_shrink,
    inputs,
    parallel,
    realize,
    schedule,
    shard,
    verdict,
    wall,
)
from harness.check import (
    plan as machine_plan,
)
from harness.check.runner import OPTIMISTIC, Result, UserImage
from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES
from harness.check.testbench import RunSpec
from harness.errors import SdqtestError, UsageError
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import PoolStats
from harness.qemu.selection import names_a_build, select_board_builds, select_builds
from harness.scenarios import Scenario

#: A status line (``""`` clears it).
Progress = Callable[[str], None]


def _quiet(text: str) -> None:
    """No status line."""


def names(values: Iterable[str] | None) -> tuple[str, ...] | None:
    """``a,b`` and ``c`` as ``("a", "b", "c")``: a repeatable option that
    also takes comma-separated lists; None when nothing is given."""
    got = tuple(n for v in values or () for n in v.split(",") if n)
    return got or None


@dataclass(frozen=True)
class CheckRequest:
    """What one check runs (``sdqtest check``'s options, typed)."""

    #: build names or binary paths (None: ``$QTEST_QEMU_BINARY``, else every installed build)
    qemu: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None
    scenarios: tuple[str, ...] | None = None
    #: machine types (None: each scenario's own, per build)
    machines: tuple[str, ...] | None = None
    #: ``--board`` names (``all``, comma lists); None: the default check's boards, if any
    boards: tuple[str, ...] | None = None
    no_boards: bool = False
    #: a user's card image the scenarios run on (never written)
    image: str | None = None
    strict: bool = False
    #: shard K of N (K from 1)
    shard: tuple[int, int] = (1, 1)
    #: worker processes (0: one per core)
    jobs: int = 0
    reuse: bool = True
    lockstep: str = OPTIMISTIC
    report_dir: Path = Path("reports")
    allow_skips: bool = False
    #: distinct differences a run records before it stops (1: first only)
    max_differences: int = DEFAULT_MAX_DIFFERENCES
    #: explore divergences the check's shrink phase cuts to a short input
    #: after the runs (:mod:`harness.check.explore_shrink`); 0: none
    shrink: int = 0


@dataclass
class Boards:
    """The board runs of a check: ARM builds, board names, scenarios."""

    builds: list[QemuBuild] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)
    #: why the default check runs no board (the ARM builds could not be had)
    note: str = ""
    #: each board runs only the scenarios of its bus (SDHCI or SPI): the
    #: default check's boards, and ``--board`` with no scenario chosen (no
    #: run is made only to be skipped for its bus)
    paired: bool = False
    #: the default check's boards with nothing chosen: a board of
    #: ``boards.DEFAULT_GROUPS`` runs only those groups
    default: bool = False


@dataclass
class CheckPlan:
    """A request made concrete: the scenarios, builds, boards and run specs."""

    request: CheckRequest
    scenarios: list[Scenario]
    builds: list[QemuBuild]
    boards: Boards
    #: the realize group is asked for (its cases run beside the compat matrix)
    realize: bool
    image: UserImage | None
    jobs: int
    #: this shard's run specs, and how many the whole check has
    runs: list[RunSpec]
    total: int
    #: the compat matrix falls in this shard (and there are x86 builds)
    matrix_here: bool

    @property
    def every_build(self) -> list[QemuBuild]:
        """The x86 builds and the boards' ARM builds."""
        return self.builds + self.boards.builds

    @property
    def want_matrix(self) -> bool:
        rq = self.request
        return self.matrix_here and not rq.scenarios and (not rq.groups or "compat" in rq.groups)

    @property
    def want_realize(self) -> bool:
        k, n = self.request.shard
        return bool(self.realize and self.builds and shard.shard_of(realize.GROUP, n) == k - 1)


@dataclass(frozen=True)
class RunResult:
    """One scenario run: its spec (build, scenario, machine) and its result."""

    spec: RunSpec
    result: Result


@dataclass
class CheckOutcome:
    """What a check found."""

    plan: CheckPlan
    ran: list[RunResult]
    #: the compat matrix's and the realize cases' verdicts
    side: list[Result]
    notes: list[str]
    stats: PoolStats
    elapsed: float
    verdict: verdict.Verdict
    #: The traceback of the exception of sdqtest that stopped the check
    #: before every run was done ("" when it ran to the end): :attr:`ran`
    #: holds the runs that finished, the verdict is 70.
    aborted: str = ""
    #: the shrink phase's explore divergences (:mod:`harness.check.explore_shrink`)
    shrunk: list[explore_shrink.Shrunk | explore_shrink.NotShrunk] = field(
        default_factory=list)

    @property
    def results(self) -> list[Result]:
        """Every result: the scenario runs', then the side phases'."""
        return [r.result for r in self.ran] + self.side


def select_scenarios(request: CheckRequest) -> tuple[list[Scenario], bool]:
    """The scenarios the request selects, and whether the realize group is asked for."""
    rq = request
    realize_asked = not rq.scenarios and (not rq.groups or realize.GROUP in rq.groups)
    groups = [g for g in rq.groups if g != realize.GROUP] if rq.groups else None
    if rq.groups and not groups:
        return [], realize_asked
    try:
        return list(scenarios.select(groups, list(rq.scenarios) if rq.scenarios else None)), \
            realize_asked
    except KeyError as e:
        raise UsageError(str(e.args[0])) from e


def board_selection(request: CheckRequest, selected: list[Scenario]) -> Boards:
    """``boards``: the boards named, on the ARM builds, the whole selection.
    By default (no ``qemu``, ``$QTEST_QEMU_BINARY``, ``machines``, ``image``,
    ``strict`` or ``no_boards``): the modelled boards on every installed ARM
    build (installed first), with :func:`harness.check.boards.default_scenarios`."""
    rq = request
    chosen = bool(rq.groups or rq.scenarios)
    if rq.boards is not None:
        try:
            named = boards.board_names(list(rq.boards))
        except KeyError as e:
            raise UsageError(str(e.args[0])) from e
        return Boards(select_board_builds(_specs(rq.qemu)), named,
                      selected if chosen else boards.applicable(selected, named),
                      paired=not chosen)
    if rq.no_boards or names_a_build(_specs(rq.qemu)) or rq.machines or rq.image or rq.strict:
        return Boards()
    try:
        arm = select_board_builds(None)
    except SdqtestError as e:  # the boards are extra: the PC check still runs
        return Boards(note=f"boards not run: no ARM build ({e}); --no-boards says so quietly")
    return Boards(arm, list(boards.DEFAULT_BOARDS), boards.default_scenarios(selected, chosen),
                  paired=True, default=not chosen)


def _specs(qemu: tuple[str, ...] | None) -> list[str] | None:
    return list(qemu) if qemu else None


def _run_specs(rq: CheckRequest, builds: list[QemuBuild], selected: list[Scenario],
               bd: Boards) -> tuple[list[RunSpec], int]:
    """The run specs of the request's shard, and how many there are in all."""
    machines = list(rq.machines) if rq.machines else None
    runs = [RunSpec(b, sc, m) for b in builds for sc in selected
            for m in (machines or machine_plan.machines_for(b, sc))]
    runs += [RunSpec(b, sc, m) for b in bd.builds for sc in bd.scenarios
             for m in (machines or boards.machines_for(b, bd.names))
             if (not bd.paired or boards.on_its_bus(sc, m))
             and (not bd.default or boards.in_default(sc, m))]
    k, n = rq.shard
    return shard.take_shard(runs, lambda r: f"{r.scenario.name}@{r.machine}", k, n), len(runs)


def plan(request: CheckRequest) -> CheckPlan:
    """The request's scenarios, builds and run specs, each build's inputs
    checked (an :class:`~harness.check.inputs.InputError` is a usage error)."""
    rq = request
    selected, realize_asked = select_scenarios(rq)
    bd = board_selection(rq, selected)
    builds = [] if rq.boards is not None else select_builds(_specs(rq.qemu))
    for b in builds:
        inputs.check_build(b)
    for b in builds + bd.builds:
        for m in rq.machines or ():
            inputs.check_machine(b, m)
    wall.CLOCK.mark("selecting the runs")
    image = inputs.user_image(rq.image, builds + bd.builds) if rq.image else None
    runs, total = _run_specs(rq, builds, selected, bd)
    k, n = rq.shard
    return CheckPlan(rq, selected, builds, bd, realize_asked, image,
                     rq.jobs or parallel.default_jobs(), runs, total,
                     shard.shard_of("compat-matrix", n) == k - 1 and bool(builds))


def _scenario_runs(p: CheckPlan, progress: Progress, done: dict[int, Result]
                   ) -> tuple[list[Result], PoolStats, float]:
    """The runs' results, what the pools did and the seconds they took, the
    longest first by the last check's seconds, which are then kept."""
    runs, rq = p.runs, p.request
    t0 = time.monotonic()
    known = schedule.load_costs()
    results, stats = parallel.run_all(
        runs, parallel.SharedOptions(report_dir=rq.report_dir, image=p.image, reuse=rq.reuse,
                               lockstep=rq.lockstep, max_differences=rq.max_differences),
        p.jobs, progress=lambda done, r: progress(
            f"[{done}/{len(runs)}] {r.build.name} {r.machine} {r.scenario.name}"),
        cost=[schedule.estimate(r, known) for r in runs], on_result=done.__setitem__)
    elapsed = time.monotonic() - t0
    if not p.image:
        schedule.save_costs({schedule.cost_key(r): res.seconds
                             for r, res in zip(runs, results, strict=True)})
    return results, stats, elapsed


def side_phases(builds: list[QemuBuild], jobs: int, matrix: bool, realize_cases: bool,
                progress: Progress | None = None) -> tuple[list[Result], list[Any]]:
    """The compat matrix's verdicts (if ``matrix``) and the realize cases'
    (if ``realize_cases``), and the matrix's cells, on ``jobs`` workers."""
    results: list[Result] = []
    cells: list[Any] = []
    if matrix:
        results, cells = compat_matrix.check_verdicts(builds, jobs, progress=progress)
        if progress:
            progress("")
    if realize_cases:
        results += realize.check_verdicts(builds, jobs, progress=progress)
    return results, cells


def run(request: CheckRequest | CheckPlan, progress: Progress = _quiet) -> CheckOutcome:
    """Run a check (not strict mode: :mod:`harness.check.strict`): the
    scenario runs, and the compat matrix and the realize cases (a QEMU
    launched per item) beside them, in a process of their own."""
    p = request if isinstance(request, CheckPlan) else plan(request)
    matrix, realize_cases = p.want_matrix, p.want_realize
    side = (parallel.Beside(side_phases, p.builds, p.jobs, matrix, realize_cases)
            if p.runs and (matrix or realize_cases) else None)
    wall.CLOCK.mark("the scenario runs", beside_jobs=parallel.launch_jobs(p.jobs))
    done: dict[int, Result] = {}
    t0 = time.monotonic()
    try:
        results, stats, elapsed = _scenario_runs(p, progress, done)
    except Exception as e:  # noqa: BLE001 - a bug of sdqtest: the runs done are kept
        if side is not None:
            side.cancel()
        progress("")
        return aborted(p, done, e, time.monotonic() - t0)
    except BaseException:
        if side is not None:
            side.cancel()
        raise
    wall.CLOCK.mark("compat matrix and realize cases, after the runs")
    try:
        if side is not None:
            progress("compat matrix and realize cases, beside the runs: finishing")
            got, cells = side.result()
        else:
            got, cells = side_phases(p.builds, parallel.launch_jobs(p.jobs), matrix,
                                     realize_cases, progress)
    except Exception as e:  # noqa: BLE001 - a bug of sdqtest: every run is kept
        progress("")
        return aborted(p, dict(enumerate(results)), e, elapsed)
    progress("")
    ran = [RunResult(s, r) for s, r in zip(p.runs, results, strict=True)]
    notes = compat_matrix.unverified_notes(p.every_build)  # every run, whatever is selected
    notes += boards.not_run(p.boards.builds, p.boards.names)
    notes += [p.boards.note] if p.boards.note else []
    if matrix:
        notes += compat_matrix.default_notes(p.builds, cells)
    v = verdict.judge(results + got, allow_skips=p.request.allow_skips)
    shrunk = explore_shrink.phase([(r.spec, r.result) for r in ran], p.request.report_dir,
                                  p.request.shrink, progress) if p.request.shrink else []
    return CheckOutcome(p, ran, got, notes, stats, elapsed, v, shrunk=shrunk)


def aborted(p: CheckPlan, done: dict[int, Result], exc: Exception, elapsed: float
            ) -> CheckOutcome:
    """The outcome of a check that an exception of sdqtest stopped: the
    runs that finished before it, verdict 70, the traceback kept."""
    ran = [RunResult(p.runs[i], done[i]) for i in sorted(done)]
    first = (str(exc).splitlines() or [""])[0][:200]
    why = (f"the check stopped after {len(ran)} of {len(p.runs)} runs: "
           f"{type(exc).__name__}" + (f": {first}" if first else ""))
    return CheckOutcome(p, ran, [], [why], PoolStats(), elapsed,
                        verdict.Verdict(verdict.INTERNAL, [why]),
                        aborted="".join(traceback.format_exception(exc)))


def lockstep_note(results: Sequence[Result]) -> str:
    """``; optimistic lockstep N, fell back to step by step M`` (or ""), and
    how many went on past differences optimistically (``resync``)."""
    n = sum(r.lockstep == "optimistic" for r in results)
    back = sum(r.lockstep == "fallback" for r in results)
    resync = sum(r.lockstep == "resync" for r in results)
    return (f"; optimistic lockstep {n}"
            + (f", resynchronised past differences {resync}" if resync else "")
            + f", fell back to step by step {back}") if n + back + resync else ""


def summary(outcome: CheckOutcome, counters: bool = True) -> str:
    """The check's figures: runs, seconds, shard; with ``counters`` (the
    check's ``--verbose`` or ``--profile``) also its own workings: runs a
    second, workers, QEMU launches and reuses, lockstep modes."""
    p, o = outcome.plan, outcome
    runs, k, n = len(p.runs), *p.request.shard
    if o.aborted:
        return (f"{len(o.ran)} of {runs} scenario runs done in {o.elapsed:.1f} s, then the "
                "check stopped on an internal error of sdqtest")
    inner = (f" ({runs / max(o.elapsed, 1e-9):.1f}/s) on {min(p.jobs, max(runs, 1))} workers; "
             f"QEMU launched {o.stats.launched} times, reused {o.stats.reused} times"
             + lockstep_note(o.results)) if counters else ""
    return (f"{runs} scenario runs in {o.elapsed:.1f} s" + inner
            + (f"; shard {k}/{n}: {runs} of {p.total} runs"
               + ("" if p.matrix_here else ", compat matrix in another shard") if n > 1 else ""))


def build_identities(builds: Sequence[QemuBuild], notes: Sequence[str]) -> list[dict[str, Any]]:
    """Each build as the JSON report names it, with its own notes."""
    return [{"name": b.name, "binary": str(b.binary), "version": b.version,
             "package": b.profile.package, "qtest_accel": b.profile.has_qtest_accel,
             "notes": [n for n in notes if n.startswith(f"[{b.name}] ")]}
            for b in builds]
