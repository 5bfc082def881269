"""``sdqtest bisect`` and ``sdqtest bisect-run``: :func:`add_parsers` adds both."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.bisect import ABORT, SKIP, automut, mutants
from harness.bisect.automut import DEFAULT_FILES
from harness.bisect.build import Builder, format_missing, make_builder, tree_dir
from harness.bisect.checks import PROJECT_ROOT, BenchCheck, Check, PytestCheck, ScenarioCheck
from harness.bisect.driver import (
    EXIT_USAGE,
    BisectError,
    bisect,
    toplevel,
    tree_lock,
)
from harness.bisect.progress import Progress
from harness.bisect.step import GitError, git, run_step
from harness.errors import UsageError

_CODES = ("exit codes: 0 good, 1 bad, 125 skip (build failed, capability missing), "
          "128 abort (the check itself is broken)")


def _check_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("the check (one of)")
    x = g.add_mutually_exclusive_group(required=True)
    x.add_argument("--scenario", metavar="NAME",
                   help="an sdqtest check scenario: bad when QEMU diverges from the model")
    x.add_argument("--pytest", metavar="NODEID",
                   help="a pytest node id run with QTEST_QEMU_BINARY set: bad when it fails")
    x.add_argument("--bench", metavar="METRIC",
                   help="a figure from harness.bench.metrics (launch-ms, qtest-ops, ...): "
                   "bad when it is on the wrong side of --threshold")
    g.add_argument("--pytest-args", metavar="ARGS",
                   help="--pytest: more pytest arguments, one shell-quoted string "
                   "(e.g. '-k spec -p no:hypothesispytest')")
    g.add_argument("--threshold", type=float, metavar="X", help="the --bench limit")
    d = g.add_mutually_exclusive_group()
    d.add_argument("--higher-is-better", dest="higher", action="store_true", default=None,
                   help="--bench: good when the figure is >= X (default: the metric's own)")
    d.add_argument("--lower-is-better", dest="higher", action="store_false",
                   help="--bench: good when the figure is <= X")
    g.add_argument("--machine", metavar="TYPE",
                   help="--scenario, --pytest: machine type (e.g. q35, pc)")
    g.add_argument("--crash-is-skip", action="store_true",
                   help="--scenario: a QEMU crash skips the commit instead of marking it bad")
    b = p.add_argument_group("building")
    b.add_argument("--build-cmd", metavar="CMD",
                   help="shell command run at the tree's root that builds and prints the "
                   "binary's path (env: SDQTEST_SRC, SDQTEST_BUILD_DIR, SDQTEST_COMMIT); "
                   "default: the tree's ./sdqtest-build if executable, else configure+ninja")
    b.add_argument("--build-dir", type=Path, metavar="DIR",
                   help="build directory (default: one per tree under the sdqtest cache)")
    b.add_argument("--build-timeout", type=float, default=3600, metavar="S")
    b.add_argument("--check-timeout", type=float, default=900, metavar="S")


def make_check(args: argparse.Namespace) -> Check:
    """The check the options name; a :class:`BisectError` for bad combinations."""
    if args.pytest_args and not args.pytest:
        raise BisectError("--pytest-args goes with --pytest")
    if args.bench is None and (args.threshold is not None or args.higher is not None):
        raise BisectError("--threshold/--higher-is-better/--lower-is-better go with --bench")
    if args.scenario:
        known = _scenarios()
        if known is not None and args.scenario not in known:
            raise BisectError(f"unknown scenario {args.scenario!r} "
                              "('sdqtest check --list' lists them)")
        return ScenarioCheck(args.scenario, args.machine, args.crash_is_skip)
    if args.pytest:
        return PytestCheck(absolute_nodeid(args.pytest), args.machine,
                           shlex.split(args.pytest_args or ""))
    from harness.bench.metrics import METRICS

    if args.bench not in METRICS:
        raise BisectError(f"unknown metric {args.bench!r} (known: {', '.join(sorted(METRICS))})")
    if args.threshold is None:
        raise BisectError("--bench needs --threshold X")
    return BenchCheck(args.bench, args.threshold, args.higher)


def _scenarios() -> set[str] | None:
    """Names of the check engine's scenarios (None if it cannot say)."""
    try:
        import harness.scenarios as scenario

        return set(scenario.all_scenarios())
    except Exception:  # the engine is another component: never block a bisect on it
        return None


def absolute_nodeid(nodeid: str) -> str:
    """A node id whose file part is absolute, so it works from any directory.

    A relative file is looked up from the project's root, then from the
    current directory (``git bisect run`` runs commands from the QEMU tree's
    top, which has a ``tests/qtest`` of its own).
    """
    path, sep, rest = nodeid.partition("::")
    p = Path(path)
    if not p.is_absolute():
        for base in (PROJECT_ROOT, Path.cwd()):
            if (base / p).exists():
                return str((base / p).resolve()) + sep + rest
    return nodeid


def _builder(args: argparse.Namespace, src: Path) -> Builder:
    binary = getattr(args, "binary", None)
    return make_builder(src, build_cmd=args.build_cmd, binary=binary, build_dir=args.build_dir)


