"""ARM and RISC-V boards whose SD host controller QEMU builds, as data.

Each :class:`Board` says where the board puts its SDHCI and how it wires it,
as the board's QEMU source sets it up (``hw/arm/*.c``, ``hw/riscv/*.c``; quoted per board),
never as a build under test answers: the machine type, the controller's QEMU
type and MMIO base, the interrupt line and how qtest can watch it, the
guest RAM the DMA arena may use, and the controller properties the board
sets.  The SD card is the one the board creates on that controller's bus
from ``-drive if=sd,index=N``.

How the interrupt is watched (QEMU ``system/qtest.c``): ``irq_intercept_in``
on a device intercepts its *unnamed* GPIO inputs (an interrupt controller);
``irq_intercept_out PATH NAME`` the controller's own named output
(``sysbus-irq``), which QEMU 7.2 cannot (it skips named GPIO lists), so a
board whose interrupt controller takes the line on a named input cannot be
watched on 7.2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from harness.hwdefs import aspeed

__all__ = ["BOARDS", "OWN_GROUPS", "SDHCI_BOARDS", "VARIANTS", "Board", "ByVariant", "IrqRoute",
           "board_for", "boards_of", "by_name", "machine_type", "run_key"]

_T = TypeVar("_T")

_MIB = 1 << 20


@dataclass(frozen=True)
class IrqRoute:
    """Where qtest watches the controller's interrupt line.

    ``kind`` ``in``: the unnamed inputs of the first device of QOM type
    ``qom_type`` (an interrupt controller), line ``line``; ``out``: the
    controller's own GPIO output list ``name`` (line ``line``), found by
    ``qom_path``, which needs a build whose qtest intercepts named outputs
    (``min_version``)."""

    kind: str
    line: int
    qom_type: str = ""
    qom_path: str = ""
    name: str = ""
    min_version: tuple[int, int] = (0, 0)
    #: ``in`` on a board with several devices of ``qom_type``: the ``nth``
    #: created (``/machine/unattached/device[N]`` order; 0: the first found).
    nth: int = 0


@dataclass(frozen=True)
class Board:
    """One board's SD host controller, as the board's QEMU source builds it."""

    name: str
    """Short name on the command line and in reports."""
    machine: str
    """QEMU machine type."""
    controller: str
    """QEMU type of the controller (``generic-sdhci``, ``imx-usdhc``, ...)."""
    base: int
    """MMIO base of the controller's register window."""
    irq: IrqRoute
    ram_base: int
    """Guest physical address where RAM starts (the DMA arena lies in it)."""
    ram: int
    """``-m`` the board is started with (some boards accept one size only), or
    the size the board gives itself where it ignores ``-m`` (``ram_own``)."""
    sdhci: tuple[tuple[str, int | bool], ...]
    """Controller properties the board sets, by QEMU name (the model mirrors them)."""
    devices: tuple[tuple[str, int], ...] = ()
    """Properties the board sets on the devices beside its controller that
    the model mirrors, as ``("device.property", value)`` by QEMU names
    (``realview_sysctl.sys_id``: SYS_ID next to a PL181)."""
    ram_own: bool = False
    """The board allocates its RAM itself (``memory_region_init_ram``) rather
    than taking the machine's (``default_ram_id``): it ignores ``-m`` and
    ``-machine memory-backend``, so a reused process's RAM cannot be zeroed
    through a backend file, and the pool launches it afresh instead."""
    other_ram: tuple[tuple[int, int], ...] = ()
    """The board's on-chip memories as ``(base, size)``: RAM that DMA reaches
    like the main RAM, which the board allocates itself (so a reused process
    zeroes it with qtest ``memset``)."""
    ram_aliases: tuple[tuple[int, int, int], ...] = ()
    """Windows that show the RAM again, as ``(base, size, target)``: QEMU alias
    regions of the machine's RAM (DMA there reaches the RAM at ``target``)."""
    reset_keeps: str = ""
    """The ledger key of controller state QEMU's ``system_reset`` keeps on this
    board (empty: none): the pool never reuses a process for it, or, where
    that state is the interrupt output only (:data:`harness.qemu.pool.LINE_ONLY`),
    not one whose line is raised."""
    card_index: int = 0
    """``-drive if=sd,index=N`` that the board plugs into this controller."""
    card_kind: str = "sd-card"
    """QEMU type of the card the board plugs there (``emmc``: an eMMC device,
    on builds that have one)."""
    binary: str = "qemu-system-aarch64"
    """The QEMU target binary with this machine (aarch64 holds every ARM board;
    ``qemu-system-riscv64`` the RISC-V ones)."""
    source: str = ""
    """Where the facts above come from."""
    nodefaults: bool = True
    """Start with ``-nodefaults``; False for a board that plugs its cards only
    while QEMU's default devices are on (``defaults_enabled()``)."""
    variant: str = "sdhci"
    """Register layout: ``sdhci`` (the standard one QEMU's ``sdhci_read``/``write``
    implement), a vendor layout the model must mirror (``usdhc``, ``s3c``), or
    ``spi``: no SDHCI at all, the card in SPI mode behind an SSP and ``ssi-sd``
    (:mod:`harness.hwdefs.pl022`)."""
    group: str = ""
    """The scenario group written for this board's controller, driven by its
    own driver (``spi``: :mod:`harness.scenarios.spi`); empty for an SDHCI,
    which runs the SDHCI scenario library.  A board with a group of its own
    runs that group only, and that group runs on such boards only."""
    notes: tuple[str, ...] = field(default=())
    """What the board brings and what it cannot do under qtest."""
    args: tuple[str, ...] = ()
    """Further QEMU options the board needs under qtest (``-bios none``: no
    firmware to look for, which a build without its blobs lacks)."""

    @property
    def sdhci_props(self) -> dict[str, int | bool]:
        return dict(self.sdhci)

    @property
    def spi(self) -> bool:
        """The card in SPI mode behind an SSI controller, no SDHCI (a PL022:
        ``spi``; SiFive's SPI controller: ``sifive-spi``)."""
        return self.variant in ("spi", "sifive-spi")


