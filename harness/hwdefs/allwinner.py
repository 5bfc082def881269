"""The Allwinner SD/MMC host controller (SMHC) registers, as data.

Names, offsets, reset values and fields are those of the *Allwinner H3
Datasheet* (revision 1.2), section 5.3.7 "SD/MMC Host Controller Register
List" (SD_GCTL ... SD_FIFO); where the datasheet is silent about a bit the
Linux driver ``drivers/mmc/host/sunxi-mmc.c`` uses, its name is the driver's
(``SDXC_*``, noted).  The internal DMA controller's (IDMAC) descriptor is four
little-endian words (H3 Datasheet 5.3.4.2 "Internal DMA Controller
Description"; ``struct sunxi_idma_des``): DES0 the status/config, DES1 the
buffer size, DES2 the buffer address, DES3 the next descriptor's address.

The controller is one 4 KiB window (QEMU ``hw/sd/allwinner-sdhost.c``
``TYPE_AW_SDHOST``: ``memory_region_init_io`` of 4 KiB, valid accesses of 4
bytes only).  QEMU's four types differ in :data:`VARIANTS`: the largest
buffer a descriptor may name, whether SD_FIFO is also at 0x100 (sun4i: A10),
and whether SD_SAMP_DL exists (sun50i-a64).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["DES0", "DESC_SIZE", "REGISTERS", "VARIANTS", "WINDOW", "Variant", "by_name",
           "by_offset"]

RO, RW, W1C, WO = Access.RO, Access.RW, Access.RW1C, Access.WO

#: The controller's MMIO window (``memory_region_init_io`` of 4 KiB).
WINDOW = 0x1000
#: One IDMAC descriptor: DES0..DES3, four 32-bit words.
DESC_SIZE = 16


@dataclass(frozen=True)
class Variant:
    """One of QEMU's controller types (``allwinner_sdhost_*_class_init``)."""

    qom_type: str
    #: Largest buffer one descriptor moves; DES1 0 means this size.
    max_desc_size: int
    #: SD_FIFO is also reached at 0x100 (A10: "SD_THLDC" there is the FIFO).
    fifo_at_0x100: bool
    #: SD_SAMP_DL (0x144) exists (A64's calibration register).
    can_calibrate: bool


VARIANTS: dict[str, Variant] = {v.qom_type: v for v in (
    Variant("allwinner-sdhost-sun4i", 8 << 10, True, False),
    Variant("allwinner-sdhost-sun5i", 64 << 10, False, False),
    Variant("allwinner-sdhost-sun50i-a64", 64 << 10, False, True),
    Variant("allwinner-sdhost-sun50i-a64-emmc", 8 << 10, False, True),
)}

