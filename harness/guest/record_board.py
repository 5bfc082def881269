"""A recording boot on a board: Debian's armhf (or riscv64) kernel on the board's own SD controller.

The guest is assembled from Debian's armhf packages only (``dpkg --add-architecture
armhf`` once, as root; then ``apt-get download``): the kernel of ``linux-image-armmp``
with the board's device tree and its SD host modules, and ``busybox-static``; no fio
(its libraries are another architecture's), so the sized phases use busybox's ``dd``
(:mod:`harness.guest.record_init`).  The phase marks are 32-bit writes (busybox
``devmem``) to a block QEMU's board leaves unimplemented, so they show in the trace
as ``memory_region_ops_write`` of that region and change nothing.

Boards (:data:`BOARDS`): ``mcimx7d-sabre`` (i.MX 7Dual SABRE, ``imx7d-sdb.dtb``,
Linux's ``sdhci-esdhc-imx``).  The card sits on usdhc3: of the board's three
uSDHCs, the device tree's usdhc1 (the SD slot) waits for a regulator and a card
detect GPIO QEMU's board does not model and is never probed; usdhc3 (the eMMC slot,
non-removable) is, and an SD card there initialises as in the slot.  Xilinx's Zynq
has no armhf Debian kernel support (``CONFIG_ARCH_ZYNQ`` is off in ``armmp``).

RISC-V: ``sifive_u`` boots Debian's riscv64 kernel (``linux-image-riscv64``: its
``vmlinux`` is an Image QEMU loads with ``-kernel``) on the OpenSBI firmware of the
QEMU build itself (``-bios default``: ``opensbi-riscv64-generic-fw_dynamic.bin`` in
the build's data directory), with the device tree QEMU's board builds (no ``-dtb``:
``hw/riscv/sifive_u.c`` ``create_fdt`` puts an ``mmc-spi-slot`` on SPI2 at
0x10050000, the bus QEMU's ``ssi-sd`` sits on, and the CLINT OpenSBI needs, which
Debian's ``hifive-unleashed-a00.dtb`` lacks: ``docs/system/riscv/sifive_u.rst``).
The card is in SPI mode behind SiFive's SPI controller: Linux's ``spi-sifive`` and
``mmc_spi`` (modules, as are ``mmc_core`` and ``mmc_block`` there).
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

from harness.guest import cpio, runner
from harness.guest.record import RawRecording, trace_args
from harness.guest.record_init import INIT, kernel_args
from harness.guest.record_modules import module_closure, module_index
from harness.paths import cache_dir, folder_lock
from harness.provision import firmware
from harness.provision.install import InstallError, _run
from harness.qemu.builds import QemuBuild

Log = Callable[[str], None]
BOOT_TIMEOUT = 600.0
PHASE_TIMEOUT = 600.0


@dataclass(frozen=True)
class BoardGuest:
    """How to boot and record one board."""

    machine: str          #: QEMU machine type
    arch: str             #: Debian architecture of the guest
    kernel_meta: str      #: the metapackage whose versioned image is booted
    dtb: str              #: device tree file in the image package
    console: str          #: the kernel's console= value
    modules: tuple[str, ...]  #: SD host modules (their dependencies follow)
    sd_index: int         #: -drive if=sd,index=N: the controller the card sits on
    dev: str              #: the card's block device in the guest
    mark: int             #: where the phase marks are written (an unimplemented block)
    mark_region: str      #: that block's region name in the trace
    base: int             #: the card's controller's MMIO base
    controller: str       #: for the reader
    memory_mib: int = 1024
    #: ``-nodefaults`` (vexpress-a9's pl041 wants the default audio backend from 10.0 on)
    nodefaults: bool = True
    #: trace events beside the memory core's (the controller's own DMA events)
    events: tuple[str, ...] = ("sdhci_adma_loop", "sdhci_send_command")
    #: the controller family (:data:`harness.scenarios.drivers_hosts.HOSTS`)
    host: str = "sdhci"
    #: more kernel command line (``maxcpus=1``: one CPU makes every access, in order)
    append: str = ""
    #: ``-bios`` value (``default``: the build's own firmware, RISC-V's OpenSBI); empty: none
    bios: str = ""


BOARDS = {
    "mcimx7d-sabre": BoardGuest(
        "mcimx7d-sabre", "armhf", "linux-image-armmp", "imx7d-sdb.dtb", "ttymxc0,115200",
        ("sdhci-esdhc-imx",), 2, "/dev/mmcblk2", 0x303E0000, "csu", 0x30B60000,
        "usdhc3 (imx-usdhc)"),
    # The MMCI at 0x10005000 (legacy map); the board window starts at the system
    # registers (SYS_MCI: card detect).  The marks: the PL031 RTC's match register
    # (RTCMR, 0x10017004), which nothing in the guest arms.
    "vexpress-a9": BoardGuest(
        "vexpress-a9", "armhf", "linux-image-armmp", "vexpress-v2p-ca9.dtb", "ttyAMA0,115200",
        ("armmmci",), 0, "/dev/mmcblk0", 0x10017004, "pl031", 0x10000000,
        "mmci (pl181)", memory_mib=512, nodefaults=False, events=(), host="pl181"),
    # The SDHOST at 0x3F202000; the board window starts at the GPIO block (the
    # function select that routes the card).  The marks: bcm2835-sdramc, a block
    # QEMU leaves unimplemented.
    "raspi2b": BoardGuest(
        "raspi2b", "armhf", "linux-image-armmp", "bcm2836-rpi-2-b.dtb", "ttyAMA0,115200",
        ("bcm2835",), 0, "/dev/mmcblk0", 0x3FE00000, "bcm2835-sdramc", 0x3F200000,
        "sdhost (bcm2835-sdhost)", events=(), host="sdhost"),
    # The SMHC mmc0 at 0x01c0f000.  The marks: keymem, a block QEMU leaves
    # unimplemented.
    "orangepi-pc": BoardGuest(
        "orangepi-pc", "armhf", "linux-image-armmp", "sun8i-h3-orangepi-pc.dtb",
        "ttyS0,115200", ("sunxi-mmc",), 0, "/dev/mmcblk0", 0x01C0B000, "keymem",
        0x01C0F000, "mmc0 (allwinner-sdhost-sun5i)",
        events=("allwinner_sdhost_process_desc",), host="sunxi", append="maxcpus=1"),
    # The R40's SMHC mmc0 at 0x01c0f000 (QEMU's sun50i-a64 variant).  The marks:
    # keymem, a block QEMU's R40 leaves unimplemented (hw/arm/allwinner-r40.c).
    # Recorded with U-Boot (harness.guest.record_uboot); its Linux guest never was.
    "bpim2u": BoardGuest(
        "bpim2u", "armhf", "linux-image-armmp", "sun8i-r40-bananapi-m2-ultra.dtb",
        "ttyS0,115200", ("sunxi-mmc",), 0, "/dev/mmcblk0", 0x01C0A000, "keymem",
        0x01C0F000, "mmc0 (allwinner-sdhost-sun50i-a64)",
        events=("allwinner_sdhost_process_desc",), host="sunxi", append="maxcpus=1"),
    # The A10's SMHC mmc0 at 0x01c0f000 (QEMU's sun4i variant: the FIFO at 0x100
    # too).  The marks: offset 0x800 of a10-sram-ctrl, the one block QEMU's A10
    # leaves unimplemented (hw/arm/allwinner-a10.c), far from the registers the
    # firmware sets (SRAM mapping at 0x0 and 0x4).  Recorded with U-Boot only.
    "cubieboard": BoardGuest(
        "cubieboard", "armhf", "linux-image-armmp", "sun4i-a10-cubieboard.dtb",
        "ttyS0,115200", ("sunxi-mmc",), 0, "/dev/mmcblk0", 0x01C00800, "a10-sram-ctrl",
        0x01C0F000, "mmc0 (allwinner-sdhost-sun4i)",
        events=("allwinner_sdhost_process_desc",), host="sunxi-a10"),
    # SPI2 at 0x10050000 (hw/riscv/sifive_u.c), an ssi-sd on its chip select 0; no
    # dtb: QEMU's own (see the module docstring).  The marks: the last word of the
    # DDR controller's block (riscv.sifive.u.dmc, 0x100b0000, 64 KiB), which QEMU
    # leaves unimplemented and its device tree does not describe; U-Boot's SPL
    # programs the controller (0x100b0000 to 0x100b8000: its first word's START
    # bit would read as mark 1), never that word.
    "sifive_u": BoardGuest(
        "sifive_u", "riscv64", "linux-image-riscv64", "", "ttySIF0,115200",
        ("mmc_block", "spi-sifive", "mmc_spi"), 0, "/dev/mmcblk0", 0x100BFFFC,
        "riscv.sifive.u.dmc", 0x10050000, "spi2 (sifive.spi) with ssi-sd",
        memory_mib=1024, events=(), host="sifive-spi", bios="default"),
}


def guest_dir(arch: str) -> Path:
    return cache_dir() / f"guest-{arch}"


def _versioned(meta: str, arch: str) -> str:
    out = subprocess.run(["apt-cache", "depends", f"{meta}:{arch}"], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    m = re.search(r"Depends: (linux-image-[^\s:]+)", out)
    if m is None:
        raise InstallError(f"apt-cache knows no {meta}:{arch}: as root, dpkg "
                           f"--add-architecture {arch} && apt-get update")
    return m.group(1)


def fetch(b: BoardGuest, log: Log) -> tuple[Path, dict[str, str]]:
    """``apt-get download`` and ``dpkg-deb -x`` of the kernel and busybox (cached);
    the extraction root and package -> version."""
    folder = guest_dir(b.arch)
    kpkg = _versioned(b.kernel_meta, b.arch)
    with folder_lock(folder):
        debs = folder / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        versions: dict[str, str] = {}
        for pkg in (kpkg, "busybox-static"):
            if not sorted(debs.glob(f"{pkg}_*_{b.arch}.deb")):
                _run(["apt-get", "download", "-q", f"{pkg}:{b.arch}"], what=f"apt-get "
                     f"download {pkg}:{b.arch}", logfile=folder / "fetch.log", timeout=1800,
                     cwd=debs, fix="check the network and apt's sources, then rerun")
                log(f"record: apt-get download {pkg}:{b.arch}")
            deb = sorted(debs.glob(f"{pkg}_*_{b.arch}.deb"))[-1]
            root = folder / "root"
            stamp = folder / f".{pkg}"
            if not (stamp.exists() and stamp.read_text() == deb.name):
                _run(["dpkg-deb", "-x", deb, root], what=f"dpkg-deb -x {deb.name}",
                     logfile=folder / "fetch.log", timeout=600, fix=f"delete {deb}")
                stamp.write_text(deb.name)
            versions[pkg] = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"],
                                           capture_output=True, text=True, timeout=60,
                                           check=False).stdout.strip()
    return folder / "root", versions


def initramfs(root: Path, order: list[tuple[str, bytes]], files: dict[str, bytes],
              out: Path) -> Path:
    """busybox, the modules (``/sdqtest/modules`` in load order), the recording ``/init``
    and ``files``, as one gzip newc archive."""
    bb = next((p for p in (root / "bin/busybox", root / "usr/bin/busybox") if p.exists()),
              root / "bin/busybox")  # trixie's is in /usr/bin
    members = {"bin/busybox": (bb.read_bytes(), True),
               "init": (INIT.encode(), True)}
    for name, data in order:
        members[f"lib/modules/{name}"] = (data, False)
    members["sdqtest/modules"] = ("".join(f"/lib/modules/{n}\n" for n, _ in order)
                                  .encode(), False)
    for p, data in files.items():
        members[p.lstrip("/")] = (data, False)
    dirs = {"dev", "proc", "sys", "tmp", "bin", "sbin", "usr/bin", "usr/sbin", "etc",
            "lib/modules", "sdqtest", "lib", "usr"}
    entries = [cpio.directory(d) for d in sorted(dirs)]
    entries += [cpio.file(p, d, x) for p, (d, x) in sorted(members.items())]
    out.write_bytes(cpio.gz_archive(entries))
    return out


#: The firmware ``-bios default`` loads on a riscv64 machine (QEMU's own OpenSBI).
OPENSBI = "opensbi-riscv64-generic-fw_dynamic.bin"


def _bios(build: QemuBuild, b: BoardGuest) -> list[str]:
    """``-bios`` and, for the build's default firmware, ``-L`` where a build without
    its blobs (a ``+ds`` source build) finds it."""
    if not b.bios:
        return []
    more = firmware.search_args(build.binary, (OPENSBI,)) if b.bios == "default" else []
    return [*more, "-bios", b.bios]


def argv(build: QemuBuild, b: BoardGuest, kernel: Path, dtb: Path, initrd: Path,
         card: Path, append: str, trace: Path) -> list[str]:
    return [str(build.binary), "-M", b.machine,
            "-m", str(b.memory_mib), *(["-nodefaults"] if b.nodefaults else []),
            "-no-user-config", "-display", "none",
            "-no-reboot", "-serial", "stdio", "-monitor", "none",
            *_bios(build, b),
            "-kernel", str(kernel), *(["-dtb", str(dtb)] if b.dtb else []),
            "-initrd", str(initrd),
            "-append", append,
            "-drive", f"if=sd,index={b.sd_index},file={card},format=raw",
            *trace_args(trace, b.events)]


def record(build: QemuBuild, board: str, image: Path, workdir: Path, files: dict[str, bytes],
           log: Log = print) -> RawRecording:
    """Boot ``board``'s recording guest on ``build`` (an ARM build) with a copy of ``image``."""
    b = BOARDS[board]
    root, versions = fetch(b, log)
    kver, index = module_index(root)
    order = module_closure(index, b.modules)
    workdir.mkdir(parents=True, exist_ok=True)
    card = workdir / "card.img"
    shutil.copyfile(image, card)
    initrd = initramfs(root, order, files, workdir / "initrd-record.cpio.gz")
    trace = workdir / "trace.log"
    trace.unlink(missing_ok=True)
    append = (f"console={b.console} panic=-1 loglevel=4 iomem=relaxed sdqtest.mark={b.mark:#x} "
              f"sdqtest.dev={b.dev} {b.append + ' ' if b.append else ''}{kernel_args()}")
    dtb = root / f"usr/lib/linux-image-{kver}" / b.dtb
    kernel = root / f"boot/vmlinuz-{kver}"
    if not kernel.exists():  # riscv64: an uncompressed Image named vmlinux
        kernel = root / f"boot/vmlinux-{kver}"
    cmd = argv(build, b, kernel, dtb, initrd, card, append, trace)
    start = time.monotonic()
    log(f"record: booting {b.machine} on {build.name} (TCG, a minute or more)")
    res = runner.run(cmd, accel="tcg", console_log=workdir / "console.log",
                     boot_timeout=BOOT_TIMEOUT, job_timeout=lambda _job: PHASE_TIMEOUT,
                     on_message=lambda m: log(f"record: {m.kind} {m.job}") if m.job else None)
    kpkg = next(p for p in versions if p.startswith("linux-image-"))
    prov: dict[str, Any] = {
        "guest": {"kernel_package": f"{kpkg}:{b.arch}",
                  "kernel_package_version": versions[kpkg], "kernel": kver,
                  "modules": [n for n, _ in order],
                  "dtb": b.dtb or f"none: {b.machine}'s own (QEMU builds it)",
                  "packages": {f"{k}:{b.arch}": v for k, v in versions.items()}},
        "qemu": {"build": build.name, "version": build.version,
                 "package": build.profile.package},
        "command": [Path(cmd[0]).name, *cmd[1:]], "kernel_command_line": append,
        "machine": b.machine, "controller": b.controller, "accel": "tcg",
        "board_guest": board,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return RawRecording(trace, card, res.console_log, res.transcript, prov,
                        time.monotonic() - start)