#: The BCM2835 SDHOST on raspi2b (raspi3b's is the same on the BCM2837).
_RASPI2B = Board(
    name="raspi2b",
    machine="raspi2b",
    controller="bcm2835-sdhost",
    # The window starts at the GPIO block (function select: the card's
    # routing), the SDHOST follows at +0x2000 (harness.hwdefs.bcm2835_sdhost).
    base=0x3F00_0000 + 0x20_0000,
    irq=IrqRoute(kind="out", line=0, qom_path="/machine/soc/peripherals/sdhost",
                 name="sysbus-irq", min_version=(10, 0)),
    ram_base=0,
    ram=1024 * _MIB,
    sdhci=(),
    source="hw/arm/bcm2836.c: BCM2836 peripherals at 0x3F000000; "
           "hw/arm/bcm2835_peripherals.c (7.2.22, 10.0.13, 11.1.1 alike): "
           "TYPE_BCM2835_SDHOST 'sdhost' at MMCI0_OFFSET 0x202000, its IRQ on a *named* "
           "input of bcm2835-ic (GPU IRQ INTERRUPT_SDIO 56), TYPE_BCM2835_GPIO at "
           "GPIO_OFFSET 0x200000 linked to both controllers' sd-bus; hw/arm/raspi.c: "
           "raspi2b (board rev 0xa21041) 1 GiB RAM only, the card from if=sd index 0 on "
           "the GPIO's sd-bus; hw/gpio/bcm2835_gpio.c: the card on the SDHCI at reset, "
           "on the SDHOST once pins 48-53 are all ALT0",
    variant="sdhost",
    reset_keeps="sdhost.reset-keeps-status",
    group="sdhost",
    notes=("the BCM2835 SDHOST (Linux drivers/mmc/host/bcm2835.c): its 16-word FIFO "
           "through SDDATA, SDHSTS/SDHCFG interrupts, SDEDM; the card routed to it by "
           "GPFSEL4/5 (harness.model.bcm2835_sdhost, bcm2835_gpio)",
           "QEMU 7.2's qtest cannot intercept the line (a named GPIO): not driven there",
           "raspi3b is the same SoC family's SDHCI board; raspi2b's SDHCI is not driven"),
)

