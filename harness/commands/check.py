"""``sdqtest check``: the main job, the scenario library and the compat
matrix, model against QEMU."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.commands.common import board_options, qemu_option, show_progress
from harness.errors import SdqtestError, UsageError
from harness.qemu.selection import names_a_build, select_board_builds, select_builds


def register(sub: Any) -> None:
    """``sdqtest check``."""
    c = sub.add_parser("check", help="the main job: cross-check model and QEMU")
    qemu_option(c)
    c.add_argument("--machine", action="append", metavar="TYPE",
                   help="machine type (repeatable; default q35)")
    c.add_argument("--group", action="append",
                   help="scenario group (repeatable, or comma-separated)")
    c.add_argument("--scenario", action="append", metavar="NAME",
                   help="one scenario by name (repeatable)")
    c.add_argument("--image", metavar="PATH",
                   help="run the scenarios on this card image (raw or qcow2; never written) "
                   "instead of the generated ones")
    c.add_argument("--strict", action="store_true",
                   help="model follows the SD specs: list each spec deviation as a finding")
    c.add_argument("--json", metavar="FILE", help="write every result as JSON")
    c.add_argument("--junit", metavar="FILE", help="write every result as JUnit XML (CI)")
    c.add_argument("--report-dir", default="reports", metavar="DIR",
                   help="where reproducers of divergences go (default: ./reports)")
    c.add_argument("--allow-skips", action="store_true",
                   help="exit 0 even when a build skipped most scenarios (e.g. it has no "
                   "qtest accelerator)")
    board_options(c)
    c.add_argument("--list", action="store_true", help="list the scenarios and exit")
    c.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="worker processes (default: one per core)")
    c.add_argument("--no-reuse", action="store_true",
                   help="launch QEMU afresh for every scenario instead of resetting one")
    c.add_argument("--lockstep", choices=("optimistic", "step"), default="optimistic",
                   help="optimistic (default): run ahead on the model's answers, QEMU "
                   "answering in pipelined batches, any difference run again step by step; "
                   "step: one round trip per operation")
    c.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N (K from 1): a split of the scenario runs by "
                   "a hash of scenario@machine, the same on every machine and build")
    c.add_argument("-v", "--verbose", action="store_true")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The main job: scenario library and compat matrix, model vs QEMU."""
    from pathlib import Path

    import harness.scenarios as scenarios
    from harness.check import (
        boards,
        compat_matrix,
        inputs,
        parallel,
        realize,
        report,
        shard,
        verdict,
    )

    if args.list:
        for sc in scenarios.all_scenarios().values():
            print(f"{sc.group:12} {sc.name:40} {sc.doc}")
        return 0
    selected, builds = selection(args)
    report_dir = Path(args.report_dir)
    user_image = (inputs.user_image(args.image, builds + args.boards.builds)
                  if args.image else None)
    jobs = args.jobs or parallel.default_jobs()
    if args.strict:
        return _check_strict(builds or args.boards.builds, selected,
                             (args.machine or ["q35"])[0], report_dir, jobs)
    k, n = shard.parse_shard(args.shard) if args.shard else (1, 1)
    runs, total = shard_runs(args, builds, selected, k, n)
    run_matrix = shard.shard_of("compat-matrix", n) == k - 1 and bool(builds)
    want_matrix = run_matrix and not args.scenario and (not args.group or "compat" in args.group)
    want_realize = bool(args.realize and builds and shard.shard_of(realize.GROUP, n) == k - 1)
    # The compat matrix and the realize cases (a QEMU launched per item)
    # run beside the scenario runs, in a process of their own.
    side = (parallel.Beside(_side_phases, builds, jobs, want_matrix, want_realize)
            if runs and (want_matrix or want_realize) else None)
    try:
        results, stats, elapsed = _scenario_runs(args, runs, jobs, report_dir, user_image)
    except BaseException:
        if side is not None:
            side.cancel()
        raise
    if side is not None:
        show_progress("compat matrix and realize cases, beside the runs: finishing")
        got, cells = side.result()
    else:
        got, cells = _side_phases(builds, parallel.launch_jobs(jobs), want_matrix,
                                  want_realize, show_progress)
    show_progress("")
    results += got
    every = builds + args.boards.builds
    notes = compat_matrix.unverified_notes(every)  # every run, whatever is selected
    notes += boards.not_run(args.boards.builds, args.boards.names)
    notes += [args.boards.note] if args.boards.note else []
    if want_matrix:
        notes += compat_matrix.default_notes(builds, cells)
    report.print_report(results, sys.stdout, verbose=args.verbose)
    if notes:
        print("\n" + "\n".join(notes))
    print(f"\n{len(runs)} scenario runs in {elapsed:.1f} s ({len(runs) / max(elapsed, 1e-9):.1f}/s)"
          f" on {min(jobs, max(len(runs), 1))} workers; QEMU launched {stats.launched} times, "
          f"reused {stats.reused} times" + _lockstep_note(results)
          + (f"; shard {k}/{n}: {len(runs)} of {total} runs"
             + ("" if run_matrix else ", compat matrix in another shard") if n > 1 else ""))
    for why in stats.fallbacks:
        print(f"  reuse fell back to a fresh launch: {why}")
    _explore_summary(results, every, report_dir)
    _check_files(args, results, every, notes)
    v = verdict.judge(results, allow_skips=args.allow_skips)
    for line in v.why:
        print(f"sdqtest: {line}", file=sys.stderr)
    return v.status


