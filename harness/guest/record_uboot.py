"""A recording boot of U-Boot on an ARM board: Debian's build, driven over its serial console.

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
``Cubieboard`` builds from the same 8 KiB.  (Debian's
``u-boot-rpi`` ``rpi_2`` build starts on raspi2b with ``-bios``, but QEMU's
BCM2836 boot stub holds the secondary CPUs in a loop reading their mailboxes,
about 400 000 traced accesses a second, and with the trace on its boot is not
reliable (``docs/drivers.md``, "U-Boot"), so it is not recorded.)

The console is driven with pexpect: autoboot stopped, then one *phase* at a time
(:data:`PHASES`), each marked as the Linux guest's are, by a 32-bit write to a
block QEMU leaves unimplemented (U-Boot's ``mw.l``), so the trace of
:mod:`harness.guest.record` events shows the phase's number before its accesses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect

from harness.guest import runner
from harness.guest.protocol import Transcript
from harness.guest.record import RawRecording, trace_args
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
    spl_offset: int  #: where the boot ROM reads it from the card (bytes)


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
}


def fetch(u: UbootGuest, log: Log) -> tuple[Path, str]:
    """The U-Boot image (``apt-get download`` and ``dpkg-deb -x``, cached) and the
    package's version."""
    folder = cache_dir() / "uboot-armhf"
    with folder_lock(folder):
        debs = folder / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not sorted(debs.glob(f"{u.package}_*_armhf.deb")):
            _run(["apt-get", "download", "-q", f"{u.package}:armhf"],
                 what=f"apt-get download {u.package}:armhf", logfile=folder / "fetch.log",
                 timeout=1800, cwd=debs, fix="as root: dpkg --add-architecture armhf && "
                 "apt-get update, then rerun")
            log(f"record: apt-get download {u.package}:armhf")
        deb = sorted(debs.glob(f"{u.package}_*_armhf.deb"))[-1]
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


def console(child: pexpect.spawn[str], mark: int, results: Transcript, log: Log) -> str:
    """Stop autoboot, run every phase with its mark; U-Boot's version line."""
    child.expect("U-Boot (\\d\\S*) ", timeout=TIMEOUT)
    m = child.match
    version = m.group(1) if isinstance(m, re.Match) else ""
    child.expect("Hit any key to stop autoboot", timeout=TIMEOUT)
    child.send("\r")
    child.expect(PROMPT, timeout=TIMEOUT)
    for n, (phase, (commands, _did)) in enumerate(PHASES.items(), 1):
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


def record(build: QemuBuild, board: str, image: Path, workdir: Path,
           log: Log = print) -> RawRecording:
    """Boot Debian's U-Boot for ``board`` on ``build`` with the SPL on a copy of
    ``image`` and drive its console; the trace, the card and the console in ``workdir``."""
    u = UBOOT[board]
    b = BOARDS[board]
    uboot, version = fetch(u, log)
    workdir.mkdir(parents=True, exist_ok=True)
    card = workdir / "card.img"
    shutil.copyfile(image, card)
    with open(card, "r+b") as f:
        f.seek(u.spl_offset)
        f.write(uboot.read_bytes())
    trace = workdir / "trace.log"
    trace.unlink(missing_ok=True)
    cmd = [str(build.binary), "-M", b.machine, "-m", str(b.memory_mib), "-nodefaults",
           "-no-user-config", "-display", "none", "-no-reboot", "-serial", "stdio",
           "-monitor", "none", "-drive", f"if=sd,index={b.sd_index},file={card},format=raw",
           *trace_args(trace, b.events)]
    start = time.monotonic()
    log(f"record: booting U-Boot on {b.machine} ({build.name}, TCG)")
    results = Transcript()
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", codec_errors="replace",
                          timeout=TIMEOUT)
    with open(workdir / "console.log", "w") as out:
        child.logfile_read = out
        try:
            uver = console(child, b.mark, results, log)
        except (pexpect.TIMEOUT, pexpect.EOF) as e:
            results.errors.append(("boot", f"U-Boot's console: {type(e).__name__}"))
            uver = ""
        finally:
            runner._kill(child)
    prov: dict[str, Any] = {
        "guest": {"kernel_package": f"{u.package}:armhf", "kernel_package_version": version,
                  "kernel": f"U-Boot {uver}", "modules": [u.target], "uboot": u.image,
                  "packages": {f"{u.package}:armhf": version}},
        "qemu": {"build": build.name, "version": build.version,
                 "package": build.profile.package},
        "command": [Path(cmd[0]).name, *cmd[1:]], "kernel_command_line": "",
        "card": f"the image recipe with {u.target}/{u.image} at {u.spl_offset} bytes "
                "(the boot ROM's); the replay's card is the recipe's alone",
        "console_commands": {p: list(c) for p, (c, _d) in PHASES.items()},
        "machine": b.machine, "controller": b.controller, "accel": "tcg",
        "board_guest": board, "uboot_guest": board, "phases": list(PHASES),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return RawRecording(trace, card, workdir / "console.log", results, prov,
                        time.monotonic() - start)
