"""The SD card's SPI mode as the SD Physical Layer Simplified Specification states it.

PLS chapter 7 ("SPI Mode"): the command frame (7.3.1.1: start bits ``01``,
the 6-bit index, the 32-bit argument, CRC7 and the end bit), the response
formats (7.3.2: R1 one byte, R1b R1 and busy, R2 two bytes, R3/R7 R1 and
four bytes), the data tokens (7.3.3), the commands SPI mode adds or
redefines (7.3.1.3 Table 7-3: CMD1, CMD58, CMD59) and CRC checking off by
default (7.2.2).
"""

from __future__ import annotations

from harness.hwdefs.sd import CmdType, Resp, SpecCommand

__all__ = ["BUSY_BYTE", "CMD_START", "DATA_ACCEPTED", "DATA_CRC_ERROR", "DATA_WRITE_ERROR",
           "FILL", "R1_BITS", "R1_LEN", "R2_BITS", "R2_LEN", "R3_LEN", "R7_LEN",
           "SPI_ONLY_COMMANDS", "TOKEN_MULTI_WRITE", "TOKEN_SINGLE", "TOKEN_STOP_TRAN",
           "command_frame", "crc7", "crc16"]

#: 7.3.1.1: the first byte of a command is ``01`` then the index.
CMD_START = 0x40
#: The byte a host clocks out to read (MOSI high) and a card idles at.
FILL = 0xFF
#: 7.3.3.2: start block token of a single block read/write and of each block
#: of a multiple block read; of each block of a multiple block write; stop.
TOKEN_SINGLE, TOKEN_MULTI_WRITE, TOKEN_STOP_TRAN = 0xFE, 0xFC, 0xFD
#: 7.3.3.1: data response token ``xxx0sss1``: 010 accepted, 101 CRC error,
#: 110 write error.
DATA_ACCEPTED, DATA_CRC_ERROR, DATA_WRITE_ERROR = 0x05, 0x0B, 0x0D
#: 7.3.2.2: a card holds the line low while busy (R1b).
BUSY_BYTE = 0x00

#: 7.3.2.1 Figure 7-9: R1, bit 7 always 0.
R1_BITS = ("in idle state", "erase reset", "illegal command", "com crc error",
           "erase sequence error", "address error", "parameter error")
#: 7.3.2.3 Figure 7-10: the second byte of R2 (the first is R1).
R2_BITS = ("card is locked", "wp erase skip | lock/unlock cmd failed", "error", "CC error",
           "card ecc failed", "wp violation", "erase param", "out of range | csd overwrite")
R1_LEN, R2_LEN, R3_LEN, R7_LEN = 1, 2, 5, 5

#: Table 7-3: commands SPI mode defines that SD mode does not (or redefines).
SPI_ONLY_COMMANDS: dict[int, SpecCommand] = {
    1: SpecCommand(1, "SEND_OP_COND", 0, CmdType.BCR, Resp.R1),
    58: SpecCommand(58, "READ_OCR", 0, CmdType.BCR, Resp.R3),
    59: SpecCommand(59, "CRC_ON_OFF", 0, CmdType.BCR, Resp.R1),
}


def index(name: str) -> int:
    """The index of the SPI-mode command ``name`` (``"READ_OCR"``, Table 7-3)."""
    for c in SPI_ONLY_COMMANDS.values():
        if c.name == name:
            return c.index
    raise KeyError(f"no SPI-mode command {name!r} in PLS Table 7-3")


def crc7(data: bytes) -> int:
    """PLS 4.5: CRC7, generator x^7 + x^3 + 1, over ``data``."""
    crc = 0
    for byte in data:
        for bit in range(7, -1, -1):
            fb = ((crc >> 6) & 1) ^ ((byte >> bit) & 1)
            crc = (crc << 1) & 0x7F
            if fb:
                crc ^= 0x09
    return crc


def crc16(data: bytes, crc: int = 0) -> int:
    """PLS 4.5: CRC16 (CCITT, x^16 + x^12 + x^5 + 1, initial 0) over a data
    block; ``crc`` continues an earlier one."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def command_frame(index: int, arg: int, crc: int | None = None) -> bytes:
    """7.3.1.1: the six bytes of CMD``index`` with ``arg``; ``crc`` the last
    byte as sent (default: the valid CRC7 and the end bit)."""
    head = bytes([CMD_START | (index & 0x3F)]) + (arg & 0xFFFFFFFF).to_bytes(4, "big")
    last = (crc7(head) << 1) | 1 if crc is None else crc & 0xFF
    return head + bytes([last])
