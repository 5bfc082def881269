"""``sdqtest drivers``: real drivers' recorded traffic (record, list, ledger evidence)."""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.commands.common import qemu_option

#: The image recipe a recording's card starts from (the replay makes the same).
RECIPE = "sdsc-16m"
#: Requests of each kind a long phase keeps: SDHCI's DMA moves a request's data
#: in a few operations; a PIO host's driver makes an access per word (a 64 KiB
#: request is 16384 of them), so its phases keep one request of each kind.
PER_KIND = 4
PER_KIND_PIO = 1


def register(sub: Any) -> None:
    """``sdqtest drivers record|list|ledger``."""
    p = sub.add_parser("drivers", help="real drivers' controller traffic: record a Linux "
                       "guest, list the recordings, the ledger's driver evidence",
                       description="The drivers scenario group replays these recordings in "
                       "every check (docs/drivers.md).")
    ds = p.add_subparsers(dest="drivers_command", required=True)
    r = ds.add_parser("record", help="boot Debian's kernel under TCG with QEMU's trace on "
                      "and write the recording (a minute or more)")
    qemu_option(r)
    r.add_argument("--board", help="a board instead of a PC (mcimx7d-sabre, ast2600-evb, "
                   "smdkc210, ...: record_board.BOARDS): Debian's armhf or arm64 kernel on "
                   "the board's own controller, on an ARM build; microchip-icicle-kit and "
                   "sifive_u (the card in SPI mode): Debian's riscv64 kernel, on a RISC-V "
                   "build")
    r.add_argument("--uboot", action="store_true",
                   help="Debian's U-Boot for the board instead of Linux (orangepi-pc, bpim2u, "
                   "cubieboard, raspi2b, raspi3b-sdhost, sifive_u), "
                   "driven over its serial console")
    r.add_argument("--kernel-package", metavar="PKG",
                   help="another of Debian's amd64 kernels for the PC guest (e.g. "
                   "linux-image-6.12.117+deb13-amd64; default: linux-image-amd64's)")
    r.add_argument("--name", default="", help="recording name (default: linux-KVER-sdhci-pci)")
    r.add_argument("--out", help="file to write (default: the drivers group's data folder)")
    r.add_argument("--keep", help="keep the trace, console and card image in this folder")
    r.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="convert the boot a --keep folder holds instead of booting")
    r.add_argument("--per-kind", type=int, default=None,
                   help=f"requests of each kind a long phase keeps (default {PER_KIND}; "
                   f"{PER_KIND_PIO} on a controller without DMA descriptors)")
    r.set_defaults(func=run_record)
    s = ds.add_parser("list", help="the recordings: source, phases, size")
    s.set_defaults(func=run_list)
    e = ds.add_parser("evidence", help="replay the recordings on each build (default and "
                      "strict) and measure which ledger entries they meet")
    qemu_option(e)
    e.add_argument("--write", action="store_true",
                   help="rewrite harness/ledger/driver_evidence.json with what was measured")
    e.add_argument("--report-dir", default="reports", metavar="DIR")
    e.set_defaults(func=run_evidence)
    c = ds.add_parser("coverage", help="the model's branch coverage by the recordings' "
                      "traffic alone, beside the explore corpus's (the model alone, no QEMU)")
    c.set_defaults(func=run_coverage)
    g = ds.add_parser("ledger", help="every ledger entry with the recorded drivers that "
                      "meet it")
    g.add_argument("--markdown", action="store_true", help="a Markdown table (the docs')")
    g.set_defaults(func=run_ledger)


