"""``sdqtest coverage``: hw/sd line, branch and function coverage of a gcov
build of QEMU, by the check."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from harness.commands import check as check_command
from harness.commands import failure
from harness.commands.common import call, check_output, machine_output, parse_one, write_json
from harness.errors import UsageError
from harness.table import print_table


def register(sub: Any) -> None:
    """``sdqtest coverage``."""
    cv = sub.add_parser("coverage", help="line/branch/function coverage of QEMU's hw/sd "
                        "code by the check, from gcov builds of each target, merged")
    cv.add_argument("build_dir", nargs="+",
                    help="QEMU build directory configured with --enable-gcov; several (e.g. "
                    "an x86_64+aarch64 tree and a riscv64 tree of the same source) merge "
                    "into one measurement")
    cv.add_argument("--no-run", action="store_true",
                    help="run nothing: report the counts already on disk")
    cv.add_argument("--no-boards", action="store_true",
                    help="leave out the boards even when a build has qemu-system-aarch64 "
                    "or qemu-system-riscv64 (sdqtest qemu build --arm --coverage)")
    cv.add_argument("--boards", metavar="NAME,...", default="default",
                    help="the boards run on each build's qemu-system-aarch64 and "
                    "qemu-system-riscv64: 'default' (the default check's boards with the "
                    "groups it runs on them, the default), 'all' or names (every group, "
                    "as check --board)")
    cv.add_argument("--keep", action="store_true",
                    help="add to the counts of earlier runs instead of starting at zero")
    cv.add_argument("--functions", nargs="?", const="", metavar="REGEX",
                    help="also list every function (or those matching REGEX)")
    cv.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-': on "
                    "standard output, the text then on standard error)")
    cv.add_argument("--html", metavar="DIR", help="write gcovr's annotated HTML report and a "
                    "Cobertura coverage.xml beside it (needs gcovr: pip install "
                    "'sdqtest[bench]')")
    cv.set_defaults(func=run, check_args=[])
    cv.epilog = ("arguments after '--' go to 'sdqtest check' (e.g. sdqtest coverage BUILD "
                 "-- --group data); " + failure.epilog(
                     "0 measured, every check it ran clean; else the highest status of "
                     "those checks (sdqtest check --help)"))


def board_runs(emulator: str, binary: Path, boards: str,
               chosen: bool = False) -> list[list[str]]:
    """The check on one emulator: the PC check on x86_64; on another, the
    chosen boards whose machine that emulator holds (none: no run).  With
    ``boards`` ``default`` and no ``--group``/``--scenario`` of the user's
    (``chosen``), the runs the default check makes on those boards: its
    groups only (:func:`harness.check.boards.default_scenarios`, a board of
    ``DEFAULT_GROUPS`` with its own), not ``--board``'s every group."""
    from harness.check.boards import DEFAULT_BOARDS, DEFAULT_GROUPS, binary_family
    from harness.hwdefs.boards import BOARDS

    if emulator == "x86_64":
        return [["check", "--qemu", str(binary)]]
    wanted = set(DEFAULT_BOARDS if boards == "default" else
                 (b.name for b in BOARDS) if boards == "all" else boards.split(","))
    unknown = wanted - {b.name for b in BOARDS}
    if unknown:
        raise UsageError(f"no board named {', '.join(sorted(unknown))}")
    # qemu-system-aarch64 holds the 32-bit ARM boards too (a coverage build has no
    # qemu-system-arm): a board runs on any emulator of its family.
    mine = binary_family(binary.name)
    names = [b.name for b in BOARDS if b.name in wanted and binary_family(b.binary) == mine]
    if not names:
        return []
    if boards != "default" or chosen:
        return [["check", "--board", ",".join(names), "--qemu", str(binary)]]
    sets: dict[frozenset[str], list[str]] = {}
    for n in names:
        sets.setdefault(DEFAULT_GROUPS.get(n, default_board_groups()), []).append(n)
    # --group leaves the runs unpaired: a scenario of another bus (the spi
    # group on an SDHCI board) is a run skipped with its reason, by design
    return [["check", "--board", ",".join(members), "--group", ",".join(sorted(groups)),
             "--allow-skips", "--qemu", str(binary)] for groups, members in sets.items()]