BOARDS: tuple[Board, ...] = (
    Board(
        name="zynq",
        machine="xilinx-zynq-a9",
        controller="generic-sdhci",
        base=0xE010_0000,
        # SDHCI0 on GIC SPI 56, i.e. input 56 - 32 of the a9mpcore_priv.
        irq=IrqRoute(kind="in", line=56 - 32, qom_type="a9mpcore_priv"),
        ram_base=0,
        ram=128 * _MIB,
        other_ram=((0xFFFC_0000, 256 << 10),),
        sdhci=(("sd-spec-version", 2), ("capareg", 0x69EC0080)),
        binary="qemu-system-arm",
        source="hw/arm/xilinx_zynq.c zynq_init (7.2, 10.0.13, 11.1.1 alike): "
               "TYPE_SYSBUS_SDHCI at 0xE0100000, IRQ 56, sd-spec-version 2, "
               "capareg ZYNQ_SDHCI_CAPABILITIES 0x69ec0080 (UG585); 256 KiB of on-chip "
               "memory (zynq.ocm_ram) at 0xFFFC0000",
        notes=("the generic sysbus SDHCI (sdhci_sysbus_*): spec 2.00, a 512-byte "
               "buffer (capareg max block length 0), DMA into system memory",),
    ),
    Board(
        name="raspi3b",
        machine="raspi3b",
        controller="generic-sdhci",
        base=0x3F00_0000 + 0x30_0000,
        irq=IrqRoute(kind="out", line=0, qom_path="/machine/soc/peripherals/sdhci",
                     name="sysbus-irq", min_version=(10, 0)),
        ram_base=0,
        ram=1024 * _MIB,
        sdhci=(("sd-spec-version", 3), ("capareg", 0x052134B4),
               ("pending-insert-quirk", True)),
        source="hw/arm/bcm2835_peripherals.c: TYPE_SYSBUS_SDHCI 'sdhci' at "
               "EMMC1_OFFSET 0x300000 of the peripherals (0x3F000000 on BCM2837), "
               "sd-spec-version 3, capareg 0x52134b4, pending-insert-quirk; its IRQ "
               "goes to a *named* input of bcm2835-ic (GPU IRQ 62); hw/arm/raspi.c: "
               "1 GiB RAM only, the card on the GPIO's sd-bus, reparented to the SDHCI "
               "at reset (hw/gpio/bcm2835_gpio.c)",
        notes=("the Pi's Arasan SDHCI: spec 3.00 with the pending-insert quirk",
               "QEMU 7.2's qtest cannot intercept the line (a named GPIO): not driven "
               "there"),
    ),
    Board(
        name="mcimx7d",
        machine="mcimx7d-sabre",
        controller="imx-usdhc",
        base=0x30B4_0000,
        # usdhc[0] on GIC SPI 22, an unnamed input of the a7mpcore (a15mpcore_priv).
        irq=IrqRoute(kind="in", line=22, qom_type="a15mpcore_priv"),
        ram_base=0x8000_0000,
        ram=128 * _MIB,
        # sd-spec-version: not the board's but the type's (3 since 10.0, 7.2: 2),
        # which the uSDHC model states by version (harness.model.sdhci_usdhc).
        sdhci=(("capareg", 0x057834B4),),
        binary="qemu-system-arm",
        source="hw/arm/fsl-imx7.c: TYPE_IMX_USDHC usdhc0 at FSL_IMX7_USDHC1_ADDR "
               "0x30B40000, FSL_IMX7_USDHC1_IRQ 22 on the a7mpcore GIC, capareg left at "
               "its default 0x057834b4; RAM at FSL_IMX7_MMDC_ADDR 0x80000000; "
               "hw/arm/mcimx7d-sabre.c: a card on each usdhc from if=sd index i; "
               "hw/sd/sdhci.c imx_usdhc_init: sd-spec-version 3 since 10.0 (7.2: the "
               "common default 2)",
        variant="usdhc",
        notes=("i.MX uSDHC (usdhc_read/usdhc_write): HOSTCTL bits moved, MIX_CTRL "
               "holds the transfer mode, PRNSTS SDSTB, vendor registers at 0x60..0xcc, "
               "no busy IRQ",
               "sabrelite (i.MX6) has the same uSDHC but creates no SD card from "
               "if=sd (qemu 7.2: 'machine type does not support if=sd')"),
    ),
    Board(
        name="quanta-gbs",
        machine="quanta-gbs-bmc",
        controller="npcm7xx-sdhci",
        base=0xF084_2000,
        irq=IrqRoute(kind="in", line=26, qom_type="a9mpcore_priv"),
        ram_base=0,
        ram=128 * _MIB,
        # The SDHCI inside keeps its type's sd-spec-version 2 (the wrapper sets
        # none); the capabilities are the wrapper's reset value.
        sdhci=(("sd-spec-version", 2), ("capareg", 0x0100_2001_61EE_0399)),
        binary="qemu-system-arm",
        source="hw/arm/npcm7xx.c: TYPE_NPCM7XX_SDHCI 'mmc' at NPCM7XX_MMC_BA "
               "0xf0842000, IRQ 26 on the a9mpcore GIC; hw/sd/npcm7xx_sdhci.c: a "
               "generic-sdhci inside a 0x1000 container, its reset overriding "
               "PRNSTS 0x04a00000, BLKGAP 0x80, capareg 0x0100200161ee0399, MAXCURR 5 "
               "and HCVER 0x1002; hw/arm/npcm7xx_boards.c: the card from if=sd index 0 on "
               "quanta-gbs-bmc and kudo-bmc only (npcm750-evb: 'machine type does not "
               "support if=sd')",
        variant="npcm",
        notes=("Nuvoton's wrapper: its reset's PRNSTS, BLKGAP, capabilities, MAXCURR and "
               "HCVER (vendor 0x10, 3.00) over a 2.00 SDHCI, PRSTVALS and BOOTTOCTRL at "
               "0x60..0x7f (harness.model.sdhci_npcm)",),
    ),
    Board(
        name="smdkc210",
        machine="smdkc210",
        controller="s3c-sdhci",
        base=0x1251_0000,
        irq=IrqRoute(kind="out", line=0, qom_type="s3c-sdhci",
                     name="sysbus-irq", min_version=(10, 0)),
        ram_base=0x4000_0000,
        # hw/arm/exynos4_boards.c: 1 GiB of DRAM0 whatever -m says, its own
        # memory region (no default_ram_id).
        ram=1024 * _MIB,
        ram_own=True,
        sdhci=(("sd-spec-version", 2), ("capareg", 0x05E8_0080)),
        binary="qemu-system-arm",
        source="hw/arm/exynos4210.c: TYPE_S3C_SDHCI at EXYNOS4210_SDHCI_BASE_ADDR "
               "0x12510000, capareg EXYNOS4210_SDHCI_CAPABILITIES 0x05e80080, the card "
               "from if=sd index 0, IRQ through the SoC's IRQ gates; RAM at "
               "EXYNOS4210_DRAM0_BASE_ADDR 0x40000000; hw/arm/exynos4_boards.c: 1 GiB "
               "(exynos4_board_ram_size), allocated by the board, -m ignored; "
               "hw/sd/sdhci.c sdhci_s3c_*: "
               "CONTROL2/3/4 (0x80, 0x84, 0x8c) read 0 and drop writes",
        variant="s3c",
        notes=("the Samsung S3C variant (sdhci_s3c_read/write)",),
    ),
    Board(
        name="ast2600",
        machine="ast2600-evb",
        controller="aspeed.sdhci-ast2600",
        # Slot 0 of the wrapper at ASPEED_DEV_SDHCI 0x1E740000: (0 + 1) * 0x100.
        base=0x1E74_0000 + aspeed.slot_offset(0),
        # The wrapper's one output on GIC SPI 43, an unnamed input of the a7mpcore.
        irq=IrqRoute(kind="in", line=43, qom_type="a15mpcore_priv"),
        ram_base=0x8000_0000,
        ram=1024 * _MIB,
        # capareg (harness.hwdefs.aspeed) changes with the version, and
        # wp-inverted exists from 10.0 only: harness.model.sdhci_aspeed.
        sdhci=(("sd-spec-version", 2), ("wp-inverted", True)),
        source="hw/arm/aspeed_ast2600.c: aspeed.sdhci-ast2600 'sd-controller' with two "
               "TYPE_SYSBUS_SDHCI slots at ASPEED_DEV_SDHCI 0x1E740000, IRQ 43 on the "
               "a7mpcore GIC, SDRAM at 0x80000000; hw/sd/aspeed_sdhci.c: slot n at "
               "(n + 1) * 0x100, sd-spec-version 2, capareg 0x0000000701f80080 (7.2.22: "
               "0x01e80080 for every SoC), the slots' "
               "lines ORed into one; hw/arm/aspeed.c: an sd-card from if=sd index n on "
               "slot n, wp-inverted on the slots of an EVB (10.0.13, 10.2.2, 11.1.1; not "
               "in 7.2.22); aspeed_ast2600_evb.c: 1 GiB RAM",
        variant="aspeed",
        # hw/arm/aspeed.c (10.0.13 on; 7.2.22 not) plugs the slots' cards only
        # when defaults_enabled(): no -nodefaults.
        nodefaults=False,
        notes=("Aspeed's wrapper (two slots, one IRQ) over the generic sysbus SDHCI: spec "
               "2.00, SDMA and ADMA2, the write-protect signal inverted since 10.0",
               "the wrapper's own registers (0x00..0xff) lie outside the slot's window: "
               "not modelled; its eMMC controller is board fuji-emmc's"),
    ),
    Board(
        name="fuji-emmc",
        machine="fuji-bmc",
        controller="aspeed.sdhci-ast2600",
        # The eMMC wrapper at ASPEED_DEV_EMMC 0x1E750000, its one slot at 0x100.
        base=0x1E75_0000 + aspeed.slot_offset(0),
        irq=IrqRoute(kind="in", line=15, qom_type="a15mpcore_priv"),
        ram_base=0x8000_0000,
        ram=1024 * _MIB,
        sdhci=(("sd-spec-version", 2),),
        card_index=2,
        card_kind="emmc",
        source="hw/arm/aspeed_ast2600.c: aspeed.sdhci-ast2600 'emmc-controller' with one "
               "TYPE_SYSBUS_SDHCI slot at ASPEED_DEV_EMMC 0x1E750000 (+0x100), IRQ 15 on the "
               "a7mpcore GIC; hw/arm/aspeed.c: an emmc device from if=sd index "
               "num_slots (2) on it since the emmc type exists (7.2.22: an sd-card), boot "
               "partitions forced only when the straps boot from eMMC, no wp-inverted; "
               "aspeed_ast2600_fuji.c: straps 0 (boot from SPI flash), the AST2600 SoC; "
               "the SDMC takes 1 GiB as well as its default 2 GiB",
        variant="aspeed",
        nodefaults=False,
        notes=("an eMMC device on a board: the AST2600's eMMC controller (the same "
               "wrapper, one slot), the eMMC groups on a sysbus SDHCI",
               "ast2600-evb's own eMMC slot is the same controller; Fuji does not boot "
               "from eMMC, so the scenarios' partition sizes hold (an EVB or Rainier "
               "strapped for eMMC boot forces 1 MiB boot partitions)"),
    ),
    Board(
        name="lm3s6965evb",
        machine="lm3s6965evb",
        controller="pl022",
        # The window starts at GPIO port D (chip select), the PL022 SSP follows
        # at +0x1000 (harness.hwdefs.pl022 GPIO_WINDOW, SSP_WINDOW).
        base=0x4000_7000,
        # The SSP on NVIC input 7; qdev_pass_gpios gives the armv7m container
        # the NVIC's unnamed inputs.
        irq=IrqRoute(kind="in", line=7, qom_type="armv7m"),
        ram_base=0x2000_0000,
        ram=16 * _MIB,
        sdhci=(),
        binary="qemu-system-arm",
        source="hw/arm/stellaris.c stellaris_init (7.2, 10.0.13, 10.2.2, 11.1.1 alike): "
               "pl022 at 0x40008000 on NVIC IRQ 7, an ssi-sd on its bus with the card "
               "from if=sd index 0 (sd-card with spi=on before 9.1, sd-card-spi since), "
               "an ssd0323 OLED on the same bus; pl061_luminary port D at 0x40007000, "
               "pin 0 through a splitter to both chip selects (ssi-sd's active low), "
               "raised at start; 64 KiB SRAM at 0x20000000 whatever -m says",
        variant="spi",
        reset_keeps="pl022.reset-keeps-control",
        group="spi",
        notes=("the SD card in SPI mode (PLS chapter 7) behind ssi-sd: sd.c's SPI "
               "command table and responses, ssi-sd's token framing (harness.model.ssi_sd)",
               "no SDHCI: the SDHCI scenario groups do not apply; the spi group runs"),
    ),
    Board(
        name="vexpress-a9",
        machine="vexpress-a9",
        controller="pl181",
        # The window starts at the system registers (SYS_MCI: card detect and
        # write protect), the MMCI follows at +0x5000 (harness.hwdefs.pl181).
        base=0x1000_0000,
        # MCIINTR0 on GIC SPI 9: an unnamed input of the a9mpcore_priv, which
        # 7.2's qtest intercepts as well (MCIINTR1 is input 10).
        irq=IrqRoute(kind="in", line=9, qom_type="a9mpcore_priv"),
        ram_base=0x6000_0000,
        ram=128 * _MIB,
        sdhci=(),
        devices=(("realview_sysctl.sys_id", 0x1190_F500),),
        binary="qemu-system-arm",
        source="hw/arm/vexpress.c vexpress_common_init (7.2.22, 10.0.13, 11.1.1 alike): "
               "pl181 at map[VE_MMCI] 0x10005000 (legacy map of the A9 daughterboard), "
               "IRQs pic[9] and pic[10] (a9mpcore_priv inputs 9, 10), its card-read-only "
               "and card-inserted outputs on realview_sysctl's GPIO inputs (SYS_MCI at "
               "0x10000048: bits 1 and 0, hw/misc/arm_sysctl.c), sys_id 0x1190f500, the "
               "card from if=sd index 0; RAM at 0x60000000, at most 1 GiB; its pl041 "
               "needs an audio backend from 10.0 on, which -nodefaults takes away "
               "('no default audio driver available'): no -nodefaults",
        nodefaults=False,
        variant="pl181",
        reset_keeps="pl181.reset-keeps-clock-and-fifo",
        group="mmci",
        notes=("the ARM PrimeCell MMCI (PL181, hw/sd/pl181.c): a 16-word FIFO moved by "
               "PIO, two interrupt outputs, card detect and write protect in SYS_MCI "
               "(harness.model.pl181)",
               "no SDHCI: the SDHCI scenario groups do not apply; the mmci group runs",
               "versatilepb (MMCI0 on SIC inputs 22 and 1, unnamed: qtest watches them on "
               "7.2 too) wires no card-detect or write-protect; integratorcp and "
               "realview-* have the same pl181"),
    ),
    Board(
        name="realview-pb-a8",
        machine="realview-pb-a8",
        controller="pl181",
        # The same window as vexpress-a9's: realview_sysctl at 0x10000000, the
        # MMCI at +0x5000 (harness.hwdefs.pl181).
        base=0x1000_0000,
        # MCIINTR0 on input 17 of the realview_gic (unnamed: 7.2's qtest
        # intercepts it too; MCIINTR1 is input 18).
        irq=IrqRoute(kind="in", line=17, qom_type="realview_gic"),
        ram_base=0x7000_0000,
        ram=128 * _MIB,
        sdhci=(),
        devices=(("realview_sysctl.sys_id", 0x0178_0500),),
        ram_aliases=((0, 128 * _MIB, 0x7000_0000),),
        binary="qemu-system-arm",
        source="hw/arm/realview.c realview_init (7.2.22, 10.0.13, 11.1.1 alike), "
               "BOARD_PB_A8: pl181 at 0x10005000, IRQs pic[17] and pic[18] (inputs of the "
               "realview_gic at 0x1e000000), card-read-only and card-inserted split to "
               "realview_sysctl's GPIO inputs (SYS_MCI bits 1 and 0) and the third pl061, "
               "sys_id 0x01780500 (is_pb), the card from if=sd index 0; RAM at 0x70000000, "
               "its first 256 MiB also at 0; the same pl041 as vexpress-a9, which needs "
               "an audio backend from 10.0 on: no -nodefaults",
        nodefaults=False,
        variant="pl181",
        reset_keeps="pl181.reset-keeps-clock-and-fifo",
        group="mmci",
        notes=("the ARM PrimeCell MMCI of vexpress-a9 (harness.model.pl181) on the "
               "RealView Platform Baseboard for Cortex-A8: another interrupt controller "
               "and SYS_ID, the same registers",),
    ),
    Board(
        name="orangepi-pc",
        machine="orangepi-pc",
        controller="allwinner-sdhost-sun5i",
        # AW_H3_DEV_MMC0; the controller's one output on GIC SPI 60, an unnamed
        # input of the H3's arm_gic (/machine/soc/gic).
        base=0x01C0_F000,
        irq=IrqRoute(kind="in", line=60, qom_type="arm_gic"),
        ram_base=0x4000_0000,
        ram=1024 * _MIB,
        sdhci=(),
        binary="qemu-system-arm",
        source="hw/arm/allwinner-h3.c (7.2.22, 10.0.13, 11.1.1 alike): mmc0 "
               "TYPE_AW_SDHOST_SUN5I at AW_H3_DEV_MMC0 0x01c0f000, IRQ AW_H3_GIC_SPI_MMC0 60 "
               "on the arm_gic, its dma-memory the system memory, SDRAM at 0x40000000; "
               "hw/arm/orangepi.c: 1 GiB RAM only, an sd-card on the SoC's sd-bus from "
               "if=sd index 0 (plugged with or without a drive, whatever -nodefaults)",
        variant="allwinner",
        reset_keeps="sunxi.reset-keeps-irq",
        group="sunxi",
        notes=("no SDHCI: the Allwinner SD/MMC host (SMHC, H3 Datasheet 5.3) with its "
               "data port and internal DMA controller (descriptor chains in RAM)",
               "sun5i variant: descriptors of up to 64 KiB, no SD_SAMP_DL"),
    ),
    Board(
        name="cubieboard",
        machine="cubieboard",
        controller="allwinner-sdhost-sun4i",
        # AW_A10_MMC0_BASE; the controller's output on input 32 of the A10's
        # interrupt controller, whose unnamed inputs qdev_pass_gpios gives the
        # SoC container (/machine/soc, allwinner-a10).
        base=0x01C0_F000,
        irq=IrqRoute(kind="in", line=32, qom_type="allwinner-a10"),
        ram_base=0x4000_0000,
        ram=1024 * _MIB,
        sdhci=(),
        binary="qemu-system-arm",
        source="hw/arm/allwinner-a10.c (7.2.22, 10.0.13, 11.1.1 alike): mmc0 "
               "TYPE_AW_SDHOST_SUN4I at AW_A10_MMC0_BASE 0x01c0f000, IRQ 32 of the "
               "aw_a10_pic (its inputs passed to the SoC), dma-memory the system memory; "
               "hw/arm/cubieboard.c: 512 MiB or 1 GiB at AW_A10_SDRAM_BASE 0x40000000, an "
               "sd-card on the SoC's sd-bus from if=sd index 0 (with or without a drive)",
        variant="allwinner",
        reset_keeps="sunxi.reset-keeps-irq",
        group="sunxi",
        notes=("the Allwinner A10's SD/MMC host: QEMU's sun4i variant, descriptors of up "
               "to 8 KiB, the data port at 0x100 (and 0x200)",),
    ),
    Board(
        name="bpim2u",
        machine="bpim2u",
        controller="allwinner-sdhost-sun50i-a64",
        # AW_R40_DEV_MMC0 on GIC SPI AW_R40_GIC_SPI_MMC0 (32), an unnamed input
        # of the R40's arm_gic (/machine/soc/gic).
        base=0x01C0_F000,
        irq=IrqRoute(kind="in", line=32, qom_type="arm_gic"),
        ram_base=0x4000_0000,
        ram=1024 * _MIB,
        sdhci=(),
        binary="qemu-system-arm",
        source="hw/arm/allwinner-r40.c (10.0.13, 11.1.1 alike; not in 7.2.22): four "
               "TYPE_AW_SDHOST_SUN50I_A64, mmc0 at 0x01c0f000 on GIC SPI 32, dma-memory the "
               "system memory, SDRAM at 0x40000000; hw/arm/bananapi_m2u.c: an sd-card on "
               "mmc n from if=sd index n for each of the four, 1 GiB by default",
        variant="allwinner",
        reset_keeps="sunxi.reset-keeps-irq",
        group="sunxi",
        notes=("the Allwinner R40's SD/MMC host: QEMU's sun50i-a64 variant, descriptors "
               "of up to 64 KiB, SD_SAMP_DL (0x144) present",),
    ),
    _RASPI2B,
    # raspi2b's controller and GPIO block on the BCM2837 (the same offsets).
    replace(
        _RASPI2B,
        name="raspi3b-sdhost",
        machine="raspi3b",
        source="hw/arm/bcm2836.c: BCM2837 peripherals at 0x3F000000 (bcm2837_class_init), "
               "laid out as raspi2b's (hw/arm/bcm2835_peripherals.c, 7.2.22, 10.0.13, 11.1.1 "
               "alike: the SDHOST at MMCI0_OFFSET 0x202000 on GPU IRQ INTERRUPT_SDIO 56, a "
               "named input of bcm2835-ic; the GPIO at 0x200000 linked to both sd-buses); "
               "hw/arm/raspi.c: raspi3b (board rev 0xa02082) 1 GiB RAM only, the card from "
               "if=sd index 0 on the GPIO's sd-bus; hw/gpio/bcm2835_gpio.c: the card on the "
               "SDHCI at reset, on the SDHOST once pins 48-53 are all ALT0",
        notes=("raspi3b's BCM2835 SDHOST, the card routed to it by GPFSEL4/5 (as U-Boot's "
               "rpi_3 does): raspi2b's controller and GPIO on the BCM2837; the board "
               "raspi3b is the same machine's SDHCI",
               "QEMU 7.2's qtest cannot intercept the line (a named GPIO): not driven there",
               "not in the default check (raspi2b runs the sdhost group there): --board "
               "raspi3b-sdhost"),
    ),
    Board(
        name="sx1",
        machine="sx1",
        controller="omap-mmc",
        # OMAP_INT_OQN (23) of the second omap-intc (the level-2 handler, ih[1]),
        # an unnamed input: 7.2's qtest intercepts it as well.
        base=0xFFFB_7800,
        irq=IrqRoute(kind="in", line=23, qom_type="omap-intc", nth=1),
        ram_base=0x1000_0000,
        ram=32 * _MIB,
        sdhci=(),
        binary="qemu-system-arm",
        source="hw/arm/omap1.c omap310_mpu_init (7.2.22: omap_mmc_init with a legacy "
               "sd_init card; 10.0.13, 11.1.1: a TYPE_OMAP_MMC sysbus device with an "
               "sd-card on its sd-bus): the MMC/SD host at 0xfffb7800 (0x800 bytes), its "
               "interrupt on ih[1] input OMAP_INT_OQN (23), its DMA requests on the system "
               "DMA's MMC_TX/MMC_RX, the card from if=sd index 0; hw/arm/omap_sx1.c: SDRAM "
               "32 MiB at 0x10000000 (OMAP_EMIFF_BASE; any other -m is refused), the boot "
               "flash a zero ROM at 0 without -pflash, no kernel needed under qtest; sx1-v1 "
               "differs in its flash only",
        variant="omap-mmc",
        reset_keeps="omap.reset-keeps-sdio-be-fifo",
        group="omap",
        notes=("the OMAP1 MMC/SD host (hw/sd/omap_mmc.c): 16-bit registers, a 32-word "
               "FIFO of 16-bit words moved by PIO with almost-full/almost-empty levels, "
               "one interrupt output (harness.model.omap_mmc)",
               "no SDHCI: the SDHCI scenario groups do not apply; the omap group runs",
               "the DMA request lines go to the OMAP system DMA (hw/dma/omap_dma.c): qtest "
               "watches one device's lines, the interrupt controller's, so the lockstep "
               "compares RXDE/TXDE through MMC_STAT's AF/AE (a QEMU test watches the "
               "named dma-rx/dma-tx outputs from 10.0); cheetah (7.2 only) has the same "
               "controller, n800/n810 (7.2 only) the OMAP2 revision"),
    ),
    Board(
        name="icicle",
        machine="microchip-icicle-kit",
        controller="cadence-sdhci",
        # The SRS (the SDHCI) at 0x200 of the window at 0x20008000; the HRS
        # below it (harness.hwdefs.cadence).  MICROCHIP_PFSOC_EMMC_SD_IRQ (88),
        # an unnamed input of the PLIC (riscv.sifive.plic).
        base=0x2000_8000 + 0x200,
        irq=IrqRoute(kind="in", line=88, qom_type="riscv.sifive.plic"),
        ram_base=0x8000_0000,
        ram=1537 * _MIB,
        # DRAM_LO_ALIAS: the first GiB again at 0xC0000000 (the model's RAM
        # range runs on into it; the alias wins, as QEMU maps it).
        ram_aliases=((0xC000_0000, 1 << 30, 0x8000_0000),),
        sdhci=(("sd-spec-version", 2), ("capareg", 0x057834B4)),
        binary="qemu-system-riscv64",
        source="hw/riscv/microchip_pfsoc.c (7.2.22, 10.0.13, 11.1.1 alike): "
               "TYPE_CADENCE_SDHCI at MICROCHIP_PFSOC_EMMC_SD 0x20008000, IRQ 88 of the "
               "PLIC, the SDHCI inside with TYPE_SYSBUS_SDHCI's defaults (sd-spec-version 2, "
               "capareg 0x057834b4); an sd-card on its bus from if=sd index 0 (only with a "
               "drive); DRAM_LO at 0x80000000 (1 GiB, the rest of -m at 0x1000000000), "
               "-m at least the default 1537 MiB; no firmware needed under qtest",
        variant="cadence",
        notes=("the Cadence SD4HC of the PolarFire SoC: a 2.00 SDHCI at 0x200 of a window "
               "whose Host Register Set (HRS00 software reset, HRS04 PHY port, HRS06 eMMC "
               "control) lies below it",),
    ),
    Board(
        name="sifive_u",
        machine="sifive_u",
        controller="sifive.spi",
        # SPI2 (SIFIVE_U_DEV_QSPI2); its interrupt on PLIC source
        # SIFIVE_U_QSPI2_IRQ (6), an unnamed input of the riscv.sifive.plic.
        base=0x1005_0000,
        irq=IrqRoute(kind="in", line=6, qom_type="riscv.sifive.plic"),
        ram_base=0x8000_0000,
        ram=128 * _MIB,
        sdhci=(),
        binary="qemu-system-riscv64",
        source="hw/riscv/sifive_u.c (7.2.22, 10.0.13, 11.1.1 alike): TYPE_SIFIVE_SPI spi2 at "
               "SIFIVE_U_DEV_QSPI2 0x10050000 (4 KiB), IRQ SIFIVE_U_QSPI2_IRQ 6 of the PLIC, "
               "an ssi-sd on its bus whose chip select is the controller's output 1 (chip "
               "select 0), the card from if=sd index 0 (sd-card with spi=on in 7.2, "
               "sd-card-spi since); DRAM at 0x80000000 (SIFIVE_U_DEV_DRAM, the size of -m); "
               "hw/ssi/sifive_spi.c the same in the three releases (num-cs 1)",
        variant="sifive-spi",
        group="spi",
        args=("-bios", "none"),
        notes=("the SD card in SPI mode behind SiFive's SPI controller (FU540-C000 Manual, "
               "\"Serial Peripheral Interface\"; harness.model.sifive_spi) and ssi-sd",
               "no SDHCI: the SDHCI scenario groups do not apply; the spi group runs",
               "started with -bios none: no OpenSBI image is needed under qtest"),
    ),
)


