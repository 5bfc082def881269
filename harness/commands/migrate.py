"""``sdqtest migrate``: the migration matrix, same-build and older->newer pairs."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from harness.commands import failure
from harness.commands.common import (
    check_output,
    document,
    json_option,
    machine_output,
    qemu_option,
    show_progress,
    write_json,
)
from harness.errors import UsageError
from harness.qemu.selection import select_builds
from harness.table import print_table


def register(sub: Any) -> None:
    """``sdqtest migrate``."""
    mg = sub.add_parser("migrate", help="migration matrix: same-build and older->newer pairs",
                        epilog=failure.epilog("0 every cell agrees (quirks and skips "
                                              "included); 1 a cell diverges, errs or crashes"))
    qemu_option(mg)
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
    json_option(mg, "every cell")
    mg.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The migration matrix: pairs x machine types x migration points."""
    check_output("--report-dir", args.report_dir, directory=True)
    with machine_output(args) as stdout:
        return _run(args, stdout)


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
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
                             keep=args.keep_all, progress=show_progress)
    show_progress("")
    if not cells:
        raise UsageError("no pair of the selected builds shares the machine types asked for")
    head, rows = migration.table(cells)
    print_table(head, rows)
    print()
    print("\n".join(migration.summary(cells)))
    bad = {c.status for c in cells} - {"agree", "quirk", "skipped"}
    rc = 1 if bad else 0
    if args.json:
        counts: dict[str, int] = {}
        for c in cells:
            counts[c.status] = counts.get(c.status, 0) + 1
        write_json(document("migrate", {"exit_status": rc, "cells": len(cells),
                                        "by_status": counts},
                            cells=[{"pair": c.pair, "machine": c.machine, "point": c.point,
                                    "status": c.status, "reason": c.reason,
                                    "seconds": round(c.seconds, 3), "pci_lost": c.pci_lost,
                                    "reproducer": c.reproducer} for c in cells]),
                   args.json, stdout)
    return rc