def default_board_groups() -> frozenset[str]:
    """The scenario groups the default check runs on a board."""
    from harness.check.boards import default_scenarios
    from harness.scenarios import all_scenarios

    return frozenset(sc.group for sc in default_scenarios(list(all_scenarios().values()),
                                                          False))


def _chosen(check_args: list[str]) -> bool:
    """The arguments after ``--`` choose scenarios (``--group``, ``--scenario``)."""
    return any(a.split("=", 1)[0] in ("--group", "--scenario") for a in check_args)


def _runs(builds: list[Any], args: argparse.Namespace) -> list[list[str]]:
    from harness.check import coverage_merge

    runs: list[list[str]] = []
    for cb in builds:
        for emulator, binary in coverage_merge.emulators(cb).items():
            if emulator == "x86_64" or not args.no_boards:
                got = board_runs(emulator, binary, args.boards, _chosen(args.check_args))
                if not got:
                    print(f"{binary}: none of the chosen boards runs on it (--boards all)")
                runs += got
    return runs


def run(args: argparse.Namespace) -> int:
    """Run the check (or nothing) on gcov builds and report hw/sd coverage.

    A build with ``qemu-system-aarch64`` beside the x86 binary (``qemu build
    --arm``) shares the ``hw/sd`` objects: the boards' runs (``check --board``
    on it) add to the same counts; the counts of separate builds (a riscv64
    tree) are merged afterwards (:mod:`harness.check.coverage_merge`)."""
    check_output("--html", args.html, directory=True)
    if args.html:
        from harness.check import coverage_merge

        if coverage_merge.gcovr_command() is None:
            raise UsageError("--html writes gcovr's report, and gcovr is not installed "
                             "(pip install 'sdqtest[bench]')")
    with machine_output(args) as stdout:
        return _run(args, stdout)


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
    """:func:`run`, the JSON (if asked for) on ``stdout`` for ``--json -``."""
    from harness.check import coverage, coverage_merge

    builds = [coverage.CoverageBuild(Path(d)) for d in args.build_dir]
    for cb in builds:
        if not coverage_merge.emulators(cb):
            raise UsageError(f"{cb.build_dir} holds no "
                             f"{', '.join(coverage_merge.EMULATORS.values())}: build it first")
    boards = not args.no_boards and any(
        t != "x86_64" for cb in builds for t in coverage_merge.emulators(cb))
    rc = 0
    if not args.no_run:
        if not args.keep:
            for cb in builds:
                cb.reset()
        os.environ.update(builds[0].environment())
        for one in _runs(builds, args):
            full = [*one, *args.check_args]
            print(f"running: sdqtest {' '.join(full)}")
            rc = max(rc, call(parse_one(check_command.register, full)))
            print()
    cov = coverage_merge.merge([cb.measure() for cb in builds])
    _print_coverage(builds, cov, args, boards)
    if args.json:
        write_json(cov.to_json(), args.json, stdout)
        print(f"JSON: {args.json}")
    if args.html:
        _html(builds, Path(args.html))
    return rc


def _html(builds: list[Any], out: Path) -> None:
    """gcovr's HTML and Cobertura XML of ``builds`` (gcovr's presence is
    checked before the run)."""
    from harness.check import coverage_merge

    title = "hw/sd coverage: " + ", ".join(str(cb.build_dir) for cb in builds)
    index, xml = coverage_merge.gcovr_report(builds, out, title)
    print(f"HTML: {index}\nCobertura XML: {xml}")


def _print_coverage(builds: list[Any], cov: Any, args: argparse.Namespace,
                    boards: bool) -> None:
    from harness.check import coverage, coverage_merge

    targets = sorted({t for cb in builds for t in coverage_merge.emulators(cb)
                      if t == "x86_64" or boards})
    print(f"coverage of {', '.join(builds[0].roots)} in "
          f"{', '.join(str(cb.build_dir) for cb in builds)} ({', '.join(targets)}):")
    files = sorted({f for cb in builds
                    for f in coverage_merge.tree_files(coverage_merge.source_root(cb))})
    print_table(["file", "lines", "%", "branches", "%", "functions", "%"],
                sorted(coverage.summary_rows(cov) + [
                    [f, "not built", "", "", "", "", ""]
                    for f in coverage_merge.not_built(cov, files)]))
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