#: The boards with an SDHCI (every one but those with a scenario group of their own).
SDHCI_BOARDS: tuple[Board, ...] = tuple(b for b in BOARDS if not b.group)
#: The scenario groups that run on a board's own controller only.
OWN_GROUPS: frozenset[str] = frozenset(b.group for b in BOARDS if b.group)
#: Every controller variant: the boards' and the PC's (``sdhci``, sdhci-pci).
VARIANTS: frozenset[str] = frozenset(b.variant for b in BOARDS) | {"sdhci"}


class ByVariant(Generic[_T]):
    """What one layer has for each controller variant (``Board.variant``),
    bound by decorator where its code is, as the command table binds its
    handlers: ``@TARGETS.controller("pl181")`` above the class.  A variant no
    board has, or one bound twice, fails at import."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._by: dict[str, _T] = {}

    def controller(self, *variants: str) -> Callable[[_T], _T]:
        """Bind the decorated object as this registry's entry of ``variants``."""
        for v in variants:
            if v not in VARIANTS:
                raise ValueError(f"{self.what}: no board has a {v!r} controller "
                                 f"(one of {', '.join(sorted(VARIANTS))})")

        def bind(obj: _T) -> _T:
            for v in variants:
                if v in self._by:
                    raise ValueError(f"{self.what} of {v!r} bound twice: {self._by[v]!r}, {obj!r}")
                self._by[v] = obj
            return obj
        return bind

    def get(self, variant: str, default: _T) -> _T:
        return self._by.get(variant, default)

    def __getitem__(self, variant: str) -> _T:
        try:
            return self._by[variant]
        except KeyError:
            raise KeyError(f"{self.what}: none for the {variant!r} controller") from None

    def __contains__(self, variant: object) -> bool:
        return variant in self._by

    def __iter__(self) -> Iterator[str]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)

    def items(self) -> list[tuple[str, _T]]:
        return list(self._by.items())


