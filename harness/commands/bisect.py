"""``sdqtest bisect`` and ``sdqtest bisect-run``: :func:`register` adds both."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from harness.bisect import ABORT, SKIP
from harness.bisect.checks import (
    PROJECT_ROOT,
    BenchCheck,
    Check,
    FindingCheck,
    PytestCheck,
    ScenarioCheck,
)
from harness.bisect.driver import (
    EXIT_USAGE,
    BisectError,
    bisect,
    toplevel,
    tree_lock,
)
from harness.bisect.progress import BisectProgress
from harness.bisect.step import GitError, git, run_step
from harness.provision.build import Builder, format_missing, make_builder, tree_dir

_CODES = ("exit codes: 0 good, 1 bad, 125 skip (build failed, capability missing), "
          "128 abort (the check itself is broken)")


def _check_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("the check (one of)")
    x = g.add_mutually_exclusive_group(required=True)
    x.add_argument("--scenario", metavar="NAME",
                   help="an sdqtest check scenario: bad when QEMU diverges from the model")
    x.add_argument("--finding", metavar="SIG",
                   help="a finding's signature as check or review prints it ('result:"
                   "RSPREG1.RSP | CMD2 ALL_SEND_CID | ident', or its first part): bad when "
                   "a run shows it, whatever differs before it (--scenario-of narrows the "
                   "runs; default: the x86 check)")
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
    g.add_argument("--scenario-of", metavar="NAME", action="append",
                   help="--finding: the scenario(s) to run (repeatable, comma lists)")
    g.add_argument("--machine", metavar="TYPE",
                   help="--scenario, --finding, --pytest: machine type (e.g. q35, pc)")
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
    if getattr(args, "finding", None):
        scenarios = tuple(n for v in args.scenario_of or () for n in v.split(",") if n)
        return FindingCheck(args.finding, scenarios, args.machine, args.crash_is_skip)
    if getattr(args, "scenario_of", None):
        raise BisectError("--scenario-of goes with --finding")
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


def run(args: argparse.Namespace) -> int:
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


def run_one_step(args: argparse.Namespace) -> int:
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
        progress = BisectProgress()
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


def register(sub: Any) -> None:
    """``sdqtest bisect`` and ``sdqtest bisect-run``."""
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
    b.set_defaults(func=run, binary=None)

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
    r.set_defaults(func=run_one_step, internal_exit=ABORT)  # 70 would be 'bad'
