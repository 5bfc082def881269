"""A recording boot of U-Boot on a board: Debian's build, driven over its serial console.

The bootloader comes from Debian's packages only (``apt-get download`` of
``u-boot-sunxi:armhf``, ``dpkg-deb -x`` into the cache).  On orangepi-pc QEMU
emulates the H3's boot ROM: it loads the SPL from the SD card at 8 KiB
(``docs/system/arm/orangepi.rst``), so the card is a copy of the image recipe
with ``u-boot-sunxi-with-spl.bin`` written there; the SPL loads U-Boot proper
through the SD controller, before the first phase.  Debian 12 builds no
``orangepi_pc`` target; its ``orangepi_plus`` is the same H3 SoC with the card
on mmc0 at 0x01c0f000, and QEMU's orangepi-pc runs it.  bpim2u (the R40's boot
ROM, ``docs/system/arm/bananapi_m2u.rst``) and cubieboard (from QEMU 10.0 the
A10's, ``hw/arm/cubieboard.c``) load Debian's ``Bananapi_M2_Ultra`` and
``Cubieboard`` builds from the same 8 KiB.  Debian's ``u-boot-rpi`` ``rpi_2``
starts on raspi2b with ``-bios``; QEMU's BCM2836 boot stub holds the secondary
CPUs in a loop reading their mailboxes, so there the memory core's events are
turned on at U-Boot's prompt and the mailbox block's lines dropped
(:class:`TraceFilter`), and a boot that stops early is tried again
(``docs/drivers.md``, "U-Boot").  Its arm64 ``rpi_3`` starts on raspi3b with
``-kernel`` (console on the mini UART, the second serial port) and routes the card
to the SDHOST as ``rpi_2`` does: the same recorder, on the check's
``raspi3b-sdhost`` board.

On sifive_u (RISC-V) Debian 13's ``u-boot-sifive:riscv64`` ``sifive_unleashed``
starts as ``docs/system/riscv/sifive_u.rst`` says: ``msel=11``, the SPL by
``-bios``, ``u-boot.itb`` on the card where the SPL's raw mode reads it, 5 harts
and 8 GiB for U-Boot's own device tree.

The console is driven with pexpect: autoboot stopped, then one *phase* at a time
(:data:`PHASES`), each marked as the Linux guest's are, by a 32-bit write to a
block QEMU leaves unimplemented (U-Boot's ``mw.l``), so the trace of
:mod:`harness.guest.record` events shows the phase's number before its accesses.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect

from harness.guest import runner
from harness.guest.protocol import Transcript
from harness.guest.record import EVENTS, RawRecording, trace_args
from harness.guest.record_board import BOARDS
from harness.paths import cache_dir, folder_lock
from harness.provision.install import InstallError, _run
from harness.qemu.builds import QemuBuild

Log = Callable[[str], None]
PROMPT = "(=> |U-Boot> )"
TIMEOUT = 300.0
#: Where U-Boot's buffer lies (the H3's DRAM starts at 0x40000000).
BUFFER = 0x4200_0000

#: Phase -> (the U-Boot commands, what the guest did); the blocks are the Linux
#: guest's regions (:data:`harness.guest.record_init.REGIONS`), 512-byte blocks.
PHASES: dict[str, tuple[tuple[str, ...], str]] = {
    "probe": (("mmc dev 0", "mmc rescan", "mmc info"),
              "mmc rescan: U-Boot's sunxi_mmc initialises the card (CMD0, 8, ACMD41, CMD2, 3, "
              "9, 7, ACMD51, CMD6, ACMD6), mmc info"),
    "read-512": ((f"mmc read {BUFFER:#x} 0x4000 1",), "mmc read of 1 block (CMD17)"),
    "read-4k": ((f"mmc read {BUFFER:#x} 0x4200 8",), "mmc read of 8 blocks (CMD18, CMD12)"),
    "read-64k": ((f"mmc read {BUFFER:#x} 0x4400 0x80",), "mmc read of 128 blocks"),
    "write-512": ((f"mw.l {BUFFER:#x} 0x5d200512 0x80", f"mmc write {BUFFER:#x} 0x4800 1"),
                  "mmc write of 1 block of a fixed pattern (CMD24)"),
    "write-4k": ((f"mw.l {BUFFER:#x} 0x5d204096 0x400", f"mmc write {BUFFER:#x} 0x4a00 8"),
                 "mmc write of 8 blocks of a fixed pattern (CMD25, CMD12)"),
    "write-64k": ((f"mw.l {BUFFER:#x} 0x5d265536 0x4000", f"mmc write {BUFFER:#x} 0x4c00 0x80"),
                  "mmc write of 128 blocks of a fixed pattern"),
    "erase": (("mmc erase 0x5000 0x800",), "mmc erase of 1 MiB (CMD32, 33, 38)"),
}


@dataclass(frozen=True)
class UbootGuest:
    """Debian's U-Boot for one board: package, build target, file, and how it starts."""

    board: str       #: the recording board (:data:`harness.guest.record_board.BOARDS`)
    package: str
    target: str      #: the directory under /usr/lib/u-boot
    image: str       #: the file booted
    #: where the boot ROM reads it from the card (bytes); None: ``-bios`` loads it
    spl_offset: int | None
    #: regions whose accesses never reach the trace file (:class:`TraceFilter`)
    drop: tuple[str, ...] = ()
    #: commands that open the probe phase (before :data:`PHASES`' own), and what they do
    probe_first: tuple[str, ...] = ()
    probe_first_did: str = ""
    #: the memory core's events turned on from QEMU's monitor at U-Boot's prompt
    #: (the serial line and the monitor share stdio), not from the start
    trace_late: bool = False
    #: boots tried, each given ``boot_timeout`` seconds to reach the prompt
    boots: int = 1
    boot_timeout: float = TIMEOUT
    #: U-Boot's SD host driver (``drivers/mmc/``), for the reader
    driver: str = "sunxi_mmc"
    #: U-Boot's buffer (:data:`BUFFER` where the DRAM starts at 0x40000000)
    buffer: int = BUFFER
    #: Debian architecture of the package
    arch: str = "armhf"
    #: a file of the target loaded with ``-bios`` besides ``image`` on the card (the SPL)
    bios: str = ""
    #: machine properties (``msel=11``), ``-smp`` (0: the board's default) and ``-m``
    #: (0: the recording board's), as the firmware's own device tree wants them
    machine_opts: str = ""
    smp: int = 0
    memory_mib: int = 0
    #: what the probe phase does, where :data:`PHASES`' SD-mode words do not fit
    probe_did: str = ""
    #: ``-kernel`` loads it (QEMU's boot code starts it), not ``-bios``
    kernel: bool = False


