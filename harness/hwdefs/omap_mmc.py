"""The OMAP1 (OMAP1510/OMAP310) MMC/SD host registers, as data.

TI's *Multimedia Card (MMC/SD/SDIO) Interface* reference guide (SPRU765,
the one QEMU's ``hw/sd/omap_mmc.c`` cites) is not public in this form; the
names are those Linux's ``drivers/mmc/host/omap.c`` uses (``OMAP_MMC_REG_CMD``
... ``OMAP_MMC_REG_SYSS``, register index << 2 on the 15xx/16xx: every
register is 16 bits wide on a 32-bit stride) and QEMU's comments
(``MMC_CMD`` ... ``MMC_SYSS``).  The status bits are named as Linux's
``mmc_omap_report_irq`` lists them (EOC, CD, CB, BRS, EOFB, DTO, DCRC, CTO,
CCRC, CRW, AF, AE, OCRB, CIRQ, CERR); the command fields as Linux's
``mmc_omap_start_command`` builds the command word.

The board (:data:`harness.hwdefs.boards.BOARDS` ``sx1``) maps the 2 KiB
window at 0xFFFB7800 (``hw/arm/omap1.c``); a Target of that board sees
it from offset 0.  Registers accept 16-bit accesses only.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = [
    "ACCESS_SIZE", "FIFO_WORDS", "MMC_ARGH", "MMC_ARGL", "MMC_BLEN", "MMC_BUF", "MMC_CMD",
    "MMC_CON", "MMC_CTO", "MMC_DATA", "MMC_DTO", "MMC_IE", "MMC_IOSR", "MMC_NBLK",
    "MMC_REGISTERS", "MMC_REV", "MMC_RSP", "MMC_SDIO", "MMC_SPI", "MMC_STAT", "MMC_SYSC",
    "MMC_SYST", "MMC_SYSS", "RSP_TYPES", "STATUS_BITS", "TYPE_ADTC", "WINDOW", "by_offset",
]

RO, RW, RW1C, WO = Access.RO, Access.RW, Access.RW1C, Access.WO

#: The controller's window (omap1.c maps a 0x800-byte region).
WINDOW = 0x800
#: The only access width the registers take (Linux ``__raw_readw``/``__raw_writew``).
ACCESS_SIZE = 2
#: FIFO depth in 16-bit words as QEMU keeps it (32; Linux: "16x2 bytes on
#: 15xx, 32x2 bytes on 16xx").
FIFO_WORDS = 32
#: MMC_CMD TYPE of a command with data (Linux ``OMAP_MMC_CMDTYPE_ADTC``).
TYPE_ADTC = 3
#: MMC_CMD RSP encodings (Linux ``mmc_omap_start_command``: 1 for R1/R1b/R6/R7,
#: 2 for R2, 3 for R3; QEMU adds 6 for R6, read as a 16-bit status).
RSP_TYPES = {"none": 0, "r1": 1, "r2": 2, "r3": 3, "r6": 6}

MMC_CMD = Register("MMC_CMD", 0x00, 2, (
    Field("INDX", 0, 6, RW, "Command index"),
    Field("INAB", 6, 1, RW, "Open-drain bus mode (Linux sets it for MMC_BUSMODE_OPENDRAIN)"),
    Field("INIT", 7, 1, RW, "Send the 80-clock initialisation stream (with index 0)"),
    Field("RSP", 8, 3, RW, "Response type: 0 none, 1 R1/R1b, 2 R2, 3 R3, 6 R6"),
    Field("BUSY", 11, 1, RW, "The response has busy (R1b)"),
    Field("TYPE", 12, 2, RW, "0 bc, 1 bcr, 2 ac, 3 adtc"),
    Field("DDIR", 15, 1, RW, "Data direction: 1 card to host (read)"),
), "Command register (Linux OMAP_MMC_REG_CMD)")
MMC_ARGL = Register("MMC_ARGL", 0x04, 2, (
    Field("ARG", 0, 16, RW, "Command argument bits 15:0"),), "Argument low")
MMC_ARGH = Register("MMC_ARGH", 0x08, 2, (
    Field("ARG", 0, 16, RW, "Command argument bits 31:16"),), "Argument high")
MMC_CON = Register("MMC_CON", 0x0C, 2, (
    Field("CLKD", 0, 10, RW, "Clock divisor (8 bits on revision 1)"),
    Field("BE", 10, 1, RW, "Big-endian FIFO"),
    Field("POW", 11, 1, RW, "Module powered/enabled (Linux sets 1 << 11 at MMC_POWER_ON)"),
    Field("MODE", 12, 2, RW, "0 MMC/SD, others SPI/SDIO/test"),
    Field("DW", 15, 1, RW, "4-bit data bus"),
), "Module configuration")
#: MMC_STAT bits, LSB first, as Linux's ``mmc_omap_report_irq`` names them.
_STATUS = (
    ("EOC", "End of command (response received)"),
    ("CD", "Card detect"),
    ("CB", "Card busy"),
    ("BRS", "Block received/sent: end of data (Linux OMAP_MMC_STAT_END_OF_DATA)"),
    ("EOFB", "End of busy"),
    ("DTO", "Data timeout"),
    ("DCRC", "Data CRC error"),
    ("CTO", "Command response timeout"),
    ("CCRC", "Command CRC error"),
    ("CRW", "Card read wait"),
    ("AF", "Buffer almost full (receive)"),
    ("AE", "Buffer almost empty (transmit)"),
    ("OCRB", "OCR busy (the card's R3 has its power-up bit clear)"),
    ("CIRQ", "Card interrupt"),
    ("CERR", "Card status error in the response"),
)
STATUS_BITS = tuple(n for n, _d in _STATUS)
MMC_STAT = Register("MMC_STAT", 0x10, 2, tuple(
    Field(n, i, 1, RW1C, d) for i, (n, d) in enumerate(_STATUS)), "Status (write 1 to clear)")
MMC_IE = Register("MMC_IE", 0x14, 2, tuple(
    Field(f"{n}_IE", i, 1, RW, f"{n} raises the interrupt") for i, (n, _d) in
    enumerate(_STATUS)), "Interrupt enable")
MMC_CTO = Register("MMC_CTO", 0x18, 2, (
    Field("CTO", 0, 8, RW, "Command timeout, in clocks"),), "Command timeout")
MMC_DTO = Register("MMC_DTO", 0x1C, 2, (
    Field("DTO", 0, 16, RW, "Data timeout, in clocks (x1024 with SDIO bit 5)"),),
    "Data timeout")
MMC_DATA = Register("MMC_DATA", 0x20, 2, (
    Field("DATA", 0, 16, RW, "FIFO data port, 16 bits, little endian"),), "Data access")
MMC_BLEN = Register("MMC_BLEN", 0x24, 2, (
    Field("BLEN", 0, 11, RW, "Block length - 1 (reads: bytes left of the block)"),),
    "Block length")
MMC_NBLK = Register("MMC_NBLK", 0x28, 2, (
    Field("NBLK", 0, 11, RW, "Number of blocks - 1 (reads: blocks left)"),),
    "Number of blocks")
MMC_BUF = Register("MMC_BUF", 0x2C, 2, (
    Field("AEL", 0, 5, RW, "Almost-empty level: AE while the FIFO holds fewer words"),
    Field("TXDE", 7, 1, RW, "Transmit DMA request instead of AE"),
    Field("AFL", 8, 5, RW, "Almost-full level: AF once the FIFO holds more words"),
    Field("RXDE", 15, 1, RW, "Receive DMA request instead of AF"),
), "Buffer configuration")
MMC_SPI = Register("MMC_SPI", 0x30, 2, (), "SPI configuration (OMAP1 only)")
MMC_SDIO = Register("MMC_SDIO", 0x34, 2, (
    Field("CD_ENABLE_R", 0, 1, RO, "Card-detect enable as QEMU reads it back (written at bit 2)"),
    Field("CD_ENABLE", 2, 1, RW, "Card-detect enable (QEMU reads it back at bit 0)"),
    Field("DTO_X1024", 5, 1, RW, "Data timeout in units of 1024 clocks (Linux set_data_timeout)"),
    Field("CD_WAKEUP", 9, 1, RW, "Card-detect wake-up (QEMU reads it back at bit 2)"),
    Field("AKE_ERR", 13, 1, RW, "R1's AKE_SEQ_ERROR counts as a card error (QEMU)"),
), "SDIO mode configuration")
MMC_SYST = Register("MMC_SYST", 0x38, 2, (), "System test")
MMC_REV = Register("MMC_REV", 0x3C, 2, (
    Field("REV", 0, 16, RO, "Module revision (QEMU: 1 on OMAP1)"),), "Revision")
#: MMC_RSP0..7: a response's 16-bit words, the last word received in RSP0;
#: a 48-bit response's 32 bits in RSP6 (low) and RSP7 (high), as Linux reads them.
MMC_RSP = tuple(Register(f"MMC_RSP{i}", 0x40 + 4 * i, 2, (
    Field("RSP", 0, 16, RO, "Response bits"),), f"Command response {i}") for i in range(8))
MMC_IOSR = Register("MMC_IOSR", 0x60, 2, (), "SDIO status (OMAP2)")
MMC_SYSC = Register("MMC_SYSC", 0x64, 2, (
    Field("SRTS", 2, 1, WO, "Soft reset of the module (QEMU's name)"),),
    "System configuration (OMAP2)")
MMC_SYSS = Register("MMC_SYSS", 0x68, 2, (
    Field("RSTD", 0, 1, RO, "Reset done"),), "System status (OMAP2)")

#: Every register, by offset order.
MMC_REGISTERS: tuple[Register, ...] = (
    MMC_CMD, MMC_ARGL, MMC_ARGH, MMC_CON, MMC_STAT, MMC_IE, MMC_CTO, MMC_DTO, MMC_DATA,
    MMC_BLEN, MMC_NBLK, MMC_BUF, MMC_SPI, MMC_SDIO, MMC_SYST, MMC_REV, *MMC_RSP, MMC_IOSR,
    MMC_SYSC, MMC_SYSS)
_BY_OFFSET = {r.offset: r for r in MMC_REGISTERS}


def by_offset(offset: int) -> Register | None:
    """The register at ``offset`` (a register's own offset), or None."""
    return _BY_OFFSET.get(offset)