def run_record(args: argparse.Namespace) -> int:
    """Record one boot on the first selected build (or convert a kept one) and write
    its data."""
    from harness.scenarios import drivers, drivers_convert

    with tempfile.TemporaryDirectory(prefix="sdqtest-record-") as tmp:
        if args.from_dir:
            raw = _kept(Path(args.from_dir))
        else:
            build = _record_build(args)
            work = Path(args.keep) if args.keep else Path(tmp)
            raw = _boot(args, build, work)
            if args.keep:
                _keep(raw, work)
        if raw.transcript.errors:
            job, err = raw.transcript.errors[0]
            print(f"sdqtest drivers record: the guest failed in {job}: {err}", file=sys.stderr)
            return 1
        rec = _convert(args, raw)
    out = Path(args.out) if args.out else drivers.DATA / f"{rec['name']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(drivers_convert.dump(rec))
    n = sum(len(p["ops"]) for p in rec["phases"])
    print(f"{out}: {len(rec['phases'])} phases, {n} operations "
          f"(boot {raw.seconds:.0f} s under TCG on QEMU {raw.provenance['qemu']['version']})")
    return 0


def _convert(args: argparse.Namespace, raw: Any) -> dict[str, Any]:
    """The recording's data from the boot's trace and card image."""
    from harness import images
    from harness.guest import record_board, record_init
    from harness.hwdefs.layouts import layout_of
    from harness.scenarios import (
        drivers_convert,
        drivers_hosts,
        drivers_idma,
        drivers_pio,
        drivers_trace,
    )

    recipe = images.recipe(RECIPE)
    names = list(raw.provenance.get("phases", record_init.PHASES))
    board = raw.provenance.get("board_guest")
    per_kind = args.per_kind or PER_KIND
    if board is None:
        phases = drivers_trace.read_trace(raw.trace, names)
        ops, ctx = drivers_convert.convert(phases, raw.image_after, recipe,
                                           record_init.PATTERNS, per_kind, None)
        return recording(raw, ops, ctx, args.name, per_kind, None)
    b = record_board.BOARDS[board]
    host = drivers_hosts.HOSTS[b.host]
    sdhci = b.host in drivers_hosts.SDHCI_FAMILY
    if not sdhci and "uboot_guest" not in raw.provenance:
        per_kind = args.per_kind or PER_KIND_PIO
    phases = drivers_trace.read_trace(raw.trace, names, tuple(n for n, _ in host.regions),
                                      b.mark)
    if sdhci:
        pio = not any(isinstance(e, drivers_trace.TraceDescriptor)
                      for evs in phases.values() for e in evs)
        per_kind = args.per_kind or (PER_KIND_PIO if pio else PER_KIND)
        ops, ctx = drivers_convert.convert(phases, raw.image_after, recipe,
                                           record_init.PATTERNS, per_kind, b.base,
                                           layout_of(_check_board(board)))
        if pio:  # a word per access through BDATA: the per-block loops folded
            ops = [{**ph, "ops": drivers_pio.fold(ph["ops"])} for ph in ops]
            ctx.pio = True
    else:
        ctx = drivers_convert.ConvertContext(b.base, raw.image_after.read_bytes(), recipe,
                                             dict(record_init.PATTERNS))
        special = drivers_idma.special if b.host.startswith("sunxi") else None
        if b.host == "sifive-spi":
            from harness.scenarios import drivers_spi
            ops = drivers_spi.convert(phases, ctx, per_kind, host)
        else:
            ops = drivers_pio.convert(phases, ctx, per_kind, host, special)
    rec = recording(raw, ops, ctx, args.name, per_kind, board)
    if not sdhci:
        rec = {k: v for k, v in rec.items() if not k.startswith("adma_end")}
        rec["host"] = b.host
    return rec


def _keep(raw: Any, work: Path) -> None:
    """What ``--from`` needs besides the trace and the image: provenance, results."""
    import json

    (work / "recording.json").write_text(json.dumps({
        "provenance": raw.provenance, "results": raw.transcript.results,
        "seconds": raw.seconds}, indent=1) + "\n")


