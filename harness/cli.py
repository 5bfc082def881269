"""The ``sdqtest`` command line: each command's parser from its module in
:mod:`harness.commands`, and the dispatch to the function it names."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from harness.commands import (
    bench,
    bisect,
    bugs,
    check,
    compat,
    coverage,
    drivers,
    explore,
    fuzz,
    migrate,
    mutants,
    qemu,
    replay,
    review,
)
from harness.commands.common import call
from harness.qemu.session import install_signal_handlers

#: The commands, in the order ``sdqtest --help`` lists them.
COMMANDS = (qemu, check, coverage, compat, migrate, replay, fuzz, bench, bisect, mutants,
            explore, bugs, review, drivers)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sdqtest",
        description="QEMU's sd-card and sdhci-pci cross-checked against a golden model.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    install_signal_handlers()
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if argv[:1] == ["coverage"] and "--" in argv:  # the rest is for 'check'
        at = argv.index("--")
        argv, passed = argv[:at], argv[at + 1:]
    args = build_parser().parse_args(argv)
    if passed:
        args.check_args = passed
    return call(args)


if __name__ == "__main__":
    sys.exit(main())
