"""``sdqtest mutants``: a QEMU tree built with each deliberate hw/sd change
(:mod:`harness.bisect.mutants`, :mod:`harness.bisect.automut`), each checked."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.bisect import automut, mutants
from harness.bisect.automut import DEFAULT_FILES
from harness.errors import UsageError


def register(sub: Any) -> None:
    """``sdqtest mutants``."""
    mu = sub.add_parser(
        "mutants", help="prove the check catches regressions: build a QEMU tree with each "
        "deliberate hw/sd change and check it",
        description="Each mutant is a small edit of the tree's hw/sd (a default that moves, "
        "a DMA engine writing one byte too many, an interrupt pulse, a block written twice). "
        "The unchanged tree is built and checked first; then each mutant is applied, built "
        "incrementally, checked with the groups that should catch it, and reverted. The tree "
        "is left as it was. A mutant checked with --board, or in a file only ARM SoCs "
        "compile, makes the tree build qemu-system-aarch64 too (one configure) and is "
        "checked on it; the others on qemu-system-x86_64.",
        epilog="exit: 0 every applicable mutant caught (--auto: every compiled one), 1 one "
        "missed or timed out or the baseline fails, 2 cannot start (dirty tree, not a git "
        "tree)")
    mu.add_argument("--qemu-src", type=Path, default=Path.cwd(), metavar="DIR",
                    help="the QEMU git tree (default: the current directory)")
    mu.add_argument("--build-dir", type=Path, metavar="DIR",
                    help="build directory (default: one per tree under the sdqtest cache)")
    mu.add_argument("--only", action="append", metavar="NAME", help="one mutant (repeatable)")
    mu.add_argument("--set", choices=("named", "unnamed", "reach", "drivers", "cve"),
                    default="named",
                    help="named: the regressions of the check's promises, the boards' "
                    "controllers among them (default); unnamed: in areas no scenario names, "
                    "each checked by the default check; reach: one per kind the explorer "
                    "reaches; drivers: on paths real drivers' recordings take; cve: DMA into "
                    "devices, restart without a command, migration inside a block")
    mu.add_argument("--auto", type=int, metavar="N",
                    help="instead of a hand-written set: N mutants drawn from the tree's own "
                    "source (operator flips, constants moved by one, deleted statements ...; "
                    "see harness/bisect/automut.py), each checked by the default x86 check "
                    "(--no-boards -j 2), or in a file only ARM SoCs compile (pl181.c, "
                    "allwinner-sdhost.c, ...) by the default check's boards on the tree's "
                    "qemu-system-aarch64")
    mu.add_argument("--seed", type=int, default=1, help="--auto's seed (default 1): the same "
                    "seed and tree give the same mutants")
    mu.add_argument("--files", default=",".join(DEFAULT_FILES), metavar="F,F",
                    help=f"--auto's files, inside the tree (default {','.join(DEFAULT_FILES)})")
    mu.add_argument("--check-timeout", type=float, default=900.0, metavar="S",
                    help="seconds one mutant's check may take before it counts as timed out "
                    "(default 900)")
    mu.add_argument("--build-timeout", type=float, default=1800.0, metavar="S",
                    help="seconds one build may take (default 1800; the first builds the "
                    "whole tree)")
    mu.add_argument("--budget", type=float, metavar="S",
                    help="start no mutant after S seconds (the rest are reported 'not run')")
    mu.add_argument("--report-dir", type=Path, default=Path("reports/mutants"), metavar="DIR")
    mu.add_argument("--list", action="store_true", help="list the mutants and exit")
    mu.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build a tree with each deliberate hw/sd regression; the check must catch each."""
    from harness.bisect.mutants_cve import CVE
    from harness.bisect.mutants_drivers import DRIVERS
    from harness.bisect.mutants_reach import REACH
    from harness.bisect.mutants_unnamed import UNNAMED
    from harness.provision import build
    from harness.table import print_table

    src = args.qemu_src.resolve()
    sets = {"unnamed": UNNAMED, "reach": REACH, "drivers": DRIVERS, "cve": CVE}
    pool: tuple[mutants.Mutant, ...] = sets.get(args.set, mutants.MUTANTS)
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
            what = m.diff if isinstance(m, automut.AutoMutant) else f"{m.path:26} {m.stands_for}"
            print(f"{m.name:36} {mutants.target(m):8} {what}")
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
                                     timeout=args.build_timeout,
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


def _auto_report(drawn: tuple[automut.AutoMutant, ...], outcomes: list[mutants.MutantOutcome],
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