def by_name(name: str) -> Board:
    """The board called ``name``; ``KeyError`` names the known ones."""
    for b in BOARDS:
        if b.name == name:
            return b
    raise KeyError(f"unknown board {name!r}: one of {', '.join(b.name for b in BOARDS)}")


def run_key(board: Board) -> str:
    """What a check's runs call ``board``'s machine (reports, run specs): its QEMU
    machine type, or its name where a board before it has that machine type
    (``raspi3b-sdhost``: raspi3b's SDHOST, beside ``raspi3b``'s SDHCI)."""
    first = next(b for b in BOARDS if b.machine == board.machine)
    return board.machine if first is board else board.name


def board_for(machine: str) -> Board | None:
    """The board a check's run on ``machine`` drives (:func:`run_key`): the first
    with that QEMU machine type, or the board of that name, if one is described."""
    for b in BOARDS:
        if run_key(b) == machine:
            return b
    return None


def boards_of(machine: str) -> list[Board]:
    """Every board of QEMU machine type ``machine`` (raspi3b has two controllers)."""
    return [b for b in BOARDS if b.machine == machine]


def machine_type(key: str) -> str:
    """The QEMU machine type of a run's machine ``key`` (:func:`run_key`)."""
    b = board_for(key)
    return key if b is None else b.machine