#: The BCM2835 SDHOST's probe opening on the raspi boards (peripherals at
#: 0x3F000000): GPFSEL4/5 and SDEDM read and written back, SDHSTS's data flag
#: cleared (write 1 to clear).
SDHOST_RESTORE = ("setexpr.l f4 *0x3f200010", "setexpr.l f5 *0x3f200014",
                  "setexpr.l e *0x3f202034", "mw.l 0x3f200010 ${f4}",
                  "mw.l 0x3f200014 ${f5}", "mw.l 0x3f202034 ${e}", "mw.l 0x3f202020 0x1")
SDHOST_RESTORE_DID = ("GPFSEL4/5 and SDEDM as U-Boot's boot set them written back, "
                      "SDHSTS's data flag cleared (setexpr, mw.l); then ")


UBOOT = {
    "orangepi-pc": UbootGuest("orangepi-pc", "u-boot-sunxi", "orangepi_plus",
                              "u-boot-sunxi-with-spl.bin", 8 << 10),
    # QEMU's docs/system/arm/bananapi_m2u.rst: the R40's boot ROM loads it from 8 KiB
    "bpim2u": UbootGuest("bpim2u", "u-boot-sunxi", "Bananapi_M2_Ultra",
                         "u-boot-sunxi-with-spl.bin", 8 << 10),
    # hw/arm/cubieboard.c (10.0 on): without -kernel, allwinner_a10_bootrom_setup
    # copies 32 KiB from 8 KiB of the card into SRAM A, where the CPU starts
    "cubieboard": UbootGuest("cubieboard", "u-boot-sunxi", "Cubieboard",
                             "u-boot-sunxi-with-spl.bin", 8 << 10),
    # hw/arm/raspi.c: -bios loads it at 0, where the first CPU starts; the other
    # three spin in QEMU's boot stub reading their mailboxes (bcm2836-control),
    # dropped from the trace.  At boot U-Boot's pin control routed the card to the
    # SDHOST (GPFSEL4/5: pins 48-53 ALT0) and its host reset set SDEDM's FIFO
    # thresholds: the probe phase reads the three registers and writes them back,
    # so a replay from reset routes the card and sets SDEDM as U-Boot had, and
    # clears the data flag the boot's reads left in SDHSTS (write 1 to clear).
    # Many boots stop after "DRAM:", with or without the trace: five tries.
    "raspi2b": UbootGuest("raspi2b", "u-boot-rpi", "rpi_2", "u-boot.bin", None,
                          drop=("bcm2836-control",), buffer=0x0100_0000,
                          trace_late=True, boots=5, boot_timeout=60.0,
                          driver="bcm2835_sdhost",
                          probe_first=SDHOST_RESTORE,
                          probe_first_did=SDHOST_RESTORE_DID),
    # hw/arm/raspi.c: -kernel loads the raw image at 0x80000 and starts the first
    # CPU there; write_smpboot64 holds the other three on spin tables in RAM.
    # rpi_3's console is the mini UART (the second serial port).  U-Boot's pin
    # control routes the card to the SDHOST (mmc 0) as on raspi2b: the same
    # restoring probe, the same retried boots.
    "raspi3b-sdhost": UbootGuest("raspi3b-sdhost", "u-boot-rpi", "rpi_3", "u-boot.bin", None,
                                 drop=("bcm2836-control",), buffer=0x0100_0000,
                                 trace_late=True, boots=5, boot_timeout=60.0,
                                 driver="bcm2835_sdhost", arch="arm64", kernel=True,
                                 probe_first=SDHOST_RESTORE,
                                 probe_first_did=SDHOST_RESTORE_DID),
    # docs/system/riscv/sifive_u.rst: msel=11, the SPL by -bios, U-Boot proper
    # (u-boot.itb: OpenSBI and U-Boot) on the card where the SPL's raw mode reads it
    # (CONFIG_SYS_MMCSD_RAW_MODE_U_BOOT_SECTOR 0x822: 1041 KiB); U-Boot's own device
    # tree is the HiFive Unleashed's: 5 harts and 8 GiB, as the real board.  At boot
    # U-Boot's spi-sifive set txmark (1: ip's txwm reads 1 while the FIFO is empty)
    # and left fmt as its last transfer set it; the phases never write txmark, and
    # the replay starts from reset: the probe reads both and writes them back.
    "sifive_u": UbootGuest("sifive_u", "u-boot-sifive", "sifive_unleashed", "u-boot.itb",
                           0x822 * 512, driver="mmc_spi", buffer=0x9000_0000,
                           arch="riscv64", bios="u-boot-spl.bin", machine_opts="msel=11",
                           smp=5, memory_mib=8192,
                           probe_first=("setexpr.l t *0x10050050", "setexpr.l f *0x10050040",
                                        "mw.l 0x10050050 ${t}", "mw.l 0x10050040 ${f}"),
                           probe_first_did="txmark and fmt as U-Boot's boot left them written "
                           "back (setexpr, mw.l); then ",
                           probe_did="mmc dev 0: U-Boot's mmc_spi initialises the card in SPI "
                           "mode (CMD0, 8, ACMD41, CMD58, CMD59, CMD10, 9, ACMD13) and reads "
                           "the partition table (CMD16, 17, 18); mmc rescan initialises it "
                           "again; mmc info"),
}


