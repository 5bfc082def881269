"""The ``sdqtest`` command line: each command's parser from its module in
:mod:`harness.commands`, and the dispatch to the function it names."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import harness
from harness.commands import (
    bench,
    bisect,
    bugs,
    check,
    compat,
    coverage,
    drivers,
    explore,
    failure,
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
    p.add_argument("--version", action="version", version=f"%(prog)s {harness.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    with_exit_statuses(p)
    return p


def with_exit_statuses(p: argparse.ArgumentParser) -> None:
    """Every (sub)command's ``--help`` ends with its exit statuses: its own
    epilog's, then those all commands share (:data:`failure.COMMON_EXITS`)."""
    for action in p._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sp in dict.fromkeys(action.choices.values()):
            own = sp.epilog or ""
            internal = sp.get_default("internal_exit")
            if internal is not None:  # bisect-run: git bisect run's codes
                sp.epilog = (own + f"; an internal error of sdqtest exits {internal} "
                             "(git bisect run aborts), with one line and its traceback file")
            elif failure.COMMON_EXITS not in own:
                sp.epilog = (f"{own}; also " if own else "exit status: 0 done; ") \
                    + failure.COMMON_EXITS + "."
            with_exit_statuses(sp)


def main(argv: Sequence[str] | None = None) -> int:
    install_signal_handlers()
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if argv[:1] == ["coverage"] and "--" in argv:  # the rest is for 'check'
        at = argv.index("--")
        argv, passed = argv[:at], argv[at + 1:]
    try:
        args = build_parser().parse_args(argv)
    except Exception as e:  # noqa: BLE001 - a bug of sdqtest before any command ran
        line, rc = failure.internal_error(e)
        print(f"sdqtest: {line}", file=sys.stderr)
        return rc
    if passed:
        args.check_args = passed
    return call(args)


if __name__ == "__main__":
    sys.exit(main())