SD_GCTL = Register("SD_GCTL", 0x00, 4, (
    Field("SOFT_RST", 0, 1, RW, "Software reset (self-clearing)"),
    Field("FIFO_RST", 1, 1, RW, "FIFO reset (self-clearing)"),
    Field("DMA_RST", 2, 1, RW, "DMA reset (self-clearing)"),
    Field("INT_ENB", 4, 1, RW, "Global interrupt enable"),
    Field("DMA_ENB", 5, 1, RW, "DMA enable: data through the IDMAC"),
    Field("CD_DBC_ENB", 8, 1, RW, "Card detect debounce enable"),
    Field("DDR_MOD_SEL", 10, 1, RW, "DDR mode"),
    Field("FIFO_AC_MOD", 31, 1, RW, "FIFO access mode: 1 AHB (PIO), 0 DMA"),
), "Global Control Register (reset 0x00000300)")
SD_CKCR = Register("SD_CKCR", 0x04, 4, (
    Field("CCLK_DIV", 0, 8, RW, "Card clock divider"),
    Field("CCLK_ENB", 16, 1, RW, "Card clock enable"),
    Field("CCLK_CTRL", 17, 1, RW, "Card clock output control (low power)"),
    Field("MASK_DATA0", 31, 1, RW, "Mask DATA0 while the clock changes (SDXC_MASK_DATA0)"),
), "Clock Control Register")
SD_TMOR = Register("SD_TMOR", 0x08, 4, (
    Field("RTO_LMT", 0, 8, RW, "Response timeout limit"),
    Field("DTO_LMT", 8, 24, RW, "Data timeout limit"),
), "Time Out Register (reset 0xFFFFFF40)")
SD_BWDR = Register("SD_BWDR", 0x0C, 4, (
    Field("CARD_WID", 0, 2, RW, "Card width: 0 1-bit, 1 4-bit, 2/3 8-bit"),
), "Bus Width Register")
SD_BKSR = Register("SD_BKSR", 0x10, 4, (
    Field("BLK_SZ", 0, 16, RW, "Block size"),
), "Block Size Register (reset 0x200)")
SD_BYCR = Register("SD_BYCR", 0x14, 4, (
    Field("BYTE_CNT", 0, 32, RW, "Byte count: bytes the data command transfers"),
), "Byte Count Register (reset 0x200)")
SD_CMDR = Register("SD_CMDR", 0x18, 4, (
    Field("CMD_IDX", 0, 6, RW, "Command index"),
    Field("RESP_RCV", 6, 1, RW, "Response receive (SDXC_RESP_EXPIRE)"),
    Field("LONG_RESP", 7, 1, RW, "Long (136-bit) response"),
    Field("CHK_RESP_CRC", 8, 1, RW, "Check the response CRC"),
    Field("DATA_TRANS", 9, 1, RW, "Data transfer (SDXC_DATA_EXPIRE)"),
    Field("TRANS_DIR", 10, 1, RW, "Transfer direction: 1 write"),
    Field("TRANS_MODE", 11, 1, RW, "Transfer mode: 1 stream (SDXC_SEQUENCE_MODE)"),
    Field("STOP_CMD_FLAG", 12, 1, RW, "Send stop command (CMD12) at the end (auto stop)"),
    Field("WAIT_PRE_OVER", 13, 1, RW, "Wait for the data transfer to be over"),
    Field("STOP_ABT_CMD", 14, 1, RW, "Stop/abort command"),
    Field("SEND_INIT_SEQ", 15, 1, RW, "Send the initialisation sequence first"),
    Field("PRG_CLK", 21, 1, RW, "Change card clock: no command is sent (SDXC_UPCLK_ONLY)"),
    Field("BOOT_MOD", 24, 2, RW, "Boot mode"),
    Field("EXP_BOOT_ACK", 26, 1, RW, "Expect boot acknowledge"),
    Field("BOOT_ABT", 27, 1, RW, "Boot abort"),
    Field("VOL_SW", 28, 1, RW, "Voltage switch (CMD11)"),
    Field("USE_HOLD_REG", 29, 1, RW, "Use hold register"),
    Field("CMD_LOAD", 31, 1, RW, "Start command; cleared when the command is sent"),
), "Command Register")
SD_CAGR = Register("SD_CAGR", 0x1C, 4, (Field("CMD_ARG", 0, 32, RW, "Command argument"),),
                   "Command Argument Register")
SD_RESP0, SD_RESP1, SD_RESP2, SD_RESP3 = (
    Register(f"SD_RESP{i}", 0x20 + 4 * i, 4, (Field(f"CMD_RESP{i}", 0, 32, RO, "Response"),),
             f"Response {i} Register") for i in range(4))
_INTS = (
    (1, "RE", "Response error (no response or response CRC error)"),
    (2, "CC", "Command complete"), (3, "DTC", "Data transfer complete"),
    (4, "DTR", "Data transmit request"), (5, "DRR", "Data receive request"),
    (6, "RCE", "Response CRC error"), (7, "DCE", "Data CRC error"),
    (8, "RTO", "Response timeout"), (9, "DTO", "Data timeout"),
    (10, "DSTO", "Data starvation timeout / voltage change done"),
    (11, "FU_FO", "FIFO underrun / overflow"), (12, "CB_IW", "Command busy, illegal write"),
    (13, "DSE", "Data start error"), (14, "ACD", "Auto command done"),
    (15, "DEE", "Data end-bit error"), (16, "SDIOI", "SDIO interrupt"),
    (30, "CARD_INSERT", "Card inserted"), (31, "CARD_REMOVE", "Card removed"),
)
SD_IMKR = Register("SD_IMKR", 0x30, 4, tuple(
    Field(f"{n}_INT_EN", b, 1, RW, f"{d}: interrupt enable") for b, n, d in _INTS),
    "Interrupt Mask Register")
SD_MISR = Register("SD_MISR", 0x34, 4, tuple(
    Field(f"M_{n}_INT", b, 1, RO, f"{d}, masked") for b, n, d in _INTS),
    "Masked Interrupt Status Register")
SD_RISR = Register("SD_RISR", 0x38, 4, tuple(
    Field(n, b, 1, W1C, d) for b, n, d in _INTS),
    "Raw Interrupt Status Register (write 1 to clear)")
