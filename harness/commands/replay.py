"""``sdqtest replay``: qtest traces (ours, QEMU's, a bug report's) on QEMU and the model."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from harness.commands import failure
from harness.commands.common import check_output, qemu_option


def register(sub: Any) -> None:
    """``sdqtest replay``."""
    r = sub.add_parser("replay", help="replay a qtest trace on QEMU (and the model)",
                       epilog=failure.epilog(
                           "0 clean; 1 the model disagrees or raises; 3 QEMU crashed, hung or "
                           "a sanitizer reported, on some build; 4 QEMU refused a command line"))
    r.add_argument("trace", nargs="*", help="qtest commands, one per line (-qtest stdio "
                   "format), or a bug report's shell form; several may be given")
    r.add_argument("--field", action="store_true",
                   help="also every reproducer of the field corpus (harness/replay/field/)")
    r.add_argument("--as-is", action="store_true",
                   help="run a field command line as written: no -drive if=sd, accelerator "
                   "or machine type rewrites")
    qemu_option(r)
    r.add_argument("--machine", help="machine type (default: the one recorded in the "
                   "trace's header, else q35)")
    r.add_argument("--qemu-args", help="devices and options instead of the trace's "
                   "(default: from the trace's header, else sdhci-pci + sd-card)")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per command")
    r.add_argument("--no-model", action="store_true", help="do not run the model")
    r.add_argument("--table", action="store_true", help="end with each trace's verdict per build")
    r.add_argument("--tap", metavar="FILE|-", nargs="?", const="-",
                   help="write each trace on each build as a TAP 14 test point (not ok: "
                   "QEMU crashed, hung or a sanitizer reported, or the model disagrees; "
                   "SKIP: QEMU refused the command line), for meson test; no FILE or '-': "
                   "on standard output, the rest then on standard error")
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``sdqtest replay`` (:func:`harness.replay.run.run`); with ``--tap -``
    the TAP is standard output and what it says goes to standard error."""
    from harness.replay import run as replay_run

    check_output("--tap", args.tap)
    stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr) if args.tap == "-" \
            else contextlib.nullcontext():
        return replay_run.run(args, stdout)