def cmd_bisect(args: argparse.Namespace) -> int:
    """``sdqtest bisect``: the whole bisect; prints the first bad commit."""
    try:
        check = make_check(args)
        src = toplevel(args.qemu_src)
        result = bisect(src, args.good, args.bad, _builder(args, src), check,
                        log_dir=args.log_dir, build_timeout=args.build_timeout,
                        check_timeout=args.check_timeout, verify_good=args.verify_good)
    except (BisectError, GitError) as e:
        print(f"sdqtest bisect: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(result.report()))
    return result.code


def cmd_bisect_run(args: argparse.Namespace) -> int:
    """``sdqtest bisect-run``: one step for ``git bisect run`` (0/1/125, 128 aborts)."""
    try:
        check = make_check(args)
        src = toplevel(args.qemu_src)
        builder = _builder(args, src)
        missing = builder.prerequisites(src)
        if missing:
            raise BisectError(format_missing(missing))
        head = git(src, "rev-parse", "HEAD").strip()
        log = args.log or tree_dir(src) / "run-logs" / f"{head[:12]}.log"
        log = log.absolute()
        progress = Progress()
        with tree_lock(src):
            progress.step(1, None, head, git(src, "log", "-1", "--format=%s", head).strip())
            out = run_step(src, builder, check, log, build_timeout=args.build_timeout,
                           check_timeout=args.check_timeout, progress=progress)
    except (BisectError, GitError) as e:
        print(f"sdqtest bisect-run: error: {e}", file=sys.stderr)
        return ABORT
    print(f"{out.commit[:12]} {out.verdict} (exit {out.code}): {out.summary}")
    for line in out.detail[:8]:
        print(f"    {line}")
    print(f"log: {out.log}")
    return out.code if out.code in (0, 1, SKIP) else ABORT


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``bisect`` and ``bisect-run`` to the ``sdqtest`` command line."""
    b = sub.add_parser(
        "bisect", help="find the first QEMU commit where a check goes bad (drives git bisect)",
        description="Drive 'git bisect' in a QEMU source tree: each step builds "
        "qemu-system-x86_64 outside the tree and runs the check. The tree is left as it was.",
        epilog="exit: 0 first bad commit found, 1 not narrowed down (skips, or --bad is "
        "good), 2 cannot start (dirty tree, prerequisites, bad refs), 3 the check is broken, "
        "130/143 interrupted (the tree is reset all the same)",
    )
    b.add_argument("--qemu-src", type=Path, default=Path.cwd(), metavar="DIR",
                   help="the QEMU git tree (default: the current directory)")
    b.add_argument("--good", required=True, metavar="REF", help="a commit known to be good")
    b.add_argument("--bad", default="HEAD", metavar="REF",
                   help="a commit known to be bad (default HEAD)")
    b.add_argument("--log-dir", type=Path, metavar="DIR",
                   help="where step logs go (default: under the sdqtest cache; "
                   "the summary names it)")
    b.add_argument("--verify-good", action="store_true",
                   help="test the --good commit first (one more step) and stop if it is not good")
    _check_options(b)
    b.set_defaults(func=cmd_bisect, binary=None)

    r = sub.add_parser(
        "bisect-run", help="one bisect step, for 'git bisect run sdqtest bisect-run ...'",
        description="Build the checked-out commit and run the check once. " + _CODES,
        epilog="example: git bisect start BAD GOOD && git bisect run sdqtest bisect-run "
        "--scenario card-registers",
    )
    r.add_argument("--qemu-src", type=Path, default=Path(os.curdir), metavar="DIR",
                   help="the QEMU git tree (default: the current directory, as git bisect "
                   "run leaves it)")
    r.add_argument("--binary", type=Path, metavar="PATH",
                   help="check this binary instead of building")
    r.add_argument("--log", type=Path, metavar="FILE",
                   help="the step's log (default: under the sdqtest cache)")
    _check_options(r)
    r.set_defaults(func=cmd_bisect_run)

    mu = sub.add_parser(
        "mutants", help="prove the check catches regressions: build a QEMU tree with each "
        "deliberate hw/sd change and check it",
        description="Each mutant is a small edit of the tree's hw/sd (a default that moves, "
        "a DMA engine writing one byte too many, an interrupt pulse, a block written twice). "
        "The unchanged tree is built and checked first; then each mutant is applied, built "
        "incrementally, checked with the groups that should catch it, and reverted. The tree "
        "is left as it was.",
        epilog="exit: 0 every applicable mutant caught (--auto: every compiled one), 1 one "
        "missed or timed out or the baseline fails, 2 cannot start (dirty tree, not a git "
        "tree)")
    mu.add_argument("--qemu-src", type=Path, default=Path.cwd(), metavar="DIR",
                    help="the QEMU git tree (default: the current directory)")
    mu.add_argument("--build-dir", type=Path, metavar="DIR",
                    help="build directory (default: one per tree under the sdqtest cache)")
    mu.add_argument("--only", action="append", metavar="NAME", help="one mutant (repeatable)")
    mu.add_argument("--set", choices=("named", "unnamed", "reach"), default="named",
                    help="named: the six regressions of the check's promises (default); "
                    "unnamed: issue #19's, in areas no scenario names, each checked by the "
                    "default check; reach: issue #34's, one per kind the explorer reaches")
    mu.add_argument("--auto", type=int, metavar="N",
                    help="instead of a hand-written set: N mutants drawn from the tree's own "
                    "source (operator flips, constants moved by one, deleted statements ...; "
                    "see harness/bisect/automut.py), each checked by the default x86 check "
                    "(--no-boards -j 2)")
    mu.add_argument("--seed", type=int, default=1, help="--auto's seed (default 1): the same "
                    "seed and tree give the same mutants")
    mu.add_argument("--files", default=",".join(DEFAULT_FILES), metavar="F,F",
                    help=f"--auto's files, inside the tree (default {','.join(DEFAULT_FILES)})")
    mu.add_argument("--check-timeout", type=float, default=900.0, metavar="S",
                    help="seconds one mutant's check may take before it counts as timed out "
                    "(default 900)")
    mu.add_argument("--budget", type=float, metavar="S",
                    help="start no mutant after S seconds (the rest are reported 'not run')")
    mu.add_argument("--report-dir", type=Path, default=Path("reports/mutants"), metavar="DIR")
    mu.add_argument("--list", action="store_true", help="list the mutants and exit")
    mu.set_defaults(func=cmd_mutants)


def cmd_mutants(args: argparse.Namespace) -> int:
    """Build a tree with each deliberate hw/sd regression; the check must catch each."""
    from harness.bisect import build
    from harness.bisect.mutants_reach import REACH
    from harness.bisect.mutants_unnamed import UNNAMED
    from harness.table import print_table

    src = args.qemu_src.resolve()
    pool: tuple[mutants.Mutant, ...] = {"unnamed": UNNAMED, "reach": REACH}.get(
        args.set, mutants.MUTANTS)
    drawn: tuple[automut.AutoMutant, ...] = ()
    if args.auto is not None:
        if args.auto < 1:
            raise UsageError("--auto needs a number of mutants of at least 1")
        try:
            texts = automut.read_files(src, [f for f in args.files.split(",") if f])
        except mutants.MutantError as e:
            raise UsageError(str(e)) from e
        pool = drawn = automut.draw(texts, args.auto, args.seed)
    chosen = tuple(m for m in pool if not args.only or m.name in args.only)
    unknown = set(args.only or ()) - {m.name for m in pool}
    if unknown:
        raise UsageError(f"no mutant named {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(m.name for m in pool)}")
    if args.list:
        for m in pool:
            what = m.diff if isinstance(m, automut.AutoMutant) else f"{m.path:24} {m.stands_for}"
            print(f"{m.name:36} {what}")
        return 0
    build_dir = (args.build_dir or build.bisect_root().parent / "builds"
                 / (build.tree_dir(src).name + "-mutants")).resolve()
    report_dir = args.report_dir.resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    log_path = report_dir / "build.log"
    print(f"tree {src}, build {build_dir}, reports and build log in {report_dir}")
    with log_path.open("w") as log:
        try:
            outcomes = mutants.prove(src, build_dir, chosen, log, report_dir,
                                     check_timeout=args.check_timeout, budget=args.budget)
        except mutants.MutantError as e:
            raise UsageError(str(e)) from e
    print()
    if drawn:
        _auto_report(tuple(m for m in drawn if m in chosen), outcomes, report_dir)
    else:
        print_table(["mutant", "result", "first finding", "s"],
                    [[o.mutant, o.status, o.detail[:110], f"{o.seconds:.0f}"] for o in outcomes])
    fine = ("caught", "not run", "build failed") if drawn else ("caught", "not run")
    bad = [o for o in outcomes[1:] if o.status not in fine]
    return 1 if bad or outcomes[0].status != "agrees" else 0


def _auto_report(drawn: tuple[automut.AutoMutant, ...], outcomes: list[mutants.Outcome],
                 report_dir: Path) -> None:
    """The automatic mutants' table and counts, printed and kept as
    ``auto-table.txt`` in the report directory."""
    import contextlib
    import io

    from harness.table import print_table

    table = automut.rows(drawn, outcomes)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print(f"baseline (unchanged tree): {outcomes[0].status}")
        print_table(["id", "where", "operator", "change", "verdict", "groups", "first finding",
                     "s"], table)
        print()
        print("\n".join(automut.summary(table)))
    print(buf.getvalue(), end="")
    (report_dir / "auto-table.txt").write_text(buf.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry: ``python -m harness.bisect bisect|bisect-run ...``."""
    p = argparse.ArgumentParser(prog="python -m harness.bisect")
    sub = p.add_subparsers(dest="command", required=True)
    add_parsers(sub)
    args = p.parse_args(argv)
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()  # SIGTERM/SIGHUP unwind, so children are killed
    try:
        rc: int = args.func(args)
    except KeyboardInterrupt:
        print("sdqtest: interrupted", file=sys.stderr)
        return 130
    return rc