SD_STAR = Register("SD_STAR", 0x3C, 4, (
    Field("FIFO_RX_LEVEL", 0, 1, RO, "FIFO at or above the RX watermark"),
    Field("FIFO_TX_LEVEL", 1, 1, RO, "FIFO at or below the TX watermark"),
    Field("FIFO_EMPTY", 2, 1, RO, "FIFO empty"),
    Field("FIFO_FULL", 3, 1, RO, "FIFO full"),
    Field("FSM_STA", 4, 4, RO, "Command FSM state"),
    Field("CARD_PRESENT", 8, 1, RO, "DATA[3] level: card present"),
    Field("CARD_BUSY", 9, 1, RO, "Card data busy (DATA[0] low)"),
    Field("FSM_BUSY", 10, 1, RO, "Data FSM busy"),
    Field("RESP_IDX", 11, 6, RO, "Index of the previous response"),
    Field("FIFO_LEVEL", 17, 5, RO, "Number of filled FIFO locations"),
    Field("DMA_REQ", 31, 1, RO, "DMA request signal state"),
), "Status Register (reset 0x00000006)")
SD_FWLR = Register("SD_FWLR", 0x40, 4, (
    Field("TX_TL", 0, 4, RW, "TX trigger level"),
    Field("RX_TL", 16, 4, RW, "RX trigger level"),
    Field("BSIZE_OF_TRANS", 28, 3, RW, "Burst size of multiple transactions"),
), "FIFO Water Level Register (reset 0x000F0000)")
SD_FUNS = Register("SD_FUNS", 0x44, 4, (
    Field("HOST_SEND_MIMC_IRQRESQ", 0, 1, RW, "Send an IRQ response"),
    Field("READ_WAIT", 1, 1, RW, "SDIO read wait"),
    Field("ABT_RDATA", 2, 1, RW, "Abort read data"),
    Field("CEATA_ON", 16, 16, RW, "0xCEAA: CE-ATA support on"),
), "FIFO Function Select Register")
SD_DBGC = Register("SD_DBGC", 0x50, 4, (Field("DBG", 0, 32, RW, "Debug enable"),),
                   "Debug Enable Register (undocumented; the Linux driver writes 0xdeb)")
SD_A12A = Register("SD_A12A", 0x58, 4, (
    Field("SD_A12A", 0, 16, RW, "Argument of the auto CMD12"),
), "Auto Command 12 Argument Register (reset 0x0000FFFF)")
SD_NTSR = Register("SD_NTSR", 0x5C, 4, (
    Field("MODE_SELEC", 31, 1, RW, "New timing mode (SDXC_2X_TIMING_MODE)"),
), "SD New Timing Set Register (reset 0x00000001)")
SD_SDBG = Register("SD_SDBG", 0x60, 4, (Field("SDBG", 0, 32, RW, "New timing debug"),),
                   "SD New Timing Set Debug Register")
SD_HWRST = Register("SD_HWRST", 0x78, 4, (
    Field("HW_RESET", 0, 1, RW, "Card hardware reset: 0 active"),
), "Hardware Reset Register (reset 0x00000001)")
SD_DMAC = Register("SD_DMAC", 0x80, 4, (
    Field("IDMAC_RST", 0, 1, RW, "IDMAC soft reset (self-clearing)"),
    Field("FIX_BUST_CTRL", 1, 1, RW, "Fixed burst"),
    Field("IDMAC_ENB", 7, 1, RW, "IDMAC enable (SDXC_IDMAC_IDMA_ON)"),
    Field("DES_LOAD_CTRL", 31, 1, RW, "Refetch the descriptor"),
), "DMA Control Register")
SD_DLBA = Register("SD_DLBA", 0x84, 4, (
    Field("DES_BASE_ADDR", 0, 32, RW, "Start of the descriptor list"),
), "Descriptor List Base Address Register")
_IDINTS = (
    (0, "TX_INT", "Transmit interrupt: a descriptor's data sent"),
    (1, "RX_INT", "Receive interrupt: a descriptor's data received"),
    (2, "FATAL_BERR_INT", "Fatal bus error"),
    (4, "DES_UNAVL_INT", "Descriptor unavailable (OWN 0)"),
    (5, "ERR_FLAG_SUM", "Card error summary"),
    (8, "NOR_INT_SUM", "Normal interrupt summary"),
    (9, "ABN_INT_SUM", "Abnormal interrupt summary"),
)
SD_IDST = Register("SD_IDST", 0x88, 4, (
    *(Field(n, b, 1, W1C, d) for b, n, d in _IDINTS),
    Field("ERR_FLAG", 10, 3, RO, "Error bits of a fatal bus error"),
    Field("FSM", 13, 4, RO, "IDMAC state"),
), "DMAC Status Register (bits 9:0 write 1 to clear)")
SD_IDIE = Register("SD_IDIE", 0x8C, 4, tuple(
    Field(f"{n}_ENB", b, 1, RW, f"{d}: enable") for b, n, d in _IDINTS),
    "DMAC Interrupt Enable Register")
