"""``sdqtest replay``: qtest traces (ours, QEMU's, a bug report's) on QEMU and the model."""

from __future__ import annotations

import argparse
from typing import Any

from harness.commands.common import qemu_option
from harness.errors import UsageError
from harness.qemu.selection import select_builds


def register(sub: Any) -> None:
    """``sdqtest replay``."""
    r = sub.add_parser("replay", help="replay a qtest trace on QEMU (and the model)")
    r.add_argument("trace", nargs="*", help="qtest commands, one per line (-qtest stdio "
                   "format), or a bug report's shell form; several may be given")
    r.add_argument("--field", action="store_true",
                   help="also every reproducer of the field corpus (tests/qtest/field/)")
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
    r.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Replay qtest traces on each build: refused, crashed, hung, sanitizer
    report or clean; model diff where it can.  Exit status: 3 when QEMU
    crashed, hung or a sanitizer reported on some build, else 1 when the
    model disagreed, else 4 when QEMU refused a command line, else 0."""
    from pathlib import Path

    from harness.check import replay

    paths = [Path(t) for t in args.trace]
    if args.field:
        paths += replay.field_corpus()
    if not paths:
        raise UsageError("no trace given (a path, or --field for the field corpus)")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"trace {path} does not exist")
    extra = args.qemu_args.split() if args.qemu_args else None
    builds = select_builds(args.qemu)
    worst = {"finding": False, "diff": False, "refused": False}
    for path in paths:
        if len(paths) > 1:
            print(f"{path}:")
        for b in builds:
            try:
                pl = replay.plan(path, b.binary, {*b.profile.machine_types, *b.aliases},
                                 machine_type=args.machine, qemu_args=extra,
                                 as_is=args.as_is)
            except replay.ReplayError as e:
                raise UsageError(str(e)) from e
            for note in pl.notes:
                print(f"{b.name}: rewrite: {note}")
            res = replay.replay_qemu(b.binary, pl.trace, pl.machine, pl.devices,
                                     timeout=args.timeout, argv=pl.argv)
            print(f"{b.name}: {res.summary()}")
            if res.verdict == replay.REFUSED:
                worst["refused"] = True
                continue
            if res.finding:
                worst["finding"] = True
                tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-8:]
                if tail:
                    print("  QEMU's stderr, last lines:\n    " + "\n    ".join(tail))
                continue
            if not args.no_model:
                worst["diff"] |= _model_side(res, b, pl.machine)
    if worst["finding"]:
        return 3
    if worst["diff"]:
        return 1
    return 4 if worst["refused"] else 0


def _model_side(res: Any, b: Any, machine: Any) -> bool:
    """The model replays what QEMU answered; whether it disagreed (or failed)."""
    from harness.check import replay

    replay.replay_model(res, b.profile, machine)
    if res.model_error:
        print(f"  model error: {res.model_error}")
        return True
    if res.model_diffs:
        print(f"  model disagrees on {len(res.model_diffs)} reads:")
        for line in res.model_diffs[:20]:
            print(f"    {line}")
    elif res.model_checked:
        print("  model agrees on every register and memory read"
              + (f" ({res.model_reason})" if res.model_reason else ""))
    else:
        print(f"  model not run: {res.model_reason}")
    for line in res.model_adopted[:5]:
        print(f"  adopted (a value QEMU leaves undefined or draws at random): {line}")
    return bool(res.model_diffs)