def phase_commands(u: UbootGuest) -> dict[str, tuple[str, ...]]:
    """Each phase's commands on ``u``'s board: its buffer, its probe's own first."""
    out = {p: tuple(c.replace(f"{BUFFER:#x}", f"{u.buffer:#x}") for c in cmds)
           for p, (cmds, _did) in PHASES.items()}
    out["probe"] = (*u.probe_first, *out["probe"])
    return out


def fetch(u: UbootGuest, log: Log) -> tuple[Path, str]:
    """The U-Boot image (``apt-get download`` and ``dpkg-deb -x``, cached) and the
    package's version."""
    folder = cache_dir() / f"uboot-{u.arch}"
    with folder_lock(folder):
        debs = folder / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not sorted(debs.glob(f"{u.package}_*_{u.arch}.deb")):
            _run(["apt-get", "download", "-q", f"{u.package}:{u.arch}"],
                 what=f"apt-get download {u.package}:{u.arch}", logfile=folder / "fetch.log",
                 timeout=1800, cwd=debs, fix=f"as root: dpkg --add-architecture {u.arch} && "
                 "apt-get update, then rerun")
            log(f"record: apt-get download {u.package}:{u.arch}")
        deb = sorted(debs.glob(f"{u.package}_*_{u.arch}.deb"))[-1]
        stamp = folder / f".{u.package}"
        if not (stamp.exists() and stamp.read_text() == deb.name):
            _run(["dpkg-deb", "-x", deb, folder / "root"], what=f"dpkg-deb -x {deb.name}",
                 logfile=folder / "fetch.log", timeout=600, fix=f"delete {deb}")
            stamp.write_text(deb.name)
        version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True,
                                 text=True, timeout=60, check=False).stdout.strip()
    image = folder / "root/usr/lib/u-boot" / u.target / u.image
    if not image.exists():
        raise InstallError(f"record: {u.package} has no {u.target}/{u.image}")
    return image, version


