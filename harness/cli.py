"""The ``sdqtest`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from harness.qemu.session import QemuError, install_signal_handlers


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


def _builds(specs: list[str] | None, *, install_missing: bool = True) -> list[object]:
    from harness.qemu import builds, install

    if not specs and not os.environ.get("QTEST_QEMU_BINARY") and install_missing:
        if not install.installed_builds():
            install.install(["all"], log=lambda m: print(m, file=sys.stderr))
    try:
        found = builds.selected(specs)
    except builds.BuildError as e:
        raise UserError(str(e)) from e
    if not found:
        raise UserError("no QEMU build: run 'sdqtest qemu install' or pass --qemu PATH")
    return list(found)


# -- sdqtest qemu ---------------------------------------------------------------------


def cmd_qemu_install(args: argparse.Namespace) -> int:
    from harness.qemu import install

    log: Callable[[str], None] = (lambda m: None) if args.quiet else print
    try:
        install.install(args.names or ["all"], log=log)
    except install.InstallError as e:
        raise UserError(str(e)) from e
    return 0


def cmd_qemu_list(args: argparse.Namespace) -> int:
    from harness.qemu.builds import QemuBuild

    rows = []
    for b in _builds(args.qemu, install_missing=False):
        assert isinstance(b, QemuBuild)
        q35 = b.versioned_machines("q35")
        pc = b.versioned_machines("pc")
        rows.append(
            [
                b.name,
                b.version + (f" ({b.package})" if b.package else ""),
                "yes" if b.has_qtest_accel else "NO",
                f"{q35[0][7:]}..{q35[-1][7:]}" if q35 else "-",
                f"{pc[0][10:]}..{pc[-1][10:]}" if pc else "-",
                "yes" if b.has_sdhci_pci else "NO",
                "yes" if b.has_erase_blocks_as_zero else "no",
                str(b.binary),
            ]
        )
    head = ["build", "query-version", "qtest", "pc-q35", "pc-i440fx", "sdhci-pci",
            "erase-blocks-as-zero", "binary"]
    print_table(head, rows)
    return 0


def cmd_bench_qtest(args: argparse.Namespace) -> int:
    from harness.bench import qtest_bench
    from harness.qemu.builds import QemuBuild

    for b in _builds(args.qemu):
        assert isinstance(b, QemuBuild)
        for line in qtest_bench.run(b.name, b.binary, ops=args.ops, repeats=args.repeats).lines():
            print(line)
    return 0


def print_table(head: Sequence[str], rows: Sequence[Sequence[str]], file: object = None) -> None:
    out = file or sys.stdout
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(),
              file=out)  # type: ignore[call-overload]


# -- parser ----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sdqtest",
        description="QEMU's sd-card and sdhci-pci cross-checked against a golden model.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    def qemu_opt(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--qemu", action="append", metavar="NAME|PATH",
            help="QEMU build: an installed name (7.2, 10.0, 11.1) or a binary path; "
            "repeatable (default: $QTEST_QEMU_BINARY, else every installed build)",
        )

    q = sub.add_parser("qemu", help="install and list QEMU builds")
    qsub = q.add_subparsers(dest="qemu_command", required=True)
    qi = qsub.add_parser("install", help="install Debian's QEMU builds side by side")
    qi.add_argument("names", nargs="*", metavar="7.2|10.0|11.1|all")
    qi.add_argument("--quiet", action="store_true")
    qi.set_defaults(func=cmd_qemu_install)
    ql = qsub.add_parser("list", help="list builds and what each offers")
    qemu_opt(ql)
    ql.set_defaults(func=cmd_qemu_list)

    b = sub.add_parser("bench", help="benchmarks (figures, never pass/fail)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    bq = bsub.add_parser("qtest", help="qtest round trips: naive vs sync vs pipelined")
    qemu_opt(bq)
    bq.add_argument("--ops", type=int, default=3000)
    bq.add_argument("--repeats", type=int, default=5)
    bq.set_defaults(func=cmd_bench_qtest)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    install_signal_handlers()
    args = build_parser().parse_args(argv)
    try:
        rc: int = args.func(args)
        return rc
    except UserError as e:
        print(f"sdqtest: error: {e}", file=sys.stderr)
        return 2
    except QemuError as e:
        print(f"sdqtest: QEMU error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("sdqtest: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
