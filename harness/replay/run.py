"""``sdqtest replay``: each trace on each build, its rewrites and verdict said.

A field report's command line decides the builds it runs on: a
``qemu-system-aarch64``/``-arm`` one on the ARM builds (``--qemu`` ones
that are ARM, else every installed ARM build), any other on the x86 ones.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TextIO

from harness.check import tap
from harness.errors import UsageError
from harness.qemu.builds import QemuBuild
from harness.qemu.selection import select_board_builds, select_builds
from harness.replay import engine, field, rewrite
from harness.table import print_table


def is_arm_report(path: Path) -> bool:
    """Whether the reproducer at ``path`` names an ARM QEMU binary."""
    try:
        argv = field.parse(path.read_text(errors="replace")).argv
    except ValueError:
        return False
    return argv is not None and rewrite.is_arm(argv)


def _is_arm_build(b: QemuBuild) -> bool:
    return rewrite.is_arm([str(b.binary)])


def builds_for(path: Path, specs: list[str] | None) -> list[QemuBuild]:
    """The builds ``path`` replays on (see the module)."""
    arm = is_arm_report(path)
    if specs:
        return [b for b in select_builds(specs) if _is_arm_build(b) == arm]
    if not arm:
        return select_builds(None)
    riscv = "riscv" in (field.parse(path.read_text(errors="replace")).argv or [""])[0]
    return [b for b in select_board_builds(None) if ("riscv" in b.binary.name) == riscv]


def run(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """Replay each trace on each build: refused, crashed, hung, sanitizer
    report or clean; model diff where it can.  Exit status: 3 when QEMU
    crashed, hung or a sanitizer reported on some build, else 1 when the
    model disagreed, else 4 when QEMU refused a command line, else 0."""
    paths = [Path(t) for t in args.trace]
    if args.field:
        paths += engine.field_corpus()
    if not paths:
        raise UsageError("no trace given (a path, or --field for the field corpus)")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"trace {path} does not exist")
    extra = args.qemu_args.split() if args.qemu_args else None
    worst: set[str] = set()
    table: dict[str, dict[str, str]] = {}
    points: list[tap.Point] = []
    for path in paths:
        if len(paths) > 1:
            print(f"{path}:")
        chosen = builds_for(path, args.qemu)
        if not chosen:
            print(f"  skipped: an {'ARM' if is_arm_report(path) else 'x86'} report, "
                  "and no --qemu build of that kind")
            points.append(tap.Point(True, path.stem, "SKIP", "no --qemu build of its kind"))
        for b in chosen:
            res, outcome = _say_one(path, b, args, extra)
            worst.add(outcome)
            table.setdefault(path.stem, {})[b.name] = engine.verdict(res)
            points.append(tap_point(path, b.name, res, outcome))
    if getattr(args, "table", False):
        print_verdicts(table)
    if getattr(args, "tap", None):
        tap.write_stream(tap.stream(points), args.tap, stdout or sys.stdout)
    if "finding" in worst:
        return 3
    if "diff" in worst:
        return 1
    return 4 if "refused" in worst else 0


def print_verdicts(table: dict[str, dict[str, str]]) -> None:
    """Each trace's verdict (:func:`harness.replay.engine.verdict`) on each
    build, one row a trace, one column a build."""
    names = sorted({n for row in table.values() for n in row},
                   key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)])
    print()
    print_table(["report", *names], [[stem, *(row.get(n, "-") for n in names)]
                                     for stem, row in table.items()])


def tap_point(path: Path, build: str, res: engine.ReplayResult, outcome: str) -> tap.Point:
    """``replay --tap``'s point for ``path`` on ``build``: ok when clean, a
    SKIP when QEMU refused the command line, not ok (QEMU's outcome, its
    stderr's last lines, the model's differences) otherwise, as the exit
    status counts them."""
    name = f"{path.stem} {build}"
    if outcome == "ok":
        return tap.Point(True, name)
    if outcome == "refused":
        return tap.Point(True, name, "SKIP", res.summary())
    data = {"verdict": engine.verdict(res), "build": build, "trace": str(path),
            "stderr": [ln for ln in res.stderr.splitlines() if ln.strip()][-8:],
            "model": ([res.model_error] if res.model_error else []) + res.model_diffs[:20]}
    return tap.Point(False, name, diagnostics={"message": res.summary(), "severity": "fail",
                                               "data": data})


def _say_one(path: Path, b: QemuBuild, args: argparse.Namespace,
             extra: list[str] | None) -> tuple[engine.ReplayResult, str]:
    """``path`` on ``b``, said; its worst outcome: finding, diff, refused or ok."""
    try:
        pl = engine.plan(path, b.binary, {*b.profile.machine_types, *b.aliases},
                         machine_type=args.machine, qemu_args=extra, as_is=args.as_is)
    except engine.ReplayError as e:
        raise UsageError(str(e)) from e
    for note in pl.notes:
        print(f"{b.name}: rewrite: {note}")
    res = engine.replay_qemu(b.binary, pl.trace, pl.machine, pl.devices,
                             timeout=args.timeout, argv=pl.argv)
    print(f"{b.name}: {res.summary()}")
    if res.verdict == engine.REFUSED:
        return res, "refused"
    if res.finding:
        tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-8:]
        if tail:
            print("  QEMU's stderr, last lines:\n    " + "\n    ".join(tail))
        return res, "finding"
    if args.no_model:
        return res, "ok"
    if pl.model_reason:
        print(f"  model not run: {pl.model_reason}")
        return res, "ok"
    return res, _model(res, b, pl)


def _model(res: engine.ReplayResult, b: QemuBuild, pl: engine.Plan) -> str:
    """The model on the trace QEMU answered, said; "diff" or "ok"."""
    engine.replay_model(res, b.profile, pl.machine)
    if res.model_error:
        print(f"  model error: {res.model_error}")
        return "diff"
    if res.model_diffs:
        print(f"  model disagrees on {len(res.model_diffs)} reads:")
        for line in res.model_diffs[:20]:
            print(f"    {line}")
        return "diff"
    if res.model_checked:
        print("  model agrees on every register and memory read"
              + (f" ({res.model_reason})" if res.model_reason else ""))
    else:
        print(f"  model not run: {res.model_reason}")
    for line in res.model_adopted[:5]:
        print(f"  adopted (a value QEMU leaves undefined or draws at random): {line}")
    return "ok"
