"""``sdqtest check``: the main job, the scenario library and the compat
matrix, model against QEMU (:mod:`harness.check.session` runs it; here the
options become a request, and the outcome the report and the files)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any, TextIO

from harness.check import session
from harness.commands import failure
from harness.commands.common import (
    add_difference_options,
    board_options,
    check_output,
    max_differences,
    qemu_option,
    show_progress,
    write_json,
)
from harness.errors import UsageError

#: ``check``'s own exit statuses (:mod:`harness.check.verdict`).
EXITS = ("0 nothing unexplained (known differences and boards that cannot run on the build "
         "do not count); 1 a divergence, an error or a spec miss; 3 QEMU crashed or hung, "
         "and nothing worse; 4 everything skipped, or a build skipped more than half of its "
         f"scenarios (--allow-skips accepts that); {failure.EXIT_INTERNAL} also when a run "
         "ended on an internal error of sdqtest (the report and --json hold every run done)")


def register(sub: Any) -> None:
    """``sdqtest check``."""
    c = sub.add_parser("check", help="the main job: cross-check model and QEMU",
                       epilog=failure.epilog(EXITS))
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
    c.add_argument("--json", metavar="FILE|-", help="write every result as JSON, with a "
                   "summary (schema: harness/schemas/check.schema.json); '-': on standard "
                   "output, the report then on standard error")
    c.add_argument("--junit", metavar="FILE", help="write every result as JUnit XML (CI)")
    c.add_argument("--tap", metavar="FILE|-", nargs="?", const="-",
                   help="write every run as a TAP 14 test point, for meson test's "
                   "protocol: 'tap' (no FILE or '-': on standard output, the report then "
                   "on standard error)")
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
    add_difference_options(c)
    c.add_argument("--shard", metavar="K/N",
                   help="run only shard K of N (K from 1): a split of the scenario runs by "
                   "a hash of scenario@machine, the same on every machine and build")
    c.add_argument("-v", "--verbose", action="store_true")
    c.add_argument("--profile", action="store_true", help="where the wall time went")
    c.set_defaults(func=run)


def listing(width: int = 100) -> list[str]:
    """``check --list``: each scenario's group and name on a line, its whole
    description below, under the name, wrapped at ``width`` columns (a
    word longer than a line is never cut)."""
    import textwrap

    import harness.scenarios as scenarios

    scs = list(scenarios.all_scenarios().values())
    gw = max(len(sc.group) for sc in scs) + 1
    out = []
    for sc in scs:
        out.append(f"{sc.group:{gw}}{sc.name}")
        out += textwrap.wrap(sc.doc, width, initial_indent=" " * gw, subsequent_indent=" " * gw,
                             break_long_words=False, break_on_hyphens=False)
    return out


def request(args: argparse.Namespace) -> session.CheckRequest:
    """The check ``args`` ask for (``--group a,b`` is ``--group a --group b``)."""
    from harness.check import shard

    return session.CheckRequest(
        qemu=tuple(args.qemu) if args.qemu else None, groups=session.names(args.group),
        scenarios=session.names(args.scenario),
        machines=tuple(args.machine) if args.machine else None,
        boards=tuple(args.board) if args.board is not None else None,
        no_boards=args.no_boards, image=args.image, strict=args.strict,
        shard=shard.parse_shard(args.shard) if args.shard else (1, 1), jobs=args.jobs,
        reuse=not args.no_reuse, lockstep=args.lockstep, report_dir=Path(args.report_dir),
        allow_skips=args.allow_skips, max_differences=max_differences(args),
        shrink=EXPLORE_SHRINK)


def run(args: argparse.Namespace) -> int:
    """The main job: scenario library and compat matrix, model vs QEMU.
    With ``--json -`` the JSON is standard output and the report goes to
    standard error."""
    if args.list:
        print("\n".join(listing()))
        return 0
    if args.strict and (args.json or args.junit or args.tap):
        raise UsageError("--strict prints its findings; it writes no --json, --junit or --tap")
    if args.json == "-" and args.tap == "-":
        raise UsageError("--json - and --tap -: only one of them can be standard output")
    check_output("--json", args.json)
    check_output("--tap", args.tap)
    if args.junit == "-":
        raise UsageError("--junit -: JUnit XML goes to a file (--json - writes to standard "
                         "output)")
    check_output("--junit", args.junit)
    check_output("--report-dir", args.report_dir, directory=True)
    stdout = sys.stdout
    human = contextlib.redirect_stdout(sys.stderr) if "-" in (args.json, args.tap) \
        else contextlib.nullcontext()
    with human:
        return _run(args, stdout)


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
    """:func:`run` after its outputs were found writable; the JSON on ``stdout``."""
    from harness.check import report, wall

    clock = wall.start("selecting and probing builds")
    p = session.plan(request(args))
    if args.strict:
        return _check_strict(_strict_groups(p, (args.machine or ["q35"])[0]),
                             p.request.report_dir, p.jobs)
    out = session.run(p, show_progress)
    clock.mark("report and files")
    written = _check_files(args, out, stdout)  # first: a failure below loses no run
    report.print_report(out.results, sys.stdout, verbose=args.verbose)
    if out.notes:
        print("\n" + "\n".join(out.notes))
    counters = args.verbose or args.profile  # the check's own workings, not results
    print("\n" + session.summary(out, counters))
    if counters:
        _drivers_share(out.results)
        for why in out.stats.fallbacks:
            print(f"  reuse fell back to a fresh launch: {why}")
    if not out.aborted:
        _explore_summary(out, counters)
    for line in written:
        print(line)
    status = _say_verdict(out, p.request.report_dir)
    wall.print_profile(args.profile, clock, p.every_build)
    return status


def _say_verdict(out: session.CheckOutcome, report_dir: Path) -> int:
    """The verdict's lines on stderr: for an internal error one line, the
    tracebacks in a file it names; the exit status."""
    from harness.check import verdict

    v = out.verdict
    if v.status != verdict.INTERNAL:
        for line in v.why:
            print(f"sdqtest: {line}", file=sys.stderr)
        return v.status
    _say_internal(v.why[0], [r for r in out.results if r.internal], report_dir, out.aborted)
    return v.status


def _say_internal(why: str, bad: list[Any], report_dir: Path, aborted: str = "") -> None:
    """One line on stderr for runs that ended on an internal error of
    sdqtest (``bad``) or a check it stopped (``aborted``: the traceback);
    their tracebacks in a file of ``report_dir`` that the line names."""
    texts = [f"the check stopped:\n{aborted}"] if aborted else []
    texts += [f"[{r.build} {r.machine}] {r.scenario}:\n{r.notes[0] if r.notes else r.reason}"
              for r in bad]
    try:
        path: Path | None = failure.write_traceback("\n".join(texts), report_dir)
    except OSError:
        path = None
    what = why + (f" (the first: [{bad[0].build} {bad[0].machine}] {bad[0].scenario}: "
                  f"{bad[0].reason.removeprefix('internal error of sdqtest: ')})"
                  if bad and not aborted else "")
    print(f"sdqtest: {failure.one_line(what, path)}", file=sys.stderr)


def _drivers_share(results: list[Any]) -> None:
    """The drivers group's share of the runs' time (real drivers' recorded traffic)."""
    from harness.check.runner import SKIP
    from harness.scenarios.drivers import GROUP

    mine = [r for r in results if r.group == GROUP and r.status != SKIP]
    total = sum(r.seconds for r in results)
    if mine and total > 0:
        t = sum(r.seconds for r in mine)
        print(f"real drivers (group {GROUP}): {len(mine)} runs, {t:.1f} s of the runs' "
              f"{total:.1f} s ({100 * t / total:.0f}%)")


def json_summary(out: session.CheckOutcome) -> dict[str, Any]:
    """The JSON report's ``summary`` keys beside the figures
    (:func:`harness.check.report.counts`): the verdict, the planned runs,
    whether the check ran to its end, the machines a build cannot start."""
    from harness.check import boards, runner, verdict

    v = out.verdict
    cannot = {(r.build, r.machine, r.reason) for r in out.results
              if r.status == runner.CANNOT_RUN}
    cannot |= {(b, m, f"cannot run on this build: {why}") for b, _, m, why in
               boards.absent_machines(out.plan.boards.builds, out.plan.boards.names)}
    return {"exit_status": v.status, "verdict": verdict.NAMES.get(v.status, str(v.status)),
            "why": v.why, "planned_runs": len(out.plan.runs), "complete": not out.aborted,
            "elapsed_seconds": round(out.elapsed, 3),
            "cannot_run_on_build": [{"build": b, "machine": m, "reason": why}
                                    for b, m, why in sorted(cannot)],
            "notes": out.notes}


def _check_files(args: argparse.Namespace, out: session.CheckOutcome,
                 stdout: TextIO) -> list[str]:
    """The JUnit and JSON reports, when asked for; the lines naming them."""
    from harness.check import report

    lines = []
    results = out.results
    if args.junit:
        from harness.check import junit

        junit.write(results, Path(args.junit))
        lines.append(f"JUnit report: {args.junit}")
    if args.json:
        builds = session.build_identities(out.plan.every_build, out.notes)
        write_json(report.to_json(results, builds, json_summary(out)), args.json, stdout)
        if args.json != "-":
            lines.append(f"JSON report: {args.json}")
    if args.tap:
        from harness.check import tap

        tap.write(results, args.tap, stdout, out.aborted)
        if args.tap != "-":
            lines.append(f"TAP report: {args.tap}")
    return lines


#: Seconds of scenario time the explore group may take per build (the
#: summary says how much it took; the corpus is fixed, so this is a
#: statement, not a cut-off).
EXPLORE_BUDGET = 30.0
#: Explore divergences shrunk into reproducers per check run.
EXPLORE_SHRINK = 2


def _explore_summary(out: session.CheckOutcome, counters: bool = True) -> None:
    """The explore group's line of the summary (with ``counters``), and what
    the check's shrink phase made of its divergences
    (:mod:`harness.check.explore_shrink`)."""
    from harness.check.explore_shrink import NotShrunk
    from harness.scenarios import explore

    runs = [r.result for r in out.ran if r.spec.scenario.group == explore.GROUP]
    if not runs:
        return
    secs = sum(r.seconds for r in runs)
    per = secs / max(len({r.build for r in runs}), 1)
    if counters:
        print(f"explore group: {len(runs)} runs of the model-driven corpus "
              f"({len(explore.load()['inputs'])} inputs), {secs:.1f} s of scenario time, "
              f"{per:.1f} s per build (budget {EXPLORE_BUDGET:.0f} s per build"
              + ("" if per <= EXPLORE_BUDGET else ", EXCEEDED") + ")")
    for got in out.shrunk:
        if isinstance(got, NotShrunk):
            print(f"  {got.build} {got.scenario}: did not fail again when re-run alone")
        else:
            print(f"  {got.build} {got.scenario}: shrunk {got.before} -> {got.after} "
                  f"operations ({got.runs} runs), {got.signature}\n    reproducers "
                  f"(qtest, sh, C): {got.reproducer}")


def _strict_groups(p: Any, machine: str) -> list[tuple[Any, str, list[Any]]]:
    """What strict mode runs: each build's scenarios on ``machine`` (a PC's), or with
    ``--board`` each board's scenarios on the board's own machine type: those of its
    bus, a recording on its own board (the others could only be skipped there)."""
    from harness.check import boards

    if not p.boards.builds:
        return [(b, machine, list(p.scenarios)) for b in p.builds]
    bd = p.boards
    return [(b, m, [sc for sc in bd.scenarios if boards.on_its_bus(sc, m)])
            for b in bd.builds for m in boards.machines_for(b, bd.names)]


def _check_strict(groups: list[tuple[Any, str, list[Any]]], report_dir: Any,
                  jobs: int = 1) -> int:
    """Findings: each deviation from the SD specifications a build shows."""
    from harness.check import runner, strict

    print("strict mode: the model follows the SD specifications; each finding is a "
          "place where QEMU does not\n")
    total = 0
    internal: list[Any] = []
    for b, machine, selected in groups:
        rep = strict.findings_for(b, selected, machine, report_dir, progress=show_progress,
                                  jobs=jobs)
        show_progress("")
        skipped = [r for r in rep.results if r.status == runner.SKIP]
        on = "" if machine in ("q35", "pc") else f" on {machine}"
        print(f"== QEMU {b.name} ({b.version}){on}: {len(rep.findings)} spec deviations "
              f"found by {len(rep.results) - len(skipped)} scenarios"
              + (f" ({len(skipped)} skipped: {skipped[0].reason}"
                 f"{' ...' if len(skipped) > 1 else ''})" if skipped else ""))
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
        internal += [r for r in rep.results if r.internal]
        print()
    if internal:
        n = len(internal)
        _say_internal(f"{n} run{'s' if n != 1 else ''} ended on an internal error of sdqtest",
                      internal, Path(report_dir))
        return failure.EXIT_INTERNAL
    return 1 if total else 0
