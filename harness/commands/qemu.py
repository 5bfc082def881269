"""``sdqtest qemu install|list|build``: Debian's builds side by side, and
QEMU source trees built out of tree."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from harness.commands import failure
from harness.commands.common import (
    document,
    json_option,
    machine_output,
    qemu_option,
    write_json,
)
from harness.errors import UsageError
from harness.qemu.selection import select_builds
from harness.table import print_table


def register(sub: Any) -> None:
    """``sdqtest qemu install|list|build``."""
    q = sub.add_parser("qemu", help="install and list QEMU builds")
    qsub = q.add_subparsers(dest="qemu_command", required=True)
    qi = qsub.add_parser("install", help="install Debian's QEMU builds side by side",
                         epilog=failure.epilog("0 installed; 2 an install step failed"))
    qi.add_argument("names", nargs="*", metavar="7.2|10.0|11.1|all")
    qi.add_argument("--quiet", action="store_true")
    qi.set_defaults(func=run_install)
    ql = qsub.add_parser("list", help="list builds and what each offers",
                         epilog=failure.epilog("0 listed (a build without qtest or a board "
                                               "it cannot run is a row, not a failure)"))
    qemu_option(ql)
    json_option(ql, "the builds and what each offers")
    ql.set_defaults(func=run_list)
    qb = qsub.add_parser("build", help="build a QEMU source tree (x86_64 system emulator) "
                         "out of tree, optionally for coverage")
    qb.add_argument("src", help="a source release (7.2.22, 10.0.13, 10.2.2, 11.0.3, 11.1.1, "
                    "all: fetched from Debian and built into the cache, --qemu VERSION-src) "
                    "or a QEMU source tree")
    qb.add_argument("--bugs", action="store_true",
                    help="with a release: build it with the fixes in harness/bugs/data/ applied")
    qb.add_argument("--fetch-only", action="store_true",
                    help="with a release: download and unpack it, build nothing")
    qb.add_argument("--coverage", action="store_true",
                    help="configure with --enable-gcov (for 'sdqtest coverage')")
    qb.add_argument("--arm", action="store_true",
                    help="also build qemu-system-aarch64 from the same tree (every ARM "
                    "board; with --coverage, 'sdqtest coverage' then runs the boards too)")
    qb.add_argument("--riscv", action="store_true",
                    help="also build qemu-system-riscv64 from the same tree (the RISC-V "
                    "boards, --qemu VERSION-src-riscv; with --coverage, as --arm)")
    qb.add_argument("--sanitize", metavar="LIST", nargs="?", const="address,undefined",
                    help="address,undefined: configure with --enable-asan/--enable-ubsan "
                    "(replay, check and fuzz then report sanitizer findings)")
    qb.add_argument("--build-dir", metavar="DIR",
                    help="default: a folder per tree under the sdqtest cache")
    qb.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    qb.set_defaults(func=run_build)


def run_install(args: argparse.Namespace) -> int:
    from harness.provision import install, install_arm

    log: Callable[[str], None] = (lambda m: None) if args.quiet else print
    try:
        install_arm.install_all(args.names or ["all"], log=log)
    except install.InstallError as e:
        raise UsageError(str(e)) from e
    return 0


def run_list(args: argparse.Namespace) -> int:
    with machine_output(args) as stdout:
        builds = select_builds(args.qemu, install_missing=False)
        _print_builds(builds)
        arm: list[Any] = []
        if not args.qemu:
            arm = _list_arm_builds()
            from harness.qemu import sources

            sources.list_source_builds()
        more = [(b, cannot_run(b)) for b in [x for x in builds if _is_arm(x)]
                + _arm_source_builds(args)]
        lines = [ln for b, cannot in more for ln in _say(b, cannot)]
        if lines:
            print("\n" + "\n".join(lines))
        if args.json:
            rows = [build_json(b) for b in builds if not _is_arm(b)]
            rows += [build_json(b, arm=True, cannot=c) for b, c in arm + more]
            cannot = sum(len(r["cannot_run"]) for r in rows)
            write_json(document("qemu list", {"builds": len(rows) - len(arm) - len(more),
                                              "arm_builds": len(arm) + len(more),
                                              "boards_cannot_run": cannot,
                                              "without_qtest": sum(not r["qtest_accel"]
                                                                   for r in rows)},
                                builds=rows), args.json, stdout)
    return 0


def build_json(b: Any, *, arm: bool = False,
               cannot: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """One build as ``qemu list --json`` gives it."""
    return {"name": b.name, "version": b.version, "package": b.profile.package,
            "binary": str(b.binary), "qtest_accel": b.profile.has_qtest_accel, "arm": arm,
            "pc_q35": b.versioned_machines("q35"), "pc_i440fx": b.versioned_machines("pc"),
            "sdhci_pci": b.has_sdhci_pci, "erase_blocks_as_zero": b.has_erase_blocks_as_zero,
            "boards": _offered(b) if arm else [],
            "cannot_run": [{"board": n, "machine": m, "reason": why}
                           for n, m, why in cannot or []]}


def _offered(b: Any) -> list[str]:
    from harness.hwdefs.boards import BOARDS

    return [x.name for x in BOARDS if b.offers(x.machine)]


def _print_builds(builds: list[Any]) -> None:
    rows = []
    for b in builds:
        q35 = b.versioned_machines("q35")
        pc = b.versioned_machines("pc")
        rows.append(
            [
                b.name,
                b.version + (f" ({b.profile.package})" if b.profile.package else ""),
                "yes" if b.profile.has_qtest_accel else "NO",
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


def _list_arm_builds() -> list[tuple[Any, list[tuple[str, str, str]]]]:
    """The installed board builds, ARM and RISC-V (``check --board``):
    version, qtest, the boards, a line for each board of its target a build
    cannot run; each build and those boards (name, machine type, why)."""
    from harness.qemu import builds

    rows = []
    out = []
    for b in builds.selected_arm():
        rows.append([b.name, b.version + (f" ({b.profile.package})" if b.profile.package
                                          else ""),
                     "yes" if b.profile.has_qtest_accel else "NO",
                     ", ".join(_offered(b)) or "-", str(b.binary)])
        out.append((b, cannot_run(b)))
    if rows:
        print()
        print_table(["board build", "query-version", "qtest", "boards", "binary"], rows)
    lines = [ln for b, cannot in out for ln in _say(b, cannot)]
    if lines:
        print("\n" + "\n".join(lines))
    return out


def _is_arm(b: Any) -> bool:
    return "aarch64" in b.binary.name or "arm" in b.binary.name


def _arm_source_builds(args: argparse.Namespace) -> list[Any]:
    """The board source builds in the cache (``qemu build VERSION --arm``,
    ``--riscv``), probed; none with ``--qemu``."""
    from harness.provision import build, source
    from harness.qemu import builds

    if args.qemu:
        return []
    out = []
    for name, binary in source.source_builds().items():
        if binary.name in (build.ARM_BINARY, build.RISCV_BINARY):
            try:
                out.append(builds.probe(binary, name))
            except builds.BuildError:
                continue  # its row in the source builds' table says why
    return out


def cannot_run(b: Any) -> list[tuple[str, str, str]]:
    """The boards of ``b``'s target (ARM, RISC-V) that build ``b`` cannot run:
    (board, machine type, why), for a machine type it does not offer (its
    query-machines) or one it cannot start (QEMU's words:
    :func:`harness.qemu.cannot_run.board_refusal`)."""
    from harness.check.boards import binary_family
    from harness.hwdefs.boards import BOARDS
    from harness.qemu.cannot_run import board_refusal

    mine = binary_family(str(b.binary))
    out = []
    for x in BOARDS:
        if binary_family(x.binary) != mine:
            continue
        why = (board_refusal(b.binary, x.name) if b.offers(x.machine)
               else f"no machine type {x.machine} (query-machines)")
        if why is not None:
            out.append((x.name, x.machine, why))
    return out


def board_lines(b: Any) -> list[str]:
    """:func:`cannot_run` as ``qemu list`` prints it, one line a board."""
    return _say(b, cannot_run(b))


def _say(b: Any, cannot: list[tuple[str, str, str]]) -> list[str]:
    return [f"[{b.name}] board {n} ({m}): cannot run on this build: {why}"
            for n, m, why in cannot]


def run_build(args: argparse.Namespace) -> int:
    """Build a QEMU source tree (Debian's or upstream) out of tree, optionally for gcov."""
    from pathlib import Path

    from harness.provision import build
    from harness.qemu import sources

    if sources.names_releases(args.src) and not Path(args.src).exists():
        return sources.run_build(args)
    src = Path(args.src).resolve()
    sanitize = tuple(n.strip() for n in (args.sanitize or "").split(",") if n.strip())
    bad = [n for n in sanitize if n not in build.SANITIZERS]
    if bad:
        raise UsageError(f"unknown sanitizer {', '.join(bad)} (address, undefined)")
    suffix = ("-coverage" if args.coverage else "") + ("-arm" if args.arm else "") + (
        "-riscv" if args.riscv else "")
    suffix += ("-" + "-".join(build.SANITIZERS[n] for n in sanitize)) if sanitize else ""
    out = Path(args.build_dir).resolve() if args.build_dir else (
        build.bisect_root().parent / "builds" / (build.tree_dir(src).name + suffix))
    builder = build.QemuTreeBuilder(build_dir=out, coverage=args.coverage, sanitize=sanitize,
                                    arm=args.arm, riscv=args.riscv)
    missing = builder.prerequisites(src)
    if missing:
        raise UsageError(build.format_missing(missing))
    log_path = out.parent / f"{out.name}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"building {src} in {out} (log: {log_path})")
    with log_path.open("w") as log:
        res = builder.build(src, "HEAD", log, args.timeout)
    if not res.ok or res.binary is None:
        raise UsageError(f"build failed: {res.message} (log: {log_path})")
    boards = [out / b for b in builder.binaries if b != build.BINARY]
    print(f"built {res.binary}" + "".join(f" and {b}" for b in boards))
    print(f"use it with: sdqtest check --qemu {res.binary}"
          + "".join(f"; sdqtest check --board --qemu {b}" for b in boards))
    if args.coverage:
        print(f"measure with: sdqtest coverage {out}")
    return 0
