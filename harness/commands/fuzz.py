"""``sdqtest fuzz``: differential fuzzing, random inputs on model and QEMU in lockstep."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from harness.commands import failure
from harness.commands.common import qemu_option, show_progress
from harness.errors import UsageError
from harness.qemu.selection import select_builds


def register(sub: Any) -> None:
    """``sdqtest fuzz``."""
    fz = sub.add_parser("fuzz", help="differential fuzzing: random inputs on model and QEMU",
                        epilog=failure.epilog("0 no finding; 1 a finding (divergence, QEMU "
                                              "crash or hang), its reproducers written"))
    qemu_option(fz)
    fz.add_argument("--time", "--budget", metavar="T",
                    help="time budget per build: 60, 90s, 10m, 1h (default 60 s)")
    fz.add_argument("--count", type=int, metavar="N", help="inputs per build")
    fz.add_argument("--lockstep", choices=("optimistic", "step"), default="optimistic",
                    help="optimistic (default): inputs run ahead on the model's answers, "
                    "anything but agreement run again step by step; step: one round trip "
                    "per operation")
    fz.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    fz.add_argument("--corpus", default="fuzz-corpus", metavar="DIR",
                    help="campaign directory: inputs, findings (default ./fuzz-corpus)")
    fz.add_argument("--machine", default="q35", help="machine type (default q35)")
    fz.add_argument("--strict", action="store_true",
                    help="also report spec deviations (the model following the spec), "
                    "apart from findings")
    fz.add_argument("--shard", default="1/1", metavar="K/N",
                    help="run shard K of N of the campaign's inputs")
    fz.add_argument("--input", action="append", metavar="TRACE",
                    help="a qtest trace (ours, QEMU's -qtest stdio or bug-report shell form) "
                    "to add to the corpus")
    fz.add_argument("--as-is", action="store_true",
                    help="--input command lines as written (no rewrites; see replay --as-is)")
    fz.add_argument("--merge", nargs="+", metavar="DIR",
                    help="merge these campaign directories into --corpus and exit")
    fz.add_argument("--no-reuse", action="store_true",
                    help="launch QEMU afresh for every input instead of resetting one")
    fz.add_argument("--coverage-build", metavar="DIR",
                    help="a gcov build of QEMU (sdqtest qemu build --coverage): fuzz its "
                    "binary, keep inputs that execute new hw/sd lines, report lines covered "
                    "(each input then runs on its own QEMU, which writes its counts as it "
                    "exits)")
    fz.set_defaults(func=run)


def _duration(text: str) -> float:
    """Seconds of ``60``, ``90s``, ``10m`` or ``1h``."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise UsageError(f"bad duration {text!r} (60, 90s, 10m, 1h)") from None


def run(args: argparse.Namespace) -> int:
    """Differential fuzzing: random inputs on model and QEMU in lockstep."""
    from pathlib import Path

    from harness.check import inputs, shard
    from harness.fuzz import campaign, corpus
    from harness.qemu.pool import QemuPool

    if args.merge:
        merged = corpus.merge(Path(args.corpus), [Path(d) for d in args.merge])
        print(f"merged {len(args.merge)} campaign directories into {args.corpus}: "
              f"{len(list(merged.inputs_dir.glob('*.json')))} inputs, "
              f"{len(merged.index)} findings")
        for sig, info in sorted(merged.index.items()):
            print(f"  {sig}  x{info.get('count', 1)}  {info['dir']}")
        return 0
    k, n = shard.parse_shard(args.shard)
    seconds = _duration(args.time) if args.time else (None if args.count else 60.0)
    store = corpus.Corpus(Path(args.corpus))
    builds = select_builds(args.qemu)
    _fuzz_inputs(args, store, builds)
    new_coverage = None
    if args.coverage_build:
        builds, new_coverage = _fuzz_coverage(args.coverage_build)
    total = 0
    for b in builds:
        inputs.check_build(b)
        with QemuPool(enabled=not args.no_reuse and not args.coverage_build) as pool:
            c = campaign.Campaign(b, store, seed=args.seed, strict=args.strict, shard=(k, n),
                                  machine=args.machine, progress=show_progress, pool=pool,
                                  new_coverage=new_coverage, lockstep=args.lockstep)
            st = c.run(seconds=seconds, count=args.count)
        show_progress("")
        _print_campaign(c, st, args.coverage_build)
        total += sum(not f.signature.startswith("spec:") for f in st.found)
    return 1 if total else 0


def _fuzz_inputs(args: argparse.Namespace, store: Any, builds: list[Any]) -> None:
    """Each ``--input`` trace, as operations, into the corpus."""
    from pathlib import Path

    from harness.fuzz.inputs import trace_ops
    from harness.replay.engine import ReplayError

    for path in args.input or []:
        said: list[str] = []
        try:
            ops = trace_ops(Path(path), builds[0].binary, builds[0].profile,
                            as_is=args.as_is, notes=said)
        except ReplayError as e:
            raise UsageError(str(e)) from e
        for note in said:
            print(f"  rewrite: {note}")
        store.add_input(ops)
        print(f"input {path}: {len(ops)} operations added to the corpus")


def _fuzz_coverage(build_dir: str) -> tuple[list[Any], Callable[[], int | None]]:
    """The gcov build to fuzz, and the count of hw/sd lines each call finds
    first executed: counts add to what the build holds (e.g. a check run
    just before), so only lines no earlier run executed count as new."""
    from pathlib import Path

    from harness.check import coverage

    cb = coverage.CoverageBuild(Path(build_dir))
    builds = select_builds([str(cb.binary)])
    os.environ.update(cb.environment())
    seen: set[tuple[str, int]] = cb.measure().lines_hit()

    def new_coverage() -> int | None:
        now = cb.measure().lines_hit()
        fresh = len(now - seen)
        seen.update(now)
        return fresh

    return builds, new_coverage


def _print_campaign(c: Any, st: Any, coverage_build: str | None) -> None:
    """A campaign's status line, its findings, repeats and refusals."""
    print(c.status_line(st) + f" in {st.seconds:.0f} s; outcomes: "
          + ", ".join(f"{s} {v}" for s, v in sorted(st.by_status.items())))
    print(f"  {st.shape()}")
    for f in st.found:
        kind = "spec deviation" if f.signature.startswith("spec:") else f.status
        print(f"  NEW {kind}: {f.signature}\n      {f.reason}\n      shrunk "
              f"{f.original_len} -> {f.shrunk_len} operations in {f.shrink_runs} runs; "
              f"reproducers: {f.directory}")
    for sig, count in sorted(st.repeats.items()):
        print(f"  known {sig}: hit {count} more times")
    for sig, count in sorted(st.unconfirmed.items()):
        print(f"  not a finding: {sig} x{count} (passes on a fresh QEMU: state left by "
              "an earlier input on the reused process, or flaky)")
    for line in st.unshrunk:
        print(f"  left unshrunk: {line}")
    if coverage_build:
        print(f"  hw/sd lines first executed by this campaign: {st.coverage or 0} "
              f"(all runs' counts, per file: sdqtest coverage {coverage_build} "
              "--no-run)")