def _trace_on(child: pexpect.spawn[str]) -> None:
    """The memory core's two events on, from QEMU's monitor (``-serial mon:stdio``:
    Ctrl-A c switches between the serial line and the monitor)."""
    child.send("\x01c")
    child.expect(r"\(qemu\) ", timeout=TIMEOUT)
    for e in EVENTS[:2]:
        child.sendline(f"trace-event {e} on")
        child.expect(r"\(qemu\) ", timeout=TIMEOUT)
    child.send("\x01c")
    child.sendline("")
    child.expect(PROMPT, timeout=TIMEOUT)


def console(child: pexpect.spawn[str], u: UbootGuest, mark: int,
            phases: dict[str, tuple[str, ...]], results: Transcript, log: Log) -> str:
    """Stop autoboot, run every phase of ``phases`` with its mark; U-Boot's version."""
    child.expect("U-Boot (\\d\\S*) ", timeout=u.boot_timeout)
    m = child.match
    version = m.group(1) if isinstance(m, re.Match) else ""
    child.expect("Hit any key to stop autoboot", timeout=u.boot_timeout)
    child.send("\r")
    child.expect(PROMPT, timeout=TIMEOUT)
    if u.trace_late:
        _trace_on(child)
    for n, (phase, commands) in enumerate(phases.items(), 1):
        child.sendline(f"mw.l {mark:#x} {n}")
        child.expect(PROMPT, timeout=TIMEOUT)
        said = ""
        for c in commands:
            child.sendline(c)
            child.expect(PROMPT, timeout=TIMEOUT)
            said += child.before or ""
        bad = re.search(r"(error|fail|ERROR|not OK|Card did not respond)[^\r\n]*", said)
        if bad:
            results.errors.append((phase, bad.group(0)))
        results.results[phase] = {"ok": bad is None}
        log(f"record: {phase}")
    child.sendline(f"mw.l {mark:#x} 0xff")
    child.expect(PROMPT, timeout=TIMEOUT)
    return version


def _card(u: UbootGuest, uboot: Path, image: Path, card: Path) -> list[str]:
    """A copy of ``image`` (with the SPL where the boot ROM reads it); the options
    that load U-Boot another way (``-bios``)."""
    shutil.copyfile(image, card)
    if u.spl_offset is None:
        return ["-kernel" if u.kernel else "-bios", str(uboot)]
    with open(card, "r+b") as f:
        f.seek(u.spl_offset)
        f.write(uboot.read_bytes())
    return ["-bios", str(uboot.parent / u.bios)] if u.bios else []


END = b"sdqtest: end of trace\n"


class TraceFilter:
    """For a board with regions to drop: a FIFO in the trace's place for QEMU's
    log, read by a thread that writes every other line to the trace.  The FIFO is
    held open for both ends (QEMU may open its log more than once); after QEMU
    ends, :meth:`close` writes :data:`END` and waits for the thread to reach it."""

    def __init__(self, drop: tuple[str, ...], trace: Path) -> None:
        self.pipe = trace.with_suffix(".pipe")
        self.pipe.unlink(missing_ok=True)
        os.mkfifo(self.pipe)
        self.fd = os.open(self.pipe, os.O_RDWR)
        self.drop = [f"name '{r}'".encode() for r in drop]
        self.thread = threading.Thread(target=self._run, args=(trace,), daemon=True)
        self.thread.start()

    def _run(self, trace: Path) -> None:
        rest = b""
        with open(trace, "wb") as out:
            while True:
                chunk = os.read(self.fd, 1 << 20)
                data = rest + chunk
                done = END in data
                data = data.split(END, 1)[0] if done else data
                lines = data.split(b"\n")
                rest = b"" if done else lines.pop()
                out.write(b"".join(ln + b"\n" for ln in lines
                                   if ln and not any(d in ln for d in self.drop)))
                if done:
                    return

    def close(self) -> None:
        os.write(self.fd, b"\n" + END)
        self.thread.join(timeout=300)
        os.close(self.fd)
        self.pipe.unlink(missing_ok=True)