def _scenario_runs(args: argparse.Namespace, runs: list[Any], jobs: int, report_dir: Any,
                   user_image: Any) -> tuple[list[Any], Any, float]:
    """The runs' results, what the pools did and the seconds they took, the
    longest first by the last check's seconds, which are then kept."""
    import time

    from harness.check import parallel, schedule

    t0 = time.monotonic()
    known = schedule.load_costs()
    results, stats = parallel.run_all(
        runs, parallel.Options(report_dir=report_dir, image=user_image,
                               reuse=not args.no_reuse, lockstep=args.lockstep),
        jobs, progress=lambda done, r: show_progress(
            f"[{done}/{len(runs)}] {r.build.name} {r.machine} {r.scenario.name}"),
        cost=[schedule.estimate(r, known) for r in runs])
    elapsed = time.monotonic() - t0
    if not user_image:
        schedule.save_costs({schedule.cost_key(r): res.seconds
                             for r, res in zip(runs, results, strict=True)})
    return results, stats, elapsed


def _side_phases(builds: list[Any], jobs: int, matrix: bool, realize_cases: bool,
                 progress: Any = None) -> tuple[list[Any], list[Any]]:
    """The compat matrix's verdicts (if ``matrix``) and the realize cases'
    (if ``realize_cases``), and the matrix's cells, on ``jobs`` workers."""
    from harness.check import compat_matrix, realize

    results: list[Any] = []
    cells: list[Any] = []
    if matrix:
        results, cells = compat_matrix.check_verdicts(builds, jobs, progress=progress)
        if progress:
            progress("")
    if realize_cases:
        results += realize.check_verdicts(builds, jobs, progress=progress)
    return results, cells


