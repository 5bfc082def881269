"""The BCM2835 SDHOST and the GPIO function select that routes the card to it, as data.

Broadcom publishes no manual for the SDHOST ("legacy MMC" at 0x7E202000 in
the VideoCore bus map, MMCI0 in QEMU): the register names, offsets, widths
and bits below are those of its two public drivers, Linux's
``drivers/mmc/host/bcm2835.c`` (the ``SDCMD`` ... ``SDHBLC`` defines, the
``SDCMD_*``, ``SDHSTS_*``, ``SDHCFG_*`` and ``SDEDM_*`` flags) and U-Boot's
``drivers/mmc/bcm2835_sdhost.c`` (the same names).  The GPIO function select
registers are the *BCM2835 ARM Peripherals* manual's (section 6.1,
GPFSEL0..5, three bits per pin; 6.2 lists the alternate functions), the pin
groups Linux's device tree names (``bcm2835-rpi.dtsi``: ``sdhost_gpio48``
pins 48-53 function ALT0, ``emmc_gpio48`` the same pins ALT3).

The SDHOST board (:data:`harness.hwdefs.boards.BOARDS` ``raspi2b``)
sees one Target window from the GPIO block's base: :data:`GPIO_WINDOW` at
offset 0, :data:`SDHOST_WINDOW` at 0x2000 (``hw/arm/bcm2835_peripherals.c``:
GPIO_OFFSET 0x200000, MMCI0_OFFSET 0x202000); :func:`host` and :func:`gpio`
place a register's offset in that window.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = [
    "ALT0", "ALT3", "FIFO_WORDS", "FSEL_INPUT", "GPCLR0", "GPCLR1", "GPFSEL", "GPIO_REGISTERS",
    "GPIO_WINDOW", "GPLEV0", "GPLEV1", "GPSET0", "GPSET1",
    "REGISTERS", "SDARG", "SDCDIV", "SDCMD", "SDDATA", "SDEDM", "SDEDM_RESET", "SDHBCT",
    "SDHBLC", "SDHCFG", "SDHOST_WINDOW", "SDHSTS", "SDHSTS_ERROR_MASK", "SDRSP", "SDTOUT",
    "SDVDD", "SD_PINS", "fsel_field", "gpio", "host",
]

RO, RW, WO, RW1C = Access.RO, Access.RW, Access.WO, Access.RW1C

#: Window offsets of the two blocks (the GPIO block first: the board's base).
GPIO_WINDOW = range(0x0000, 0x1000)
SDHOST_WINDOW = range(0x2000, 0x3000)
#: Linux ``SDDATA_FIFO_WORDS``: the data FIFO holds 16 32-bit words.
FIFO_WORDS = 16

SDCMD = Register("SDCMD", 0x00, 4, (
    Field("CMD", 0, 6, RW, "SDCMD_CMD_MASK: the command index"),
    Field("READ_CMD", 6, 1, RW, "SDCMD_READ_CMD: the command reads data from the card"),
    Field("WRITE_CMD", 7, 1, RW, "SDCMD_WRITE_CMD: the command writes data to the card"),
    Field("LONG_RESPONSE", 9, 1, RW, "SDCMD_LONG_RESPONSE: a 136-bit response (R2)"),
    Field("NO_RESPONSE", 10, 1, RW, "SDCMD_NO_RESPONSE: the command has no response"),
    Field("BUSYWAIT", 11, 1, RW, "SDCMD_BUSYWAIT: wait for the card's busy (R1b)"),
    Field("FAIL_FLAG", 14, 1, RW, "SDCMD_FAIL_FLAG: the command failed (see SDHSTS)"),
    Field("NEW_FLAG", 15, 1, RW, "SDCMD_NEW_FLAG: write 1 to start; reads 1 until done"),
), "Command to SD card (16 bits R/W)")
SDARG = Register("SDARG", 0x04, 4, (Field("ARG", 0, 32, RW, "Command argument"),),
                 "Argument to SD card (32 R/W)")
SDTOUT = Register("SDTOUT", 0x08, 4, (Field("TOUT", 0, 32, RW, "Timeout count"),),
                  "Start value for timeout counter (32 R/W)")
SDCDIV = Register("SDCDIV", 0x0C, 4, (Field("CDIV", 0, 11, RW, "Clock divisor - 2"),),
                  "Start value for clock divider (11 R/W)")
SDRSP: tuple[Register, ...] = tuple(
    Register(f"SDRSP{i}", 0x10 + 4 * i, 4, (Field("RSP", 0, 32, RO, f"Response bits "
                                                  f"{32 * i + 31}:{32 * i}"),),
             f"SD card response ({32 * i + 31}:{32 * i}, 32 R)") for i in range(4))
SDHSTS = Register("SDHSTS", 0x20, 4, (
    Field("DATA_FLAG", 0, 1, RW1C, "SDHSTS_DATA_FLAG: FIFO data/space available"),
    Field("FIFO_ERROR", 3, 1, RW1C, "SDHSTS_FIFO_ERROR"),
    Field("CRC7_ERROR", 4, 1, RW1C, "SDHSTS_CRC7_ERROR: command CRC"),
    Field("CRC16_ERROR", 5, 1, RW1C, "SDHSTS_CRC16_ERROR: data CRC"),
    Field("CMD_TIME_OUT", 6, 1, RW1C, "SDHSTS_CMD_TIME_OUT: no response"),
    Field("REW_TIME_OUT", 7, 1, RW1C, "SDHSTS_REW_TIME_OUT: read/erase/write timeout"),
    Field("SDIO_IRPT", 8, 1, RW1C, "SDHSTS_SDIO_IRPT: SDIO interrupt"),
    Field("BLOCK_IRPT", 9, 1, RW1C, "SDHSTS_BLOCK_IRPT: a block transferred"),
    Field("BUSY_IRPT", 10, 1, RW1C, "SDHSTS_BUSY_IRPT: the card's busy ended"),
), "SD host status (11 bits, write 1 to clear)")
#: Linux ``SDHSTS_ERROR_MASK``: CMD_TIME_OUT and the transfer errors.
SDHSTS_ERROR_MASK = SDHSTS.mask("CMD_TIME_OUT", "CRC7_ERROR", "CRC16_ERROR", "REW_TIME_OUT",
                                "FIFO_ERROR")
SDVDD = Register("SDVDD", 0x30, 4, (Field("POWER_ON", 0, 1, RW, "SDVDD_POWER_ON"),),
                 "SD card power control (1 R/W)")
SDEDM = Register("SDEDM", 0x34, 4, (
    Field("FSM", 0, 4, RO, "SDEDM_FSM_MASK: the state machine (IDENTMODE 0, DATAMODE 1, "
          "READDATA 2, WRITEDATA 3, READWAIT 4, ..., STARTPOWDOWN 0xf)"),
    Field("FIFO_LEVEL", 4, 5, RO, "Words in the data FIFO (Linux reads (edm >> 4) & 0x1f)"),
    Field("WRITE_THRESHOLD", 9, 5, RW, "SDEDM_WRITE_THRESHOLD_SHIFT"),
    Field("READ_THRESHOLD", 14, 5, RW, "SDEDM_READ_THRESHOLD_SHIFT"),
    Field("FORCE_DATA_MODE", 19, 1, RW, "SDEDM_FORCE_DATA_MODE: kick the FSM out of a wait"),
    Field("CLOCK_PULSE", 20, 1, RW, "SDEDM_CLOCK_PULSE"),
    Field("BYPASS", 21, 1, RW, "SDEDM_BYPASS"),
), "Emergency debug mode (13 R/W)")
#: SDEDM_FSM_* values the drivers name.
FSM_IDENTMODE, FSM_DATAMODE, FSM_READWAIT, FSM_WRITESTART1, FSM_STARTPOWDOWN = 0, 1, 4, 0xA, 0xF
SDHCFG = Register("SDHCFG", 0x38, 4, (
    Field("REL_CMD_LINE", 0, 1, RW, "SDHCFG_REL_CMD_LINE"),
    Field("WIDE_INT_BUS", 1, 1, RW, "SDHCFG_WIDE_INT_BUS"),
    Field("WIDE_EXT_BUS", 2, 1, RW, "SDHCFG_WIDE_EXT_BUS: 4-bit card bus"),
    Field("SLOW_CARD", 3, 1, RW, "SDHCFG_SLOW_CARD: the ident clock divisor always"),
    Field("DATA_IRPT_EN", 4, 1, RW, "SDHCFG_DATA_IRPT_EN"),
    Field("SDIO_IRPT_EN", 5, 1, RW, "SDHCFG_SDIO_IRPT_EN"),
    Field("BLOCK_IRPT_EN", 8, 1, RW, "SDHCFG_BLOCK_IRPT_EN"),
    Field("BUSY_IRPT_EN", 10, 1, RW, "SDHCFG_BUSY_IRPT_EN"),
), "Host configuration (2 R/W)")
SDHBCT = Register("SDHBCT", 0x3C, 4, (Field("BYTES", 0, 32, RW, "Bytes per block"),),
                  "Host byte count (debug, 32 R/W)")
SDDATA = Register("SDDATA", 0x40, 4, (Field("DATA", 0, 32, RW, "One FIFO word"),),
                  "Data to/from SD card (32 R/W)")
SDHBLC = Register("SDHBLC", 0x50, 4, (Field("BLOCKS", 0, 9, RW, "Block count"),),
                  "Host block count (SDIO/SDHC, 9 R/W)")

#: Every SDHOST register, in offset order.
REGISTERS: tuple[Register, ...] = (SDCMD, SDARG, SDTOUT, SDCDIV, *SDRSP, SDHSTS, SDVDD, SDEDM,
                                   SDHCFG, SDHBCT, SDDATA, SDHBLC)
#: QEMU's reset value of SDEDM (``bcm2835_sdhost_reset``): FSM 0xf, both thresholds 3.
SDEDM_RESET = 0x0000_C60F

#: BCM2835 ARM Peripherals 6.1: function select codes of a GPFSELn field.
FSEL_INPUT, FSEL_OUTPUT, ALT0, ALT3 = 0b000, 0b001, 0b100, 0b111
#: The card's pins: CLK, CMD, DAT0..DAT3 (Linux ``sdhost_gpio48``).
SD_PINS = range(48, 54)
GPFSEL: tuple[Register, ...] = tuple(
    Register(f"GPFSEL{n}", 4 * n, 4, tuple(
        Field(f"FSEL{10 * n + i}", 3 * i, 3, RW, f"Function of GPIO pin {10 * n + i}")
        for i in range(10) if 10 * n + i < 54), f"GPIO function select {n}") for n in range(6))
GPSET0 = Register("GPSET0", 0x1C, 4, (Field("SET", 0, 32, WO, "Set output pins 0-31"),))
GPSET1 = Register("GPSET1", 0x20, 4, (Field("SET", 0, 22, WO, "Set output pins 32-53"),))
GPCLR0 = Register("GPCLR0", 0x28, 4, (Field("CLR", 0, 32, WO, "Clear output pins 0-31"),))
GPCLR1 = Register("GPCLR1", 0x2C, 4, (Field("CLR", 0, 22, WO, "Clear output pins 32-53"),))
GPLEV0 = Register("GPLEV0", 0x34, 4, (Field("LEV", 0, 32, RO, "Pin levels 0-31"),))
GPLEV1 = Register("GPLEV1", 0x38, 4, (Field("LEV", 0, 22, RO, "Pin levels 32-53"),))
GPIO_REGISTERS: tuple[Register, ...] = (*GPFSEL, GPSET0, GPSET1, GPCLR0, GPCLR1, GPLEV0, GPLEV1)


def fsel_field(pin: int) -> tuple[Register, Field]:
    """The GPFSELn register and field of GPIO ``pin``."""
    reg = GPFSEL[pin // 10]
    return reg, reg.field(f"FSEL{pin}")


def host(reg: Register) -> int:
    """Window offset of SDHOST register ``reg``."""
    return SDHOST_WINDOW.start + reg.offset


def gpio(reg: Register) -> int:
    """Window offset of GPIO register ``reg``."""
    return GPIO_WINDOW.start + reg.offset
