"""``sdqtest coverage``: hw/sd line, branch and function coverage of a gcov
build of QEMU, by the check."""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from harness.commands import check as check_command
from harness.commands import failure
from harness.commands.common import call, check_output, machine_output, parse_one, write_json
from harness.errors import UsageError
from harness.table import print_table


def register(sub: Any) -> None:
    """``sdqtest coverage``."""
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
    cv.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-': on "
                    "standard output, the text then on standard error)")
    cv.add_argument("--html", metavar="DIR", help="write an annotated HTML report")
    cv.set_defaults(func=run, check_args=[])
    cv.epilog = ("arguments after '--' go to 'sdqtest check' (e.g. sdqtest coverage BUILD "
                 "-- --group data); " + failure.epilog(
                     "0 measured, every check it ran clean; else the highest status of "
                     "those checks (sdqtest check --help)"))


def run(args: argparse.Namespace) -> int:
    """Run the check (or nothing) on a gcov build and report hw/sd coverage.

    A build with ``qemu-system-aarch64`` beside the x86 binary (``qemu build
    --arm``) shares the ``hw/sd`` objects: the boards' runs (``check --board``
    on it) add to the same counts, and the reachable set then leaves out only
    what no board reaches."""
    check_output("--html", args.html, directory=True)
    with machine_output(args) as stdout:
        return _run(args, stdout)


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
    """:func:`run`, the JSON (if asked for) on ``stdout`` for ``--json -``."""
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
            rc = max(rc, call(parse_one(check_command.register, full)))
            print()
    cov = cb.measure()
    _print_coverage(cb, cov, args, boards)
    if args.json:
        write_json(cov.to_json(), args.json, stdout)
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
