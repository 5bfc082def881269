"""``sdqtest compat``: the machine-compat matrix, QEMU against the model."""

from __future__ import annotations

import argparse
from typing import Any

from harness.commands import failure
from harness.commands.common import qemu_option, show_progress
from harness.qemu.selection import select_builds


def register(sub: Any) -> None:
    """``sdqtest compat``."""
    cm = sub.add_parser("compat", help="print the machine-compat matrix (QEMU vs model)",
                        epilog=failure.epilog("0 every cell agrees or is explained; 1 a cell "
                                              "QEMU and the model disagree on"))
    qemu_option(cm)
    cm.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.check import compat_matrix

    builds = select_builds(args.qemu)
    cells = compat_matrix.matrix(builds, progress=lambda t: show_progress(f"compat {t}"))
    show_progress("")
    return compat_matrix.print_matrix(builds, cells)
