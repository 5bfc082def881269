"""The SiFive SPI controller's registers, as data.

Names, offsets, fields and reset values are those of the *SiFive FU540-C000
Manual*, chapter "Serial Peripheral Interface (SPI)" (register map and the
register descriptions that follow it): ``sckdiv`` ... ``ip``, a 4 KiB window
of 32-bit registers.  The SPI board (:data:`harness.hwdefs.boards.BOARDS`
``sifive_u``) drives its SD card through SPI2 (``hw/riscv/sifive_u.c``:
``QSPI2`` at 0x10050000, ``ssi-sd`` on its bus, the card's chip select on the
controller's chip select 0); the Target window is the controller's.

The direct-map flash interface (``fctrl``, ``ffmt``) exists on the manual's
QSPI0 only; SPI2 has none (the registers read 0).
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["CSDEF", "CSID", "CSMODE", "CSMODE_AUTO", "CSMODE_HOLD", "CSMODE_OFF", "DELAY0",
           "DELAY1", "FCTRL", "FFMT", "FIFO_DEPTH", "FMT", "IE", "IP", "MANUAL_RESET",
           "REGISTERS", "RESERVED", "RXDATA", "RXMARK", "SCKDIV", "SCKMODE", "TXDATA",
           "TXMARK", "WINDOW"]

RO, RW, WO = Access.RO, Access.RW, Access.WO

#: The controller's register window (4 KiB).
WINDOW = 0x1000
#: The manual's transmit and receive FIFOs: 8 entries each.
FIFO_DEPTH = 8
#: ``csmode`` values (manual table "Chip Select Modes"; 1 is reserved).
CSMODE_AUTO, CSMODE_HOLD, CSMODE_OFF = 0, 2, 3

SCKDIV = Register("sckdiv", 0x00, 4, (
    Field("div", 0, 12, RW, "Divisor for serial clock: f_sck = f_in / (2 (div + 1))"),
), "Serial clock divisor")
SCKMODE = Register("sckmode", 0x04, 4, (
    Field("pha", 0, 1, RW, "Serial clock phase"),
    Field("pol", 1, 1, RW, "Serial clock polarity"),
), "Serial clock mode")
CSID = Register("csid", 0x10, 4, (
    Field("csid", 0, 32, RW, "Chip select ID: the CS pin toggled by hardware control"),
), "Chip select ID")
CSDEF = Register("csdef", 0x14, 4, (
    Field("csdef", 0, 32, RW, "Chip select default: the inactive level of each CS pin"),
), "Chip select default")
CSMODE = Register("csmode", 0x18, 4, (
    Field("mode", 0, 2, RW, "Chip select mode: 0 AUTO, 2 HOLD, 3 OFF"),
), "Chip select mode")
DELAY0 = Register("delay0", 0x28, 4, (
    Field("cssck", 0, 8, RW, "CS to SCK delay"),
    Field("sckcs", 16, 8, RW, "SCK to CS delay"),
), "Delay control 0")
DELAY1 = Register("delay1", 0x2C, 4, (
    Field("intercs", 0, 8, RW, "Minimum CS inactive time"),
    Field("interxfr", 16, 8, RW, "Maximum interframe delay"),
), "Delay control 1")
FMT = Register("fmt", 0x40, 4, (
    Field("proto", 0, 2, RW, "SPI protocol: 0 single, 1 dual, 2 quad"),
    Field("endian", 2, 1, RW, "0 MSB first, 1 LSB first"),
    Field("dir", 3, 1, RW, "1 (Tx): the receive FIFO is not written"),
    Field("len", 16, 4, RW, "Bits per frame (0..8)"),
), "Frame format")
TXDATA = Register("txdata", 0x48, 4, (
    Field("data", 0, 8, RW, "Transmit data (into the transmit FIFO)"),
    Field("full", 31, 1, RO, "The transmit FIFO is full: the write is ignored"),
), "Transmit data")
RXDATA = Register("rxdata", 0x4C, 4, (
    Field("data", 0, 8, RO, "Received data (from the receive FIFO)"),
    Field("empty", 31, 1, RO, "The receive FIFO was empty: data is not valid"),
), "Receive data")
TXMARK = Register("txmark", 0x50, 4, (
    Field("txmark", 0, 3, RW, "Transmit watermark"),
), "Transmit watermark")
RXMARK = Register("rxmark", 0x54, 4, (
    Field("rxmark", 0, 3, RW, "Receive watermark"),
), "Receive watermark")
FCTRL = Register("fctrl", 0x60, 4, (
    Field("en", 0, 1, RW, "SPI flash mode select (QSPI0 only)"),
), "SPI flash interface control")
FFMT = Register("ffmt", 0x64, 4, (
    Field("cmd_en", 0, 1, RW, "Enable sending of the command"),
    Field("addr_len", 1, 3, RW, "Number of address bytes"),
    Field("pad_cnt", 4, 4, RW, "Number of dummy cycles"),
    Field("cmd_proto", 8, 2, RW, "Protocol of the command"),
    Field("addr_proto", 10, 2, RW, "Protocol of the address and padding"),
    Field("data_proto", 12, 2, RW, "Protocol of the data"),
    Field("cmd_code", 16, 8, RW, "Command byte"),
    Field("pad_code", 24, 8, RW, "First 8 bits sent during the dummy cycles"),
), "SPI flash instruction format")
IE = Register("ie", 0x70, 4, (
    Field("txwm", 0, 1, RW, "Transmit watermark enable"),
    Field("rxwm", 1, 1, RW, "Receive watermark enable"),
), "SPI interrupt enable")
IP = Register("ip", 0x74, 4, (
    Field("txwm", 0, 1, RO, "Pending: fewer than txmark entries in the transmit FIFO"),
    Field("rxwm", 1, 1, RO, "Pending: more than rxmark entries in the receive FIFO"),
), "SPI interrupt pending")

#: Every register, in offset order.
REGISTERS: tuple[Register, ...] = (SCKDIV, SCKMODE, CSID, CSDEF, CSMODE, DELAY0, DELAY1, FMT,
                                   TXDATA, RXDATA, TXMARK, RXMARK, FCTRL, FFMT, IE, IP)
#: Offsets inside the register map the manual leaves reserved.
RESERVED: tuple[int, ...] = (0x08, 0x0C, 0x1C, 0x20, 0x24, 0x30, 0x34, 0x38, 0x3C, 0x44, 0x58,
                             0x5C, 0x68, 0x6C)
#: Reset values the manual gives, field by field (one chip select): sckdiv.div
#: 3, csdef all ones, delay0.cssck and delay0.sckcs 1, delay1.intercs 1,
#: delay1.interxfr 0, fmt.len 8 (8-bit frames).
MANUAL_RESET: tuple[tuple[Register, str, int], ...] = (
    (SCKDIV, "div", 3), (CSDEF, "csdef", 1), (DELAY0, "cssck", 1), (DELAY0, "sckcs", 1),
    (DELAY1, "intercs", 1), (DELAY1, "interxfr", 0), (FMT, "len", 8),
)