SD_CHDA = Register("SD_CHDA", 0x90, 4, (Field("CUR_DES_ADDR", 0, 32, RO, "Current descriptor"),),
                   "Current Host Descriptor Address Register")
SD_CBDA = Register("SD_CBDA", 0x94, 4, (Field("CUR_BUFA", 0, 32, RO, "Current buffer"),),
                   "Current Buffer Descriptor Address Register")
SD_THLDC = Register("SD_THLDC", 0x100, 4, (
    Field("CARD_RD_THLD_ENB", 0, 1, RW, "Card read threshold enable"),
    Field("BCIG", 1, 1, RW, "Busy clear interrupt generation"),
    Field("CARD_WR_THLD_ENB", 2, 1, RW, "Card write threshold enable"),
    Field("CARD_RD_THLD", 16, 12, RW, "Card read threshold size"),
), "Card Threshold Control Register (A10: the FIFO)")
SD_DSBD = Register("SD_DSBD", 0x10C, 4, (Field("HALF_START_BIT", 0, 1, RW, "DDR start bit"),),
                   "eMMC4.5 DDR Start Bit Detection Control Register")
SD_RES_CRC = Register("SD_RES_CRC", 0x110, 4, (Field("RESP_CRC", 0, 7, RO, "Response CRC"),),
                      "CRC Status of the response from the card")
SD_DATA_CRC = tuple(
    Register(f"SD_DATA{7 - i}_CRC", 0x114 + 4 * i, 4,
             (Field(f"DATA{7 - i}_CRC", 0, 16, RO, "CRC of the data line"),),
             f"CRC of data line {7 - i} from the card") for i in range(8))
SD_CRC_STA = Register("SD_CRC_STA", 0x134, 4, (Field("CRC_STA", 0, 3, RO, "CRC status"),),
                      "Response CRC status from the card in a write operation")
SD_SAMP_DL = Register("SD_SAMP_DL", 0x144, 4, (
    Field("SAMP_DL_SW", 0, 6, RW, "Sample delay (software)"),
    Field("SAMP_DL_SW_EN", 7, 1, RW, "Software sample delay enable"),
    Field("SAMP_DL_CAL_DONE", 14, 1, RO, "Calibration done"),
    Field("SAMP_DL_CAL_START", 15, 1, RW, "Start calibration"),
), "Sample Delay Control Register (A64 only; reset 0x00002000)")
SD_FIFO = Register("SD_FIFO", 0x200, 4, (Field("FIFO", 0, 32, RW, "Data FIFO port"),),
                   "Read/Write FIFO")

REGISTERS: tuple[Register, ...] = (
    SD_GCTL, SD_CKCR, SD_TMOR, SD_BWDR, SD_BKSR, SD_BYCR, SD_CMDR, SD_CAGR,
    SD_RESP0, SD_RESP1, SD_RESP2, SD_RESP3, SD_IMKR, SD_MISR, SD_RISR, SD_STAR,
    SD_FWLR, SD_FUNS, SD_DBGC, SD_A12A, SD_NTSR, SD_SDBG, SD_HWRST, SD_DMAC, SD_DLBA,
    SD_IDST, SD_IDIE, SD_CHDA, SD_CBDA, SD_THLDC, SD_DSBD, SD_RES_CRC, *SD_DATA_CRC,
    SD_CRC_STA, SD_SAMP_DL, SD_FIFO,
)
_BY_OFFSET = {r.offset: r for r in REGISTERS}

#: IDMAC descriptor DES0 (H3 Datasheet 5.3.4.2; ``SDXC_IDMAC_DES0_*``).
DES0 = Register("DES0", 0, 4, (
    Field("DIC", 1, 1, RW, "Disable interrupt on completion"),
    Field("LD", 2, 1, RW, "Last descriptor"),
    Field("FD", 3, 1, RW, "First descriptor"),
    Field("CH", 4, 1, RW, "Chain: DES3 is the next descriptor"),
    Field("ER", 5, 1, RW, "End of ring"),
    Field("CES", 30, 1, RW, "Card error summary"),
    Field("OWN", 31, 1, RW, "1: the IDMAC owns the descriptor; cleared when done"),
), "IDMAC descriptor word 0")


def by_offset(offset: int) -> Register | None:
    """The register at ``offset`` of the window, if there is one."""
    return _BY_OFFSET.get(offset)


def by_name(name: str) -> Register:
    """The register called ``name``; ``KeyError`` otherwise."""
    for r in REGISTERS:
        if r.name == name:
            return r
    raise KeyError(f"no SMHC register {name!r}")