def selection(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """The scenarios and builds ``check`` runs, each build's inputs checked;
    the boards' side in ``args.boards`` (:class:`Boards`)."""
    import harness.scenarios as scenarios
    from harness.check import inputs

    # --group a,b is --group a --group b (and so for --scenario)
    args.group = [g for a in args.group for g in a.split(",") if g] if args.group else None
    args.scenario = [n for a in args.scenario for n in a.split(",") if n] if args.scenario else None
    from harness.check import realize

    # The realize group is not scenarios: its cases run beside the compat matrix.
    args.realize = not args.scenario and (not args.group or realize.GROUP in args.group)
    groups = [g for g in args.group if g != realize.GROUP] if args.group else None
    if args.group and not groups:
        selected: list[Any] = []
    else:
        try:
            selected = list(scenarios.select(groups, args.scenario))
        except KeyError as e:
            raise UsageError(str(e.args[0])) from e
    args.boards = board_selection(args, selected)
    builds = [] if args.board is not None else select_builds(args.qemu)
    for b in builds:  # an InputError is a UsageError: one line, exit 2
        inputs.check_build(b)
    for b in builds + args.boards.builds:
        for m in args.machine or []:
            inputs.check_machine(b, m)
    return selected, builds


@dataclass
class Boards:
    """The board runs of a check: ARM builds, board names, scenarios."""

    builds: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    scenarios: list[Any] = field(default_factory=list)
    #: why the default check runs no board (the ARM builds could not be had)
    note: str = ""
    #: each board runs only the scenarios of its bus (SDHCI or SPI): the
    #: default check's boards, and ``--board`` with no scenario chosen (no
    #: run is made only to be skipped for its bus)
    paired: bool = False


def board_selection(args: argparse.Namespace, selected: list[Any]) -> Boards:
    """``--board``: the boards named, on the ARM builds, the whole selection.
    By default (no ``--qemu``, ``$QTEST_QEMU_BINARY``, ``--machine``,
    ``--image``, ``--strict`` or ``--no-boards``): the modelled boards on every installed
    ARM build (installed first), with :func:`harness.check.boards.default_scenarios`."""
    from harness.check import boards

    if args.board is not None:
        try:
            names = boards.board_names(args.board)
        except KeyError as e:
            raise UsageError(str(e.args[0])) from e
        chosen = bool(args.group or args.scenario)
        return Boards(select_board_builds(args.qemu), names,
                       selected if chosen else boards.applicable(selected, names),
                       paired=not chosen)
    if (args.no_boards or names_a_build(args.qemu) or args.machine or args.image
            or args.strict):
        return Boards()
    try:
        arm = select_board_builds(None)
    except SdqtestError as e:  # the boards are extra: the PC check still runs
        return Boards(note=f"boards not run: no ARM build ({e}); --no-boards says so quietly")
    chosen = bool(args.group or args.scenario)
    return Boards(arm, list(boards.DEFAULT_BOARDS), boards.default_scenarios(selected, chosen),
                   paired=True)


def shard_runs(args: argparse.Namespace, builds: list[Any], selected: list[Any],
                k: int, n: int) -> tuple[list[Any], int]:
    """The run specs of shard ``k`` of ``n``, and how many there are in all."""
    from harness.check import boards, parallel, plan, shard

    runs = [parallel.Run(b, sc, m) for b in builds for sc in selected
            for m in (args.machine or plan.machines_for(b, sc))]
    bd = args.boards
    runs += [parallel.Run(b, sc, m) for b in bd.builds for sc in bd.scenarios
             for m in (args.machine or boards.machines_for(b, bd.names))
             if not bd.paired or boards.on_its_bus(sc, m)]
    total = len(runs)
    return shard.take_shard(runs, lambda r: f"{r.scenario.name}@{r.machine}", k, n), total


def _check_files(args: argparse.Namespace, results: list[Any], builds: list[Any],
                 notes: list[str]) -> None:
    """The JUnit and JSON reports, when asked for."""
    from pathlib import Path

    from harness.check import report

    if args.junit:
        from harness.check import junit

        junit.write(results, Path(args.junit))
        print(f"JUnit report: {args.junit}")
    if args.json:
        report.write_json(results, Path(args.json), [
            {"name": b.name, "binary": str(b.binary), "version": b.version,
             "package": b.profile.package, "qtest_accel": b.profile.has_qtest_accel,
             "notes": [n for n in notes if n.startswith(f"[{b.name}] ")]}
            for b in builds])
        print(f"JSON report: {args.json}")


#: Seconds of scenario time the explore group may take per build (the
#: summary says how much it took; the corpus is fixed, so this is a
#: statement, not a cut-off).
EXPLORE_BUDGET = 30.0
#: Explore divergences shrunk into reproducers per check run.
EXPLORE_SHRINK = 2


def _explore_summary(results: list[Any], builds: list[Any], report_dir: Any) -> None:
    """The explore group's line of the summary; each of its divergences
    (at most :data:`EXPLORE_SHRINK`) shrunk into the fuzzer's reproducers."""
    from pathlib import Path

    from harness.scenarios import explore

    runs = [r for r in results if r.group == explore.GROUP]
    if not runs:
        return
    secs = sum(r.seconds for r in runs)
    per = secs / max(len({r.build for r in runs}), 1)
    print(f"explore group: {len(runs)} runs of the model-driven corpus "
          f"({len(explore.load()['inputs'])} inputs), {secs:.1f} s of scenario time, "
          f"{per:.1f} s per build (budget {EXPLORE_BUDGET:.0f} s per build"
          + ("" if per <= EXPLORE_BUDGET else ", EXCEEDED") + ")")
    bad = [r for r in runs if r.status == "diverge"][:EXPLORE_SHRINK]
    if not bad:
        return
    from harness.fuzz.reproduce import shrink_divergence

    inputs = {e["name"]: e for e in explore.load()["inputs"]}
    corpus = {name: e["ops"] for name, e in inputs.items()}
    by_name = {b.name: b for b in builds}
    for r in bad:
        if "variant" in inputs[r.scenario]:  # the fuzzer's lockstep runs the default machine
            print(f"  {r.build} {r.scenario}: runs on the {inputs[r.scenario]['variant']} "
                  f"machine (device properties), not shrunk: its reproducer is the check's "
                  f"own (sdqtest check --scenario {r.scenario})")
            continue
        show_progress(f"shrinking {r.build} {r.scenario}")
        got = shrink_divergence(by_name[r.build], corpus[r.scenario],
                                Path(report_dir) / "explore-findings")
        show_progress("")
        if got is None:
            print(f"  {r.build} {r.scenario}: did not fail again when re-run alone")
        else:
            print(f"  {r.build} {r.scenario}: shrunk {got.before} -> {got.after} operations "
                  f"({got.runs} runs), {got.signature}\n    reproducers (qtest, sh, C, "
                  f"pytest): {got.directory}")


def _check_strict(builds: list[Any], selected: list[Any], machine: str,
                  report_dir: Any, jobs: int = 1) -> int:
    """Findings: each deviation from the SD specifications a build shows."""
    from harness.check import runner, strict

    print("strict mode: the model follows the SD specifications; each finding is a "
          "place where QEMU does not\n")
    total = 0
    for b in builds:
        rep = strict.findings_for(b, selected, machine, report_dir, progress=show_progress,
                                  jobs=jobs)
        show_progress("")
        print(f"== QEMU {b.name} ({b.version}): {len(rep.findings)} spec deviations found "
              f"by {len(rep.results)} scenarios")
        for f in rep.findings:
            d = f.deviation
            bug = " (QEMU bug: sdqtest bugs)" if d.scope == "qemu-bug" else ""
            print(f"- {d.key} [{d.spec}]{bug}\n    spec: {d.rule}\n    QEMU: {d.qemu}\n"
                  f"    first seen in {f.scenario}: {f.step}\n    reproducer: {f.reproducer}")
            if len(f.scenarios) > 1:
                print(f"    also shown by: {', '.join(f.scenarios[1:])}")
        for u in rep.unexplained:
            r = u.result
            print(f"- unexplained strict divergence in {r.scenario} ({u.why}): {r.reason}")
            if r.divergence and r.divergence.trace_file:
                print(f"    reproducer: {r.divergence.trace_file}")
        errors = [r for r in rep.results if r.status in (runner.ERROR, runner.CRASH)]
        for r in errors:
            print(f"- {r.scenario}: {r.status}: {r.reason}")
        total += len(rep.findings) + len(rep.unexplained) + len(errors)
        print()
    return 1 if total else 0


def _lockstep_note(results: Sequence[Any]) -> str:
    """``; optimistic lockstep N, fell back to step by step M`` (or "")."""
    n = sum(r.lockstep == "optimistic" for r in results)
    back = sum(r.lockstep == "fallback" for r in results)
    return f"; optimistic lockstep {n}, fell back to step by step {back}" if n + back else ""