def _kept(folder: Path) -> Any:
    """The boot a ``--keep`` folder holds, as :func:`_boot` returned it."""
    import json

    from harness.errors import UsageError
    from harness.guest.protocol import Transcript
    from harness.guest.record import RawRecording

    try:
        data = json.loads((folder / "recording.json").read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{folder} holds no kept recording ({e})") from None
    return RawRecording(folder / "trace.log", folder / "card.img", folder / "console.log",
                        Transcript(results=data["results"]), data["provenance"],
                        data["seconds"])


def _record_build(args: argparse.Namespace) -> Any:
    """The build to record on (11.1, or 11.1-arm with ``--board``, 11.1-riscv for a
    RISC-V board)."""
    from harness.errors import UsageError
    from harness.guest import record_board
    from harness.qemu.selection import select_board_builds, select_builds

    if args.board is None:
        chosen = [b for b in select_builds(args.qemu or ["11.1"]) if b.has_sdhci_pci]
        if not chosen:
            raise UsageError("no selected build has sdhci-pci and sd-card")
        return chosen[0]
    if args.board not in record_board.BOARDS:
        raise UsageError(f"no recording guest for board {args.board}; known: "
                         f"{', '.join(record_board.BOARDS)}")
    if args.uboot:
        from harness.guest import record_uboot
        if args.board not in record_uboot.UBOOT:
            raise UsageError(f"no U-Boot recording for board {args.board}; known: "
                             f"{', '.join(record_uboot.UBOOT)}")
    default = "11.1-riscv" if record_board.BOARDS[args.board].arch == "riscv64" else "11.1-arm"
    return select_board_builds(args.qemu or [default])[0]


def _boot(args: argparse.Namespace, build: Any, work: Path) -> Any:
    from harness import images
    from harness.guest import record, record_board, record_init

    image = images.ensure(RECIPE)

    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.board is None:
        return record.record(build, image, work, {}, log=log,
                             kernel_package=args.kernel_package)
    if args.uboot:
        from harness.guest import record_uboot
        return record_uboot.record(build, args.board, image, work, log=log)
    files = {}
    for phase, pat in record_init.PATTERNS.items():
        if phase.startswith("write-"):
            _block, bs, n = record_init.REGIONS[phase]
            files[f"sdqtest/{phase}.bin"] = pat * (bs * n // len(pat))
    return record_board.record(build, args.board, image, work, files, log=log)


def recording(raw: Any, phases: list[dict[str, Any]], ctx: Any, name: str,
              per_kind: int, board: str | None = None) -> dict[str, Any]:
    """The recording's data: provenance, what the guest did, the phases."""
    from harness.guest import record_init
    from harness.scenarios import drivers

    prov = dict(raw.provenance)
    kver = prov["guest"]["kernel"]
    cmd = prov["command"]  # the recorder's files by name (the kernel command line as is)
    prov["command"] = [a if i and cmd[i - 1] == "-append" else
                       re.sub(r"/(?:[^/,\s]+/)*([^/,\s]+)", r"\1", a) for i, a in enumerate(cmd)]
    did = record_init.DID if board is None else record_init.DID_DD
    uboot = "uboot_guest" in prov
    if uboot:
        from harness.guest import record_uboot
        ug = record_uboot.UBOOT[prov["uboot_guest"]]
        did = {p: d.replace("sunxi_mmc", ug.driver)
               for p, (_c, d) in record_uboot.PHASES.items()}
        did["probe"] = ug.probe_first_did + (ug.probe_did or did["probe"])
    mods = ", ".join(m.removesuffix(".ko") for m in prov["guest"]["modules"])
    if board is not None and not uboot:
        core = "" if "mmc_block" in mods else " (mmc_core and mmc_block are built in)"
        did = {**did, "probe": f"insmod {mods}{core}: the driver probes the controller and "
               "initialises the card, mmc_block reads the partition table"}
    for ph in phases:
        ph["did"] = did.get(ph["name"], "")
    rewritten = sum(1 for n in ctx.written.values() if n > 1)
    host = "sdhci-pci" if board is None else prov["guest"]["modules"][-1].removesuffix(".ko")
    extra = {} if board is None else {"board": _board_name(board)}
    default = f"linux-{kver.split('-')[0]}-{host}" + (f"-{board}" if board else "")
    driver = f"Linux {kver} {host} ({mods})"
    if uboot:  # kver: "U-Boot 2023.01+dfsg-2+deb12u3"
        from harness.guest import record_board
        bg = record_board.BOARDS[prov["uboot_guest"]]
        default = (f"uboot-{kver.split()[-1].split('+')[0]}-{bg.host.split('-')[0]}-"
                   f"{bg.machine}")
        driver = f"{kver} {prov['guest']['kernel_package'].split(':')[0]} ({host})"
    return {
        "format": drivers.FORMAT,
        "name": name or default,
        "driver": driver,
        "image": RECIPE, **extra,
        "adma_end": "nop-end" if ctx.end_unseen else "",
        "adma_end_why": _adma_end_why(ctx),
        "rca_recorded": f"{ctx.rca:#06x}",
        "byte_addressed": ctx.byte_addressed,
        "trimmed": f"long phases keep their first {per_kind} requests of each kind and "
                   "their last",
        "blocks_written_twice": rewritten,
        "source": prov,
        "guest_results": {k: v for k, v in raw.transcript.results.items()},
        "phases": phases,
    }


def _adma_end_why(ctx: Any) -> str:
    """Why the recording's ADMA2 tables end as they do (or why it has none)."""
    if ctx.pio:
        return ("no ADMA2 table: the driver moved every block by PIO through the Buffer "
                "Data Port (the capabilities it uses offer no DMA)")
    if ctx.end_unseen:
        return ("Linux drivers/mmc/host/sdhci.c sdhci_adma_table_pre ends every ADMA2 table "
                "with a nop-end-valid descriptor; QEMU stops at the block count and never "
                "fetches it, so the trace cannot show it")
    return ("every table's last descriptor fetched carries End (Linux's "
            "SDHCI_QUIRK_NO_ENDATTR_IN_NOPDESC path: no descriptor after it)")


def _board_name(guest: str) -> str:
    """The board's name in the check (``mcimx7d``) for recording guest ``guest``
    (:data:`harness.guest.record_board.BOARDS`), or its machine type if no board has it."""
    from harness.guest import record_board

    b = _check_board(guest)
    return b.name if b is not None else record_board.BOARDS[guest].machine


def _check_board(guest: str) -> Any:
    """The check's board (:mod:`harness.hwdefs.boards`) recording guest ``guest`` ran
    on: the board of its machine type; of boards sharing one (raspi3b's SDHCI and
    SDHOST) the one whose controller variant is the guest's host family."""
    from harness.guest import record_board
    from harness.hwdefs.boards import boards_of

    g = record_board.BOARDS[guest]
    found = boards_of(g.machine)
    mine = [b for b in found if b.variant == g.host]
    return (mine or found)[0] if found else None


def run_list(args: argparse.Namespace) -> int:
    """Each recording: its driver, source, phases and size."""
    from harness.scenarios import drivers

    for rec in drivers.recordings():
        src = rec["source"]
        print(f"{rec['name']}: {rec['driver']}")
        print(f"  guest: {src['guest']['kernel_package']} "
              f"{src['guest']['kernel_package_version']}; QEMU {src['qemu']['version']} "
              f"({src['qemu']['package']}), {src['machine']} {src['controller']}, "
              f"{src['accel']}; recorded {src['recorded_at']}")
        for ph in rec["phases"]:
            rd = ph["recorded"]
            print(f"  {ph['name']:10} {len(ph['ops']):4} ops (recorded {rd['accesses']} "
                  f"accesses, {rd['requests']} requests; kept {ph['kept']['requests']}): "
                  f"{ph['did']}")
    return 0


def run_evidence(args: argparse.Namespace) -> int:
    """Measure the driver evidence on the selected x86 builds; print it, maybe write it."""
    import json

    from harness.check import driver_evidence
    from harness.commands.common import show_progress
    from harness.ledger import drivers as ledger_drivers
    from harness.qemu.selection import select_board_builds, select_builds
    from harness.table import print_table

    builds = [b for b in select_builds(args.qemu) if b.has_sdhci_pci]
    arm = [] if args.qemu else select_board_builds(None)
    ev = driver_evidence.measure(builds, arm, Path(args.report_dir), show_progress)
    show_progress("")
    data = driver_evidence.to_json(ev, builds + arm)
    rows = [[k, "; ".join(f"{u['recording']}: {', '.join(u['phases'])} ({u['how']}; "
                          f"{', '.join(u['builds'])})" for u in uses)]
            for k, uses in data["entries"].items()]
    print_table(["entry", "recorded drivers that meet it"], rows)
    if args.write:
        ledger_drivers.FILE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {ledger_drivers.FILE}")
    return 0


def _arcs(report: dict[str, Any]) -> set[tuple[str, int, int]]:
    """Every branch arc a coverage.py JSON report says was taken."""
    return {(Path(f).name, a, b) for f, d in report["files"].items()
            for a, b in d.get("executed_branches", [])}


def run_coverage(args: argparse.Namespace) -> int:
    """The model's branches the recordings take (on the model alone, the newest
    profile, each on its own machine), beside those the explore corpus takes."""
    import dataclasses

    from harness.check.boards import DEFAULT_BOARDS
    from harness.explore import report
    from harness.hwdefs.boards import by_name
    from harness.profile import NEWEST
    from harness.scenarios import REGISTRY, drivers
    from harness.scenarios import explore as corpus

    recs = [sc for sc in REGISTRY.values() if sc.group == drivers.GROUP]
    inputs = [sc for sc in REGISTRY.values() if sc.group == corpus.GROUP]
    errors: dict[str, str] = {}

    on_boards = dataclasses.replace(NEWEST, machine_types=tuple(
        by_name(n).machine for n in DEFAULT_BOARDS))  # the newest profile, on a board

    def replay() -> None:
        errors.update(report.run_on_model(recs, NEWEST))
        errors.update(report.run_on_boards(recs, [on_boards], DEFAULT_BOARDS))

    mine = report.measure(replay)
    theirs = report.measure(lambda: errors.update(report.run_on_model(inputs, NEWEST)))
    d, e = _arcs(mine), _arcs(theirs)
    total = sum(x["summary"]["num_branches"] for x in mine["files"].values())
    print(f"model branches taken on the model alone ({total} in the files they reach):")
    print(f"  real drivers' recordings ({len(recs)}): {len(d)}")
    print(f"  explore corpus ({len(inputs)} inputs):  {len(e)}")
    print(f"  by the recordings and not the corpus:  {len(d - e)}")
    by_file: dict[str, int] = {}
    for f, _a, _b in sorted(d - e):
        by_file[f] = by_file.get(f, 0) + 1
    for f, n in sorted(by_file.items(), key=lambda x: -x[1]):
        print(f"    {f}: {n}")
    print(f"  by the corpus and not the recordings:  {len(e - d)}")
    for name, err in sorted(errors.items()):
        print(f"  (not measured: {name}: {err})")
    return 0


def run_ledger(args: argparse.Namespace) -> int:
    """Every ledger entry and the recorded drivers that meet it."""
    from harness.ledger import LEDGER
    from harness.ledger.drivers import evidence_text
    from harness.table import print_table

    rows = [[k, str(d.scope), evidence_text(k)] for k, d in LEDGER.items()]
    if args.markdown:
        print("| entry | scope | recorded drivers that meet it |\n| --- | --- | --- |")
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
        return 0
    print_table(["entry", "scope", "recorded drivers that meet it"], rows)
    return 0
