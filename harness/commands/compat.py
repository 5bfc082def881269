"""``sdqtest compat``: the machine-compat matrix, QEMU against the model."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.commands import failure
from harness.commands.common import (
    document,
    json_option,
    machine_output,
    qemu_option,
    show_progress,
    write_json,
)
from harness.qemu.selection import select_builds


def register(sub: Any) -> None:
    """``sdqtest compat``."""
    cm = sub.add_parser("compat", help="print the machine-compat matrix (QEMU vs model)",
                        epilog=failure.epilog("0 every cell agrees or is explained; 1 a cell "
                                              "QEMU and the model disagree on"))
    qemu_option(cm)
    json_option(cm, "every realised property against the model's")
    cm.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.check import compat_matrix

    with machine_output(args) as stdout:
        builds = select_builds(args.qemu)
        cells = compat_matrix.matrix(builds, progress=lambda t: show_progress(f"compat {t}"))
        show_progress("")
        rc = compat_matrix.print_matrix(builds, cells, sys.stdout)  # redirected by --json -
        if args.json:
            bad = sum(not c.ok for c in cells)
            write_json(document("compat", {"exit_status": rc, "builds": len(builds),
                                           "cells": len(cells), "match": len(cells) - bad,
                                           "differ": bad},
                                cells=[cell_json(c) for c in cells]), args.json, stdout)
    return rc


def cell_json(c: Any) -> dict[str, Any]:
    """One realised property (:class:`harness.check.compat_matrix.CompatCell`)."""
    return {"build": c.build, "machine": c.machine, "device": c.device, "property": c.prop,
            "expected": c.expected, "actual": c.actual, "ok": c.ok,
            "table_default": c.table_default, "build_default": c.build_default,
            "compat": list(c.compat)}
