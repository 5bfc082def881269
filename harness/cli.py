"""The ``sdqtest`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import QemuError, SdqtestError, UsageError
from harness.qemu.selection import names_a_build, select_board_builds, select_builds
from harness.qemu.session import install_signal_handlers
from harness.table import print_table

#: The name this module gave UsageError before harness.errors existed.
UserError = UsageError


# -- sdqtest qemu ---------------------------------------------------------------------


def cmd_qemu_install(args: argparse.Namespace) -> int:
    from harness.qemu import install, install_arm

    log: Callable[[str], None] = (lambda m: None) if args.quiet else print
    try:
        install_arm.install_all(args.names or ["all"], log=log)
    except install.InstallError as e:
        raise UsageError(str(e)) from e
    return 0


def cmd_qemu_list(args: argparse.Namespace) -> int:
    rows = []
    for b in select_builds(args.qemu, install_missing=False):
        q35 = b.versioned_machines("q35")
        pc = b.versioned_machines("pc")
        rows.append(
            [
                b.name,
                b.version + (f" ({b.profile.package})" if b.profile.package else ""),
                "yes" if b.profile.has_qtest_accel else "NO",
                f"{q35[0][7:]}..{q35[-1][7:]}" if q35 else "-",
                f"{pc[0][10:]}..{pc[-1][10:]}" if pc else "-",
                "yes" if b.has_sdhci_pci else "NO",
                "yes" if b.has_erase_blocks_as_zero else "no",
                str(b.binary),
            ]
        )
    head = ["build", "query-version", "qtest", "pc-q35", "pc-i440fx", "sdhci-pci",
            "erase-blocks-as-zero", "binary"]
    print_table(head, rows)
    if not args.qemu:
        _list_arm_builds()
    return 0


def _list_arm_builds() -> None:
    """The installed ARM builds (``check --board``): version, qtest, the boards."""
    from harness.hwdefs.boards import BOARDS
    from harness.qemu import builds

    rows = []
    for b in builds.selected_arm():
        offered = [x.name for x in BOARDS if b.offers(x.machine)]
        rows.append([b.name, b.version + (f" ({b.profile.package})" if b.profile.package
                                          else ""),
                     "yes" if b.profile.has_qtest_accel else "NO",
                     ", ".join(offered) or "-", str(b.binary)])
    if rows:
        print()
        print_table(["ARM build", "query-version", "qtest", "boards", "binary"], rows)


def cmd_qemu_build(args: argparse.Namespace) -> int:
    """Build a QEMU source tree (Debian's or upstream) out of tree, optionally for gcov."""
    from pathlib import Path

    from harness.bisect import build

    src = Path(args.src).resolve()
    sanitize = tuple(n.strip() for n in (args.sanitize or "").split(",") if n.strip())
    bad = [n for n in sanitize if n not in build.SANITIZERS]
    if bad:
        raise UsageError(f"unknown sanitizer {', '.join(bad)} (address, undefined)")
    suffix = ("-coverage" if args.coverage else "") + ("-arm" if args.arm else "")
    suffix += ("-" + "-".join(build.SANITIZERS[n] for n in sanitize)) if sanitize else ""
    out = Path(args.build_dir).resolve() if args.build_dir else (
        build.bisect_root().parent / "builds" / (build.tree_dir(src).name + suffix))
    builder = build.QemuTreeBuilder(build_dir=out, coverage=args.coverage, sanitize=sanitize,
                                    arm=args.arm)
    missing = builder.prerequisites(src)
    if missing:
        raise UsageError(build.format_missing(missing))
    log_path = out.parent / f"{out.name}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"building {src} in {out} (log: {log_path})")
    with log_path.open("w") as log:
        res = builder.build(src, "HEAD", log, args.timeout)
    if not res.ok or res.binary is None:
        raise UsageError(f"build failed: {res.message} (log: {log_path})")
    print(f"built {res.binary}" + (f" and {out / build.ARM_BINARY}" if args.arm else ""))
    print(f"use it with: sdqtest check --qemu {res.binary}"
          + (f"; sdqtest check --board --qemu {out / build.ARM_BINARY}" if args.arm else ""))
    if args.coverage:
        print(f"measure with: sdqtest coverage {out}")
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    """Run the check (or nothing) on a gcov build and report hw/sd coverage.

    A build with ``qemu-system-aarch64`` beside the x86 binary (``qemu build
    --arm``) shares the ``hw/sd`` objects: the boards' runs (``check --board``
    on it) add to the same counts, and the reachable set then leaves out only
    what no board reaches."""
    import json
    from pathlib import Path

    from harness.check import boards as check_boards
    from harness.check import coverage

    cb = coverage.CoverageBuild(Path(args.build_dir))
    if not cb.binary.is_file():
        raise UsageError(f"{cb.binary} does not exist: build the tree first")
    boards = cb.arm_binary is not None and not args.no_boards
    rc = 0
    if not args.no_run:
        if not args.keep:
            cb.reset()
        os.environ.update(cb.environment())
        runs = [["check", "--qemu", str(cb.binary)]]
        if boards:
            chosen = (",".join(check_boards.DEFAULT_BOARDS) if args.boards == "default"
                      else args.boards)
            names = [chosen] if chosen else []
            runs.append(["check", "--board", *names, "--qemu", str(cb.arm_binary)])
        for run in runs:
            full = [*run, *args.check_args]
            print(f"running: sdqtest {' '.join(full)}")
            rc = max(rc, main(full))
            print()
    cov = cb.measure()
    _print_coverage(cb, cov, args, boards)
    if args.json:
        Path(args.json).write_text(json.dumps(cov.to_json(), indent=1))
        print(f"JSON: {args.json}")
    if args.html:
        index = coverage.write_html(cov, Path(args.html), f"hw/sd coverage: {cb.build_dir}")
        print(f"HTML: {index}")
    return rc


def _print_coverage(cb: Any, cov: Any, args: argparse.Namespace, boards: bool) -> None:
    from harness.check import coverage

    print(f"coverage of {', '.join(cb.roots)} in {cb.build_dir}"
          + (" (x86 and ARM boards):" if boards else ":"))
    print_table(["file", "lines", "%", "branches", "%", "functions", "%"],
                coverage.summary_rows(cov))
    if boards:
        print("\nreachable by sdhci-pci (SD card and eMMC) and every board (functions no "
              "run of this project can reach left out: harness/check/coverage.py OUT_OF_REACH):")
    else:
        print("\nreachable through sdhci-pci with an SD card (functions of other devices "
              "left out: harness/check/coverage.py OUT_OF_REACH):")
    print_table(["file", "lines", "%", "functions left out"],
                coverage.reachable_rows(cov, boards))
    if args.functions is not None:
        print()
        print_table(["file", "line", "function", "calls", "lines", "%"],
                    coverage.function_rows(cov, args.functions or None))
    never = cov.never_executed()
    if never:
        print(f"\nfunctions never executed ({len(never)}):")
        for path, fn in never:
            why = coverage.out_of_reach(path, fn.name, boards)
            print(f"  {path}:{fn.start} {fn.name}" + (f"  (out of reach: {why.reason})"
                                                      if why else ""))


def cmd_bench_qtest(args: argparse.Namespace) -> int:
    from harness.bench import qtest_bench

    for b in select_builds(args.qemu):
        for line in qtest_bench.run(b.name, b.binary, ops=args.ops, repeats=args.repeats).lines():
            print(line)
    return 0


def cmd_bench_check(args: argparse.Namespace) -> int:
    """``check``'s own runs (the same selection: builds, boards, groups),
    each way side by side."""
    from harness.bench import check_bench
    from harness.check import parallel

    args.machine = args.image = args.shard = None
    args.strict = False
    selected, builds = _check_selection(args)
    runs, _total = _check_runs(args, builds, selected, 1, 1)
    if args.equivalence:
        lines = check_bench.equivalence(runs, progress=_progress)
        _progress("")
        print("\n".join(lines))
        return 1 if len(lines) > 1 else 0
    ways = ("fresh", "step", "optimistic") if args.fresh else ("step", "optimistic")
    if args.profile:
        lines = check_bench.profile(runs, ways, progress=_progress)
        _progress("")
        print("\n".join(lines))
        return 0
    jobs = [int(j) for j in args.jobs.split(",")] if args.jobs else [parallel.default_jobs()]
    before = os.getloadavg()
    ms = check_bench.measure(runs, jobs, progress=_progress, ways=ways)
    _progress("")
    for line in check_bench.report(ms, runs, before, os.getloadavg()):
        print(line)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
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
        wall,
    )

    if args.list:
        for sc in scenarios.all_scenarios().values():
            print(f"{sc.group:12} {sc.name:40} {sc.doc}")
        return 0
    clock = wall.start("selecting and probing builds")
    selected, builds = _check_selection(args)
    clock.mark("selecting the runs")
    report_dir = Path(args.report_dir)
    user_image = (inputs.user_image(args.image, builds + args.boards.builds)
                  if args.image else None)
    jobs = args.jobs or parallel.default_jobs()
    if args.strict:
        return _check_strict(builds or args.boards.builds, selected,
                             (args.machine or ["q35"])[0], report_dir, jobs)
    k, n = shard.parse_shard(args.shard) if args.shard else (1, 1)
    runs, total = _check_runs(args, builds, selected, k, n)
    run_matrix = shard.shard_of("compat-matrix", n) == k - 1 and bool(builds)
    want_matrix = run_matrix and not args.scenario and (not args.group or "compat" in args.group)
    want_realize = bool(args.realize and builds and shard.shard_of(realize.GROUP, n) == k - 1)
    # The compat matrix and the realize cases (a QEMU launched per item)
    # run beside the scenario runs, in a process of their own.
    side = (parallel.Beside(_side_phases, builds, jobs, want_matrix, want_realize)
            if runs and (want_matrix or want_realize) else None)
    clock.mark("the scenario runs", beside_jobs=parallel.launch_jobs(jobs))
    try:
        results, stats, elapsed = _scenario_runs(args, runs, jobs, report_dir, user_image)
    except BaseException:
        if side is not None:
            side.cancel()
        raise
    clock.mark("compat matrix and realize cases, after the runs")
    if side is not None:
        _progress("compat matrix and realize cases, beside the runs: finishing")
        got, cells = side.result()
    else:
        got, cells = _side_phases(builds, parallel.launch_jobs(jobs), want_matrix,
                                  want_realize, _progress)
    _progress("")
    clock.mark("report and files")
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
    wall.print_profile(args.profile, clock, every)
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
        jobs, progress=lambda done, r: _progress(
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


def _check_selection(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """The scenarios and builds ``check`` runs, each build's inputs checked;
    the boards' side in ``args.boards`` (:class:`_Boards`)."""
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
    args.boards = _board_selection(args, selected)
    builds = [] if args.board is not None else select_builds(args.qemu)
    for b in builds:  # an InputError is a UsageError: one line, exit 2
        inputs.check_build(b)
    for b in builds + args.boards.builds:
        for m in args.machine or []:
            inputs.check_machine(b, m)
    return selected, builds


@dataclass
class _Boards:
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


def _board_selection(args: argparse.Namespace, selected: list[Any]) -> _Boards:
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
        return _Boards(select_board_builds(args.qemu), names,
                       selected if chosen else boards.applicable(selected, names),
                       paired=not chosen)
    if (args.no_boards or names_a_build(args.qemu) or args.machine or args.image
            or args.strict):
        return _Boards()
    try:
        arm = select_board_builds(None)
    except SdqtestError as e:  # the boards are extra: the PC check still runs
        return _Boards(note=f"boards not run: no ARM build ({e}); --no-boards says so quietly")
    chosen = bool(args.group or args.scenario)
    return _Boards(arm, list(boards.DEFAULT_BOARDS), boards.default_scenarios(selected, chosen),
                   paired=True)


def _check_runs(args: argparse.Namespace, builds: list[Any], selected: list[Any],
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
        _progress(f"shrinking {r.build} {r.scenario}")
        got = shrink_divergence(by_name[r.build], corpus[r.scenario],
                                Path(report_dir) / "explore-findings")
        _progress("")
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
        rep = strict.findings_for(b, selected, machine, report_dir, progress=_progress,
                                  jobs=jobs)
        _progress("")
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


def cmd_compat(args: argparse.Namespace) -> int:
    from harness.check import compat_matrix

    builds = select_builds(args.qemu)
    cells = compat_matrix.matrix(builds, progress=lambda t: _progress(f"compat {t}"))
    _progress("")
    return compat_matrix.print_matrix(builds, cells)


def cmd_migrate(args: argparse.Namespace) -> int:
    """The migration matrix: pairs x machine types x migration points."""
    from pathlib import Path

    from harness.check import inputs, migration

    builds = select_builds(args.qemu)
    for b in builds:
        inputs.check_build(b)
    names = {b.name for b in builds}
    for which in (args.source, args.destination):
        if which is not None and which not in names:
            raise UsageError(f"build {which!r} is not among the selected builds "
                             f"({', '.join(sorted(names))}); add --qemu {which}")
    points = [p for a in args.point for p in a.split(",") if p] if args.point else None
    cells = migration.matrix(builds, source=args.source, destination=args.destination,
                             wanted=args.machine, points=points,
                             same_build=not args.cross_only, report_dir=Path(args.report_dir),
                             keep=args.keep_all, progress=_progress)
    _progress("")
    if not cells:
        raise UsageError("no pair of the selected builds shares the machine types asked for")
    head, rows = migration.table(cells)
    print_table(head, rows)
    print()
    print("\n".join(migration.summary(cells)))
    bad = {c.status for c in cells} - {"agree", "quirk", "skipped"}
    return 1 if bad else 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay qtest traces on each build: refused, crashed, hung, sanitizer
    report or clean; model diff where it can.  Exit status: 3 when QEMU
    crashed, hung or a sanitizer reported on some build, else 1 when the
    model disagreed, else 4 when QEMU refused a command line, else 0."""
    from pathlib import Path

    from harness.check import replay

    paths = [Path(t) for t in args.trace]
    if args.field:
        paths += replay.field_corpus()
    if not paths:
        raise UsageError("no trace given (a path, or --field for the field corpus)")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"trace {path} does not exist")
    extra = args.qemu_args.split() if args.qemu_args else None
    builds = select_builds(args.qemu)
    worst = {"finding": False, "diff": False, "refused": False}
    for path in paths:
        if len(paths) > 1:
            print(f"{path}:")
        for b in builds:
            try:
                pl = replay.plan(path, b.binary, {*b.profile.machine_types, *b.aliases},
                                 machine_type=args.machine, qemu_args=extra,
                                 as_is=args.as_is)
            except replay.ReplayError as e:
                raise UsageError(str(e)) from e
            for note in pl.notes:
                print(f"{b.name}: rewrite: {note}")
            res = replay.replay_qemu(b.binary, pl.trace, pl.machine, pl.devices,
                                     timeout=args.timeout, argv=pl.argv)
            print(f"{b.name}: {res.summary()}")
            if res.verdict == replay.REFUSED:
                worst["refused"] = True
                continue
            if res.finding:
                worst["finding"] = True
                tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-8:]
                if tail:
                    print("  QEMU's stderr, last lines:\n    " + "\n    ".join(tail))
                continue
            if args.no_model:
                continue
            replay.replay_model(res, b.profile, pl.machine)
            if res.model_error:
                worst["diff"] = True
                print(f"  model error: {res.model_error}")
                continue
            if res.model_diffs:
                worst["diff"] = True
                print(f"  model disagrees on {len(res.model_diffs)} reads:")
                for line in res.model_diffs[:20]:
                    print(f"    {line}")
            elif res.model_checked:
                print("  model agrees on every register and memory read"
                      + (f" ({res.model_reason})" if res.model_reason else ""))
            else:
                print(f"  model not run: {res.model_reason}")
            for line in res.model_adopted[:5]:
                print(f"  adopted (a value QEMU leaves undefined or draws at random): {line}")
    if worst["finding"]:
        return 3
    if worst["diff"]:
        return 1
    return 4 if worst["refused"] else 0


def _duration(text: str) -> float:
    """Seconds of ``60``, ``90s``, ``10m`` or ``1h``."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise UsageError(f"bad duration {text!r} (60, 90s, 10m, 1h)") from None


def cmd_fuzz(args: argparse.Namespace) -> int:
    """Differential fuzzing: random inputs on model and QEMU in lockstep."""
    from pathlib import Path

    from harness.check import inputs, shard
    from harness.fuzz import campaign, corpus
    from harness.qemu.pool import QemuPool

    if args.merge:
        merged = corpus.merge(Path(args.corpus), [Path(d) for d in args.merge])
        print(f"merged {len(args.merge)} campaign directories into {args.corpus}: "
              f"{len(list(merged.inputs_dir.glob('*.json')))} inputs, "
              f"{len(merged.index)} findings")
        for sig, info in sorted(merged.index.items()):
            print(f"  {sig}  x{info.get('count', 1)}  {info['dir']}")
        return 0
    k, n = shard.parse_shard(args.shard)
    seconds = _duration(args.time) if args.time else (None if args.count else 60.0)
    store = corpus.Corpus(Path(args.corpus))
    builds = select_builds(args.qemu)
    _fuzz_inputs(args, store, builds)
    new_coverage = None
    if args.coverage_build:
        builds, new_coverage = _fuzz_coverage(args.coverage_build)
    total = 0
    for b in builds:
        inputs.check_build(b)
        with QemuPool(enabled=not args.no_reuse and not args.coverage_build) as pool:
            c = campaign.Campaign(b, store, seed=args.seed, strict=args.strict, shard=(k, n),
                                  machine=args.machine, progress=_progress, pool=pool,
                                  new_coverage=new_coverage, lockstep=args.lockstep)
            st = c.run(seconds=seconds, count=args.count)
        _progress("")
        _print_campaign(c, st, args.coverage_build)
        total += sum(not f.signature.startswith("spec:") for f in st.found)
    return 1 if total else 0


def _fuzz_inputs(args: argparse.Namespace, store: Any, builds: list[Any]) -> None:
    """Each ``--input`` trace, as operations, into the corpus."""
    from pathlib import Path

    from harness.check.replay import ReplayError
    from harness.fuzz.inputs import trace_ops

    for path in args.input or []:
        said: list[str] = []
        try:
            ops = trace_ops(Path(path), builds[0].binary, builds[0].profile,
                            as_is=args.as_is, notes=said)
        except ReplayError as e:
            raise UsageError(str(e)) from e
        for note in said:
            print(f"  rewrite: {note}")
        store.add_input(ops)
        print(f"input {path}: {len(ops)} operations added to the corpus")


def _fuzz_coverage(build_dir: str) -> tuple[list[Any], Callable[[], int | None]]:
    """The gcov build to fuzz, and the count of hw/sd lines each call finds
    first executed: counts add to what the build holds (e.g. a check run
    just before), so only lines no earlier run executed count as new."""
    from pathlib import Path

    from harness.check import coverage

    cb = coverage.CoverageBuild(Path(build_dir))
    builds = select_builds([str(cb.binary)])
    os.environ.update(cb.environment())
    seen: set[tuple[str, int]] = cb.measure().lines_hit()

    def new_coverage() -> int | None:
        now = cb.measure().lines_hit()
        fresh = len(now - seen)
        seen.update(now)
        return fresh

    return builds, new_coverage


def _print_campaign(c: Any, st: Any, coverage_build: str | None) -> None:
    """A campaign's status line, its findings, repeats and refusals."""
    print(c.status_line(st) + f" in {st.seconds:.0f} s; outcomes: "
          + ", ".join(f"{s} {v}" for s, v in sorted(st.by_status.items())))
    print(f"  {st.shape()}")
    for f in st.found:
        kind = "spec deviation" if f.signature.startswith("spec:") else f.status
        print(f"  NEW {kind}: {f.signature}\n      {f.reason}\n      shrunk "
              f"{f.original_len} -> {f.shrunk_len} operations in {f.shrink_runs} runs; "
              f"reproducers: {f.directory}")
    for sig, count in sorted(st.repeats.items()):
        print(f"  known {sig}: hit {count} more times")
    for sig, count in sorted(st.unconfirmed.items()):
        print(f"  not a finding: {sig} x{count} (passes on a fresh QEMU: state left by "
              "an earlier input on the reused process, or flaky)")
    for line in st.unshrunk:
        print(f"  left unshrunk: {line}")
    if coverage_build:
        print(f"  hw/sd lines first executed by this campaign: {st.coverage or 0} "
              f"(all runs' counts, per file: sdqtest coverage {coverage_build} "
              "--no-run)")


_last_plain = [0.0]


def _lockstep_note(results: Sequence[Any]) -> str:
    """``; optimistic lockstep N, fell back to step by step M`` (or "")."""
    n = sum(r.lockstep == "optimistic" for r in results)
    back = sum(r.lockstep == "fallback" for r in results)
    return f"; optimistic lockstep {n}, fell back to step by step {back}" if n + back else ""


def _progress(text: str) -> None:
    """One self-erasing status line on a terminal; elsewhere (CI logs) a
    plain line at most every 30 seconds."""
    import time

    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K" + text[:100])
        sys.stderr.flush()
    elif text and time.monotonic() - _last_plain[0] >= 30:
        _last_plain[0] = time.monotonic()
        print(f"sdqtest: {text}", file=sys.stderr, flush=True)


# -- parser ----------------------------------------------------------------------------


def _qemu_opt(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--qemu", action="append", metavar="NAME|PATH",
        help="QEMU build: an installed name (7.2, 10.0, 11.1) or a binary path; "
        "repeatable (default: $QTEST_QEMU_BINARY, else every installed build)",
    )


def _add_qemu_parsers(sub: Any) -> None:
    """``sdqtest qemu install|list|build``."""
    q = sub.add_parser("qemu", help="install and list QEMU builds")
    qsub = q.add_subparsers(dest="qemu_command", required=True)
    qi = qsub.add_parser("install", help="install Debian's QEMU builds side by side")
    qi.add_argument("names", nargs="*", metavar="7.2|10.0|11.1|all")
    qi.add_argument("--quiet", action="store_true")
    qi.set_defaults(func=cmd_qemu_install)
    ql = qsub.add_parser("list", help="list builds and what each offers")
    _qemu_opt(ql)
    ql.set_defaults(func=cmd_qemu_list)
    qb = qsub.add_parser("build", help="build a QEMU source tree (x86_64 system emulator) "
                         "out of tree, optionally for coverage")
    qb.add_argument("src", help="QEMU source tree (upstream git, or 'apt-get source qemu')")
    qb.add_argument("--coverage", action="store_true",
                    help="configure with --enable-gcov (for 'sdqtest coverage')")
    qb.add_argument("--arm", action="store_true",
                    help="also build qemu-system-aarch64 from the same tree (every ARM "
                    "board; with --coverage, 'sdqtest coverage' then runs the boards too)")
    qb.add_argument("--sanitize", metavar="LIST",
                    help="address,undefined: configure with --enable-asan/--enable-ubsan "
                    "(replay, check and fuzz then report sanitizer findings)")
    qb.add_argument("--build-dir", metavar="DIR",
                    help="default: a folder per tree under the sdqtest cache")
    qb.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    qb.set_defaults(func=cmd_qemu_build)


def _board_opts(p: Any) -> None:
    """``--board`` and ``--no-boards``, as ``check`` and ``bench check`` take them."""
    from harness.check.boards import DEFAULT_BOARDS
    from harness.hwdefs.boards import BOARDS

    p.add_argument("--board", action="append", metavar="NAME", nargs="?", const="all",
                   help="run on ARM boards' SD controllers instead ("
                   + ", ".join(b.name for b in BOARDS) + ", or all: the default with no NAME; "
                   "comma-separated), on the ARM builds (7.2-arm, 10.0-arm, 11.1-arm) "
                   "or --qemu")
    p.add_argument("--no-boards", action="store_true",
                   help="leave out the boards the default check runs ("
                   + ", ".join(DEFAULT_BOARDS) + " on the installed ARM builds; see "
                   "README 'Boards')")


def _add_check_parser(sub: Any) -> None:
    """``sdqtest check``."""
    c = sub.add_parser("check", help="the main job: cross-check model and QEMU")
    _qemu_opt(c)
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
    _board_opts(c)
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
    c.add_argument("--profile", action="store_true", help="where the wall time went")
    c.set_defaults(func=cmd_check)


def _add_tool_parsers(sub: Any) -> None:
    """``sdqtest coverage``, ``compat`` and ``migrate``."""
    cv = sub.add_parser("coverage", help="line/branch/function coverage of QEMU's hw/sd "
                        "code by the check, from a gcov build")
    cv.add_argument("build_dir", help="QEMU build directory configured with --enable-gcov")
    cv.add_argument("--no-run", action="store_true",
                    help="run nothing: report the counts already on disk")
    cv.add_argument("--no-boards", action="store_true",
                    help="leave out the ARM boards even when the build has "
                    "qemu-system-aarch64 (sdqtest qemu build --arm --coverage)")
    cv.add_argument("--boards", metavar="NAME,...",
                    help="the boards run on qemu-system-aarch64 (default: every board; "
                    "'default': those of the default check)")
    cv.add_argument("--keep", action="store_true",
                    help="add to the counts of earlier runs instead of starting at zero")
    cv.add_argument("--functions", nargs="?", const="", metavar="REGEX",
                    help="also list every function (or those matching REGEX)")
    cv.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    cv.add_argument("--html", metavar="DIR", help="write an annotated HTML report")
    cv.set_defaults(func=cmd_coverage, check_args=[])
    cv.epilog = ("arguments after '--' go to 'sdqtest check' (e.g. sdqtest coverage BUILD "
                 "-- --group data)")

    cm = sub.add_parser("compat", help="print the machine-compat matrix (QEMU vs model)")
    _qemu_opt(cm)
    cm.set_defaults(func=cmd_compat)

    mg = sub.add_parser("migrate", help="migration matrix: same-build and older->newer pairs")
    _qemu_opt(mg)
    mg.add_argument("--from", dest="source", metavar="BUILD", help="only pairs from this build")
    mg.add_argument("--to", dest="destination", metavar="BUILD",
                    help="only pairs to this build")
    mg.add_argument("--machine", action="append", metavar="TYPE",
                    help="machine type (repeatable; default: per pair the oldest, newest "
                    "and compat-boundary pc-q35 and pc-i440fx types both builds offer)")
    mg.add_argument("--point", action="append", metavar="POINT",
                    help="migration point (repeatable, or comma-separated; default: all)")
    mg.add_argument("--cross-only", action="store_true",
                    help="leave out the same-build pairs")
    mg.add_argument("--report-dir", default="reports", metavar="DIR",
                    help="where reproducers go (default: ./reports)")
    mg.add_argument("--keep-all", action="store_true",
                    help="write a reproducer for every cell, not only the failing ones")
    mg.set_defaults(func=cmd_migrate)


def _add_replay_parser(sub: Any) -> None:
    """``sdqtest replay``."""
    r = sub.add_parser("replay", help="replay a qtest trace on QEMU (and the model)")
    r.add_argument("trace", nargs="*", help="qtest commands, one per line (-qtest stdio "
                   "format), or a bug report's shell form; several may be given")
    r.add_argument("--field", action="store_true",
                   help="also every reproducer of the field corpus (tests/qtest/field/)")
    r.add_argument("--as-is", action="store_true",
                   help="run a field command line as written: no -drive if=sd, accelerator "
                   "or machine type rewrites")
    _qemu_opt(r)
    r.add_argument("--machine", help="machine type (default: the one recorded in the "
                   "trace's header, else q35)")
    r.add_argument("--qemu-args", help="devices and options instead of the trace's "
                   "(default: from the trace's header, else sdhci-pci + sd-card)")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per command")
    r.add_argument("--no-model", action="store_true", help="do not run the model")
    r.set_defaults(func=cmd_replay)


def _add_fuzz_parser(sub: Any) -> None:
    """``sdqtest fuzz``."""
    fz = sub.add_parser("fuzz", help="differential fuzzing: random inputs on model and QEMU")
    _qemu_opt(fz)
    fz.add_argument("--time", "--budget", metavar="T",
                    help="time budget per build: 60, 90s, 10m, 1h (default 60 s)")
    fz.add_argument("--count", type=int, metavar="N", help="inputs per build")
    fz.add_argument("--lockstep", choices=("optimistic", "step"), default="optimistic",
                    help="optimistic (default): inputs run ahead on the model's answers, "
                    "anything but agreement run again step by step; step: one round trip "
                    "per operation")
    fz.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    fz.add_argument("--corpus", default="fuzz-corpus", metavar="DIR",
                    help="campaign directory: inputs, findings (default ./fuzz-corpus)")
    fz.add_argument("--machine", default="q35", help="machine type (default q35)")
    fz.add_argument("--strict", action="store_true",
                    help="also report spec deviations (the model following the spec), "
                    "apart from findings")
    fz.add_argument("--shard", default="1/1", metavar="K/N",
                    help="run shard K of N of the campaign's inputs")
    fz.add_argument("--input", action="append", metavar="TRACE",
                    help="a qtest trace (ours, QEMU's -qtest stdio or bug-report shell form) "
                    "to add to the corpus")
    fz.add_argument("--as-is", action="store_true",
                    help="--input command lines as written (no rewrites; see replay --as-is)")
    fz.add_argument("--merge", nargs="+", metavar="DIR",
                    help="merge these campaign directories into --corpus and exit")
    fz.add_argument("--no-reuse", action="store_true",
                    help="launch QEMU afresh for every input instead of resetting one")
    fz.add_argument("--coverage-build", metavar="DIR",
                    help="a gcov build of QEMU (sdqtest qemu build --coverage): fuzz its "
                    "binary, keep inputs that execute new hw/sd lines, report lines covered "
                    "(each input then runs on its own QEMU, which writes its counts as it "
                    "exits)")
    fz.set_defaults(func=cmd_fuzz)


def _add_bench_parsers(sub: Any) -> Any:
    """``sdqtest bench qtest|check``; the subparsers, for the bench parts."""
    b = sub.add_parser("bench", help="benchmarks (figures, never pass/fail)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    bq = bsub.add_parser("qtest", help="qtest round trips: naive vs sync vs pipelined")
    _qemu_opt(bq)
    bq.add_argument("--ops", type=int, default=3000)
    bq.add_argument("--repeats", type=int, default=5)
    bq.set_defaults(func=cmd_bench_qtest)
    bc = bsub.add_parser("check", help="scenarios/s through check: step by step vs "
                         "optimistic lockstep (and QEMU launched afresh), side by side")
    _qemu_opt(bc)
    bc.add_argument("--group", action="append",
                    help="scenario group (repeatable, or comma-separated; default: all)")
    bc.add_argument("--scenario", action="append", metavar="NAME",
                    help="one scenario by name (repeatable)")
    _board_opts(bc)
    bc.add_argument("-j", "--jobs", metavar="N[,N...]",
                    help="worker counts to measure (default: one per core)")
    bc.add_argument("--equivalence", action="store_true",
                    help="instead: run each scenario fresh and on a reused QEMU step by step "
                    "and optimistically, and name those whose steps, qtest trace or report "
                    "differ (exit 1 if any)")
    bc.add_argument("--fresh", action="store_true",
                    help="also time each QEMU launched afresh (step by step)")
    bc.add_argument("--profile", action="store_true",
                    help="instead: the time split by concern (model, driver, comparison, "
                    "qtest wire, launch/reset, image compare) under cProfile, on one worker")
    bc.set_defaults(func=cmd_bench_check)
    return bsub


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sdqtest",
        description="QEMU's sd-card and sdhci-pci cross-checked against a golden model.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    _add_qemu_parsers(sub)
    _add_check_parser(sub)
    _add_tool_parsers(sub)
    _add_replay_parser(sub)
    _add_fuzz_parser(sub)
    bsub = _add_bench_parsers(sub)
    # Subcommands that live beside their code: the bench parts, bisect.
    from harness.bench import cli as bench_cli
    from harness.bisect import cli as bisect_cli
    from harness.bugs import cli as bugs_cli
    from harness.explore import cli as explore_cli
    from harness.review import cli as review_cli

    bench_cli.add_parsers(bsub)
    bisect_cli.add_parsers(sub)
    explore_cli.add_parsers(sub)
    bugs_cli.add_parsers(sub)
    review_cli.add_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    install_signal_handlers()
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if argv[:1] == ["coverage"] and "--" in argv:  # the rest is for 'check'
        at = argv.index("--")
        argv, passed = argv[:at], argv[at + 1:]
    args = build_parser().parse_args(argv)
    if passed:
        args.check_args = passed
    try:
        rc: int = args.func(args)
        return rc
    except UsageError as e:
        print(f"sdqtest: error: {e}", file=sys.stderr)
        return 2
    except QemuError as e:
        print(f"sdqtest: QEMU error: {e}", file=sys.stderr)
        return 3
    except SdqtestError as e:  # cannot start: a build, an image, an install step
        print(f"sdqtest: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sdqtest: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