def _drive(cmd: list[str], workdir: Path, u: UbootGuest, mark: int,
           phases: dict[str, tuple[str, ...]], results: Transcript, log: Log) -> str:
    """Run ``cmd`` and drive U-Boot's console (``console.log``); its version."""
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", codec_errors="replace",
                          timeout=TIMEOUT)
    with open(workdir / "console.log", "w") as out:
        child.logfile_read = out
        try:
            return console(child, u, mark, phases, results, log)
        except (pexpect.TIMEOUT, pexpect.EOF) as e:
            results.errors.append(("boot", f"U-Boot's console: {type(e).__name__}"))
            return ""
        finally:
            runner._kill(child)


def _boot(build: QemuBuild, u: UbootGuest, uboot: Path, image: Path, workdir: Path,
          phases: dict[str, tuple[str, ...]], log: Log) -> tuple[list[str], str, Transcript]:
    """One boot: a fresh card and trace, the console driven; QEMU's command line,
    U-Boot's version and what the phases said."""
    b = BOARDS[u.board]
    card = workdir / "card.img"
    loads = _card(u, uboot, image, card)
    trace = workdir / "trace.log"
    trace.unlink(missing_ok=True)
    filt = TraceFilter(u.drop, trace) if u.drop else None
    serial = [*["-serial", "null"] * b.serial_index,
              *(["-serial", "mon:stdio"] if u.trace_late else ["-serial", "stdio", "-monitor",
                                                               "none"])]
    targs = trace_args(trace.with_suffix(".pipe") if filt else trace, b.events)
    if u.trace_late:  # the log file and the board's own events only, from the start
        targs = targs[:4] + [x for e in b.events for x in ("-trace", f"enable={e}")]
    machine = f"{b.machine},{u.machine_opts}" if u.machine_opts else b.machine
    cmd = [str(build.binary), "-M", machine, "-m", str(u.memory_mib or b.memory_mib),
           *(["-smp", str(u.smp)] if u.smp else []), "-nodefaults",
           "-no-user-config", "-display", "none", "-no-reboot", *serial, *loads,
           "-drive", f"if=sd,index={b.sd_index},file={card},format=raw", *targs]
    results = Transcript()
    try:
        uver = _drive(cmd, workdir, u, b.mark, phases, results, log)
    finally:
        if filt is not None:
            filt.close()
    return cmd, uver, results


def record(build: QemuBuild, board: str, image: Path, workdir: Path,
           log: Log = print) -> RawRecording:
    """Boot Debian's U-Boot for ``board`` on ``build`` with a copy of ``image`` as the
    card and drive its console; the trace, the card and the console in ``workdir``."""
    u = UBOOT[board]
    b = BOARDS[board]
    uboot, version = fetch(u, log)
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    phases = phase_commands(u)
    for n in range(1, u.boots + 1):
        log(f"record: booting U-Boot on {b.machine} ({build.name}, TCG; boot {n})")
        cmd, uver, results = _boot(build, u, uboot, image, workdir, phases, log)
        if not any(job == "boot" for job, _e in results.errors):
            break
    prov: dict[str, Any] = {
        "guest": {"kernel_package": f"{u.package}:{u.arch}",
                  "kernel_package_version": version,
                  "kernel": f"U-Boot {uver}", "modules": [u.target], "uboot": u.image,
                  "packages": {f"{u.package}:{u.arch}": version}},
        "qemu": {"build": build.name, "version": build.version,
                 "package": build.profile.package},
        "command": [Path(cmd[0]).name, *cmd[1:]], "kernel_command_line": "",
        "card": (f"the image recipe with {u.target}/{u.image} at {u.spl_offset} bytes "
                 f"({'the SPL' if u.bios else 'the boot ROM'}'s"
                 f"{f'; {u.target}/{u.bios} by -bios' if u.bios else ''}); the replay's "
                 "card is the recipe's alone"
                 if u.spl_offset is not None else
                 f"the image recipe (U-Boot by {'-kernel' if u.kernel else '-bios'})"),
        "console_commands": {p: list(c) for p, c in phases.items()},
        "machine": b.machine, "controller": b.controller, "accel": "tcg",
        "board_guest": board, "uboot_guest": board, "phases": list(PHASES),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if u.drop:
        prov["trace_dropped"] = [f"memory_region_ops_* of {r}" for r in u.drop]
    if u.trace_late:
        prov["trace_on"] = ("the memory core's events turned on at U-Boot's prompt from "
                            f"QEMU's monitor (trace-event ... on); boot {n} of {u.boots}")
    return RawRecording(workdir / "trace.log", workdir / "card.img",
                        workdir / "console.log", results, prov, time.monotonic() - start)
