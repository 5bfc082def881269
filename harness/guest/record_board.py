"""A recording boot on a board: Debian's armhf, arm64 or riscv64 kernel on the board's
own SD controller.

The guest is assembled from Debian's armhf packages only (``dpkg --add-architecture
armhf`` once, as root; then ``apt-get download``): the kernel of ``linux-image-armmp``
with the board's device tree and its SD host modules, and ``busybox-static``; raspi3b's
is arm64's (``linux-image-arm64``, whose gzip'd ``Image`` QEMU's ``-kernel`` unpacks,
and a copy of ``broadcom/bcm2837-rpi-3-b.dtb`` changed by ``fdtput``:
:attr:`BoardGuest.dtb_edits`); no fio
(its libraries are another architecture's), so the sized phases use busybox's ``dd``
(:mod:`harness.guest.record_init`).  The phase marks are 32-bit writes (busybox
``devmem``) to a block QEMU's board leaves unimplemented (or whose writes it drops),
so they show in the trace as ``memory_region_ops_write`` of that region and change
nothing.

Boards (:data:`BOARDS`): ``mcimx7d-sabre`` (i.MX 7Dual SABRE, ``imx7d-sdb.dtb``,
Linux's ``sdhci-esdhc-imx``).  The card sits on usdhc3: of the board's three
uSDHCs, the device tree's usdhc1 (the SD slot) waits for a regulator and a card
detect GPIO QEMU's board does not model and is never probed; usdhc3 (the eMMC slot,
non-removable) is, and an SD card there initialises as in the slot.  ``smdkc210``
(Exynos 4210, ``exynos4210-smdkv310.dtb``, Linux's ``sdhci-s3c``): the card on
SDHCI 0, whose disabled node :attr:`BoardGuest.dtb_edits` enables on a copy of the
dtb.  ``raspi3b``
(Linux's ``sdhci-iproc`` on the Pi's Arasan SDHCI; PIO: the capabilities the driver
brings for the BCM2835 offer no DMA); ``raspi3b-sdhost`` (the same machine with the
card on its SDHOST, recorded with U-Boot only).  Xilinx's Zynq
has no armhf Debian kernel support (``CONFIG_ARCH_ZYNQ`` is off in ``armmp``).

``microchip-icicle-kit`` (the check's ``icicle``, a ``qemu-system-riscv64`` board):
Debian's ``linux-image-riscv64`` kernel with ``mpfs-icicle-kit.dtb`` and its
``sdhci-cadence`` (mmc_core and mmc_block are modules there), OpenSBI from the
build (``-bios default``), and a copy of the tree with the board's edits
(:data:`ICICLE_DTB_EDITS`) and the ``/chosen`` QEMU leaves unwritten on that
machine from 10.2 on (:func:`chosen`).  See docs/drivers.md.

``sifive_u`` (RISC-V) boots Debian's riscv64 kernel (``linux-image-riscv64``: its
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

import os
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
    #: ``-bios`` (``default``: the build's own firmware, RISC-V's OpenSBI ``fw_dynamic``)
    bios: str = ""
    #: ``-smp`` (0: the machine's default)
    smp: int = 0
    #: the serial port on the console (``-serial null`` for each port before it)
    serial_index: int = 0
    #: the kernel file in the image package's ``/boot``, before ``-KVER``
    kernel_file: str = "vmlinuz"
    #: changes to a copy of the device tree, in order, each ``fdtput``'s arguments
    #: but the file (Debian's device-tree-compiler): the recording names them
    dtb_edits: tuple[tuple[str, ...], ...] = ()
    #: where QEMU puts the initrd when the machine writes no ``/chosen`` into the
    #: ``-dtb`` (the recorder then writes ``bootargs`` and ``linux,initrd-*`` into
    #: its copy); 0: QEMU writes them
    initrd_at: int = 0


#: The icicle kit's device tree as QEMU's machine needs it (see docs/drivers.md):
#: QEMU maps DRAM above the first GiB at 0x1000000000 (hw/riscv/microchip_pfsoc.c),
#: the tree's second bank is at 0x1040000000: off.
ICICLE_DTB_EDITS: tuple[tuple[str, ...], ...] = (
    ("-ts", "/memory@1040000000", "status", "disabled"),
)

#: Where QEMU loads -initrd on microchip-icicle-kit: 512 MiB above the kernel
#: (riscv_load_initrd, hw/riscv/boot.c), which sits at the first 2 MiB boundary
#: after OpenSBI at 0x80000000 (riscv_calc_kernel_start_addr).  The machine loads
#: the -dtb after the kernel and initrd from QEMU 10.2 on (hw/riscv/microchip_pfsoc.c;
#: 10.0 loaded it before), so -append and -initrd never reach /chosen: the
#: recorder writes them into its copy of the tree.
ICICLE_INITRD = 0x8020_0000 + 512 * 1024 * 1024

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
    # The Pi 3's Arasan SDHCI at 0x3F300000 (Debian's arm64 kernel, sdhci-iproc's
    # brcm,bcm2835-sdhci).  The Pi 3 B device tree gives the SD slot to the SDHOST
    # (pins 48-53 ALT0: QEMU's GPIO then moves the card there) and the SDHCI to the
    # WiFi chip (pins 34-39, a power sequence through the firmware's GPIO expander,
    # a wifi@1 child): the copy disables the SDHOST, drops the WiFi's power sequence
    # and child, and muxes the SDHCI to pins 48-53 (ALT3, the chip's function there:
    # QEMU's hw/gpio/bcm2835_gpio.c leaves the card on the SDHCI, where its reset put
    # it), emmc_gpio48 given a phandle the dtb does not use.
    # The marks: bcm2835-sdramc, as on raspi2b.
    "raspi3b": BoardGuest(
        "raspi3b", "arm64", "linux-image-arm64", "broadcom/bcm2837-rpi-3-b.dtb",
        "ttyAMA0,115200", ("sdhci-iproc",), 0, "/dev/mmcblk0", 0x3FE00000,
        "bcm2835-sdramc", 0x3F300000, "sdhci (generic-sdhci, the Arasan eMMC)",
        append="maxcpus=1", dtb_edits=(
            ("-t", "s", "/soc/mmc@7e202000", "status", "disabled"),
            ("-d", "/soc/mmc@7e300000", "mmc-pwrseq"),
            ("-r", "/soc/mmc@7e300000/wifi@1"),
            ("-t", "x", "/soc/gpio@7e200000/emmc_gpio48", "phandle", "0x1d"),
            ("-t", "x", "/soc/mmc@7e300000", "pinctrl-0", "0x1d"))),
    # raspi3b with the card on its SDHOST at 0x3F202000 (the check's raspi3b-sdhost):
    # the window starts at the GPIO block, as raspi2b's; the marks: bcm2835-sdramc.
    # Recorded with U-Boot only (harness.guest.record_uboot: Debian's arm64 rpi_3,
    # its console on the mini UART, the second serial port).
    "raspi3b-sdhost": BoardGuest(
        "raspi3b", "arm64", "linux-image-arm64", "broadcom/bcm2837-rpi-3-b.dtb",
        "ttyS1,115200", ("bcm2835",), 0, "/dev/mmcblk0", 0x3FE00000, "bcm2835-sdramc",
        0x3F200000, "sdhost (bcm2835-sdhost)", events=(), host="sdhost", serial_index=1),
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
    # The AST2600's SD controller: slot 0 at 0x1e740100, its wrapper registers
    # 0x100 below (hw/sd/aspeed_sdhci.c).  hw/arm/aspeed.c attaches if=sd cards
    # only with the default devices on (defaults_enabled()), hence no -nodefaults.
    # The slot's vmmc/vqmmc supplies are a GPIO-driven fixed regulator and a
    # regulator-gpio on the Aspeed GPIO (aspeed-ast2600-evb.dts): their modules
    # load first, or the slot's probe waits for them for ever.  The marks:
    # aspeed.video, a block QEMU leaves unimplemented (hw/arm/aspeed_ast2600.c).
    "ast2600-evb": BoardGuest(
        "ast2600-evb", "armhf", "linux-image-armmp", "aspeed-ast2600-evb.dtb",
        "ttyS4,115200", ("gpio-aspeed", "gpio-regulator", "sdhci-of-aspeed"), 0,
        "/dev/mmcblk0", 0x1E700000, "aspeed.video", 0x1E740100,
        "sd-controller slot 0 (aspeed.sdhci-ast2600)", nodefaults=False,
        append="maxcpus=1", host="aspeed"),
    # PolarFire SoC: the Cadence SD4HC at 0x20008000 (the HRS; the SDHCI, the
    # base the conversion and the check's board use, at 0x200 of it).  Debian's
    # riscv64 kernel (an Image: QEMU's riscv loader takes it as is), OpenSBI
    # from the build (-bios default), five harts (hart 0, the E51, is off in the
    # tree), the console on MMUART1 (the tree's serial1).  The marks: fmeter,
    # a block QEMU's PolarFire leaves unimplemented (hw/riscv/microchip_pfsoc.c).
    "microchip-icicle-kit": BoardGuest(
        "microchip-icicle-kit", "riscv64", "linux-image-riscv64",
        "microchip/mpfs-icicle-kit.dtb", "ttyS1,115200", ("mmc_block", "sdhci-cadence"), 0,
        "/dev/mmcblk0", 0x20006000, "microchip.pfsoc.fmeter", 0x20008200,
        "mmc@20008000 (cadence.sdhci)", memory_mib=1537, bios="default", smp=5, host="cadence",
        serial_index=1, kernel_file="vmlinux", dtb_edits=ICICLE_DTB_EDITS,
        initrd_at=ICICLE_INITRD),
    # Exynos 4210 on QEMU's SMDKC210 with the SMDKV310's device tree (the same
    # reference board).  The card sits on SDHCI 0 at 0x12510000 (if=sd index 0,
    # hw/arm/exynos4210.c), whose node the dtb leaves disabled: enabled, 4 bits
    # wide, and non-removable (no card detect line QEMU models; broken-cd would
    # have the core poll the card every second).  The marks: the chip ID block
    # (exynos4210.chipid), whose writes QEMU drops, a byte at a time (the phase
    # number is the byte at 0x10000000); the SoC has no unimplemented block (an
    # access outside QEMU's regions is a bus error).
    "smdkc210": BoardGuest(
        "smdkc210", "armhf", "linux-image-armmp", "exynos4210-smdkv310.dtb",
        "ttySAC0,115200", ("sdhci-s3c",), 0, "/dev/mmcblk0", 0x10000000,
        "exynos4210.chipid", 0x12510000, "sdhci 0 (s3c-sdhci)", append="maxcpus=1",
        dtb_edits=(("-t", "s", "/soc/mmc@12510000", "status", "okay"),
                   ("-t", "u", "/soc/mmc@12510000", "bus-width", "4"),
                   ("/soc/mmc@12510000", "non-removable"))),
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
        memory_mib=1024, events=(), host="sifive-spi", bios="default", kernel_file="vmlinux"),
}


def guest_dir(arch: str) -> Path:
    return cache_dir() / f"guest-{arch}"


def _versioned(meta: str, arch: str) -> str:
    out = subprocess.run(["apt-cache", "depends", f"{meta}:{arch}"], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    m = re.search(r"Depends: (linux-image-[^\s:]+)", out)
    if m is None:
        raise InstallError(f"apt-cache knows no {meta}:{arch}: as root, dpkg "
                           f"--add-architecture {arch} && apt-get update, with a Debian "
                           f"release that builds {arch} in apt's sources (riscv64: 13)")
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
    busybox = next((p for p in (root / "bin/busybox", root / "usr/bin/busybox")
                    if p.exists()), root / "bin/busybox")  # usr/bin from Debian 13 on
    members = {"bin/busybox": (busybox.read_bytes(), True),
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


def _fdtput_argv(edit: tuple[str, ...], out: Path) -> list[str]:
    """``fdtput``'s command line for one edit: its options (``-t s``, ``-ts``, ``-d``,
    ``-r``) before the file, the node, property and values after it."""
    opts: list[str] = []
    i = 0
    while i < len(edit) and edit[i].startswith("-"):
        opts.append(edit[i])
        if edit[i] == "-t":
            opts.append(edit[i + 1])
            i += 1
        i += 1
    return ["fdtput", *opts, str(out), *edit[i:]]


def board_dtb(dtb: Path, edits: tuple[tuple[str, ...], ...], machine: str,
              workdir: Path) -> Path:
    """``dtb`` itself, or a copy in ``workdir`` with ``edits`` made by ``fdtput`` and
    checked by ``dtc`` (a duplicate phandle is an error there)."""
    if not edits:
        return dtb
    for tool in ("fdtput", "dtc"):
        if shutil.which(tool) is None:
            raise InstallError(f"record: board {machine}'s device tree is edited with "
                               f"{tool}: apt-get install device-tree-compiler")
    out = workdir / dtb.name
    shutil.copyfile(dtb, out)
    for edit in edits:
        _run(_fdtput_argv(edit, out), what=f"fdtput {' '.join(edit)}",
             logfile=workdir / "dtb.log", timeout=60, fix="the edit does not fit this dtb")
    _run(["dtc", "-q", "-I", "dtb", "-O", "dtb", "-o", os.devnull, str(out)],
         what=f"dtc of the edited {out.name}", logfile=workdir / "dtb.log", timeout=60,
         fix="the edits left the device tree inconsistent (a phandle used twice?)")
    return out


def dtb_edit_text(dtb: str, edits: tuple[tuple[str, ...], ...], append: str) -> list[str]:
    """The edits as the commands that make them (``fdtput FILE ...``), for provenance;
    the kernel command line, given in full beside them, as ``KERNEL_COMMAND_LINE``."""
    return [" ".join(_fdtput_argv(tuple("KERNEL_COMMAND_LINE" if w == append else w
                                        for w in e), Path(Path(dtb).name)))
            for e in edits]


def chosen(b: BoardGuest, append: str, initrd_size: int) -> tuple[tuple[str, ...], ...]:
    """The ``/chosen`` edits QEMU makes itself on other machines (the kernel command
    line, the initrd's range), when ``b`` needs them in the tree (``initrd_at``)."""
    if not b.initrd_at:
        return ()
    return (("-ts", "/chosen", "bootargs", append),
            ("-tu", "/chosen", "linux,initrd-start", str(b.initrd_at)),
            ("-tu", "/chosen", "linux,initrd-end", str(b.initrd_at + initrd_size)))


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
            *_bios(build, b), *(["-smp", str(b.smp)] if b.smp else []),
            "-no-reboot", *["-serial", "null"] * b.serial_index, "-serial", "stdio",
            "-monitor", "none",
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
    edits = b.dtb_edits + chosen(b, append, initrd.stat().st_size)
    dtb = (board_dtb(root / f"usr/lib/linux-image-{kver}" / b.dtb, edits, b.machine, workdir)
           if b.dtb else workdir / "none.dtb")  # none: the machine builds its own
    cmd = argv(build, b, root / f"boot/{b.kernel_file}-{kver}", dtb, initrd, card, append,
               trace)
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
                  **({"dtb_edits": dtb_edit_text(b.dtb, edits, append)} if edits else {}),
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
