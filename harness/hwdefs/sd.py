"""SD memory card facts from the SD Physical Layer Simplified Specification.

Pure data and tiny helpers: card states, the card status (R1) register with
each bit's clear condition, OCR, CID, CSD v1/v2, SCR, the SD status, the
command table (SD mode only) and response types.  Section numbers refer to
the SD Physical Layer Simplified Specification ("PLS"), version 9.10 unless
a field only exists in an older revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

from harness.hwdefs.fields import Access, Field, Register

# --------------------------------------------------------------------------
# Card states (PLS 4.1, Table 4-42 "CURRENT_STATE")


class CardState(IntEnum):
    """Card states; values 0..8 are the CURRENT_STATE encoding of R1."""

    INACTIVE = -1  #: not encoded in R1 (the card no longer answers)
    IDLE = 0
    READY = 1
    IDENT = 2
    STBY = 3
    TRAN = 4
    DATA = 5  #: sending-data
    RCV = 6  #: receiving-data
    PRG = 7  #: programming
    DIS = 8  #: disconnect


#: States of card identification mode (PLS 4.2).
IDENTIFICATION_MODE_STATES = frozenset({CardState.IDLE, CardState.READY, CardState.IDENT})
#: States of data transfer mode (PLS 4.3).
DATA_TRANSFER_MODE_STATES = frozenset(
    {CardState.STBY, CardState.TRAN, CardState.DATA, CardState.RCV, CardState.PRG, CardState.DIS}
)


# --------------------------------------------------------------------------
# Card status (PLS 4.10.1, Table 4-42)


class ClearCondition(Enum):
    """When a card status bit is cleared (PLS 4.10.1, Table 4-43)."""

    A = "A"  #: according to the card's current state
    B = "B"  #: always related to the previous command; cleared by a valid command
    C = "C"  #: cleared by read (after the response carrying it)


def _cs(name: str, lsb: int, clear: ClearCondition, doc: str, width: int = 1) -> Field:
    access = Access.ROC if clear is ClearCondition.C else Access.RO
    return Field(name, lsb, width, access, f"[{clear.value}] {doc}")


_A, _B, _C = ClearCondition.A, ClearCondition.B, ClearCondition.C

CARD_STATUS = Register(
    "CARD_STATUS",
    0,
    4,
    (
        _cs("AKE_SEQ_ERROR", 3, _C, "error in the authentication sequence"),
        _cs("APP_CMD", 5, _C, "card expects or took the command as an ACMD"),
        _cs("FX_EVENT", 6, _A, "extension functions event"),
        _cs("READY_FOR_DATA", 8, _A, "buffer empty signalling on the bus"),
        _cs("CURRENT_STATE", 9, _B, "state when the command was received", 4),
        _cs("ERASE_RESET", 13, _C, "erase sequence cleared by an out-of-sequence command"),
        _cs("CARD_ECC_DISABLED", 14, _A, "command executed without internal ECC"),
        _cs("WP_ERASE_SKIP", 15, _C, "only partial space erased: protected blocks kept"),
        _cs("CSD_OVERWRITE", 16, _C, "CID/CSD read-only section mismatch, or OTP reverse"),
        _cs("ERROR", 19, _C, "general or unknown error"),
        _cs("CC_ERROR", 20, _C, "internal card controller error"),
        _cs("CARD_ECC_FAILED", 21, _C, "internal ECC failed to correct the data"),
        _cs("ILLEGAL_COMMAND", 22, _B, "command not legal for the card state"),
        _cs("COM_CRC_ERROR", 23, _B, "CRC check of the previous command failed"),
        _cs("LOCK_UNLOCK_FAILED", 24, _C, "sequence or password error in lock/unlock"),
        _cs("CARD_IS_LOCKED", 25, _A, "card locked by the host"),
        _cs("WP_VIOLATION", 26, _C, "write to a protected block or register"),
        _cs("ERASE_PARAM", 27, _C, "invalid selection of write blocks for erase"),
        _cs("ERASE_SEQ_ERROR", 28, _C, "error in the sequence of erase commands"),
        _cs("BLOCK_LEN_ERROR", 29, _C, "block length not allowed for this card"),
        _cs("ADDRESS_ERROR", 30, _C, "misaligned address for the block length"),
        _cs("OUT_OF_RANGE", 31, _C, "argument out of the allowed range"),
    ),
    doc="Card status, returned in R1 (PLS 4.10.1)",
)

#: Clear condition of every named card status field.
CARD_STATUS_CLEAR: dict[str, ClearCondition] = {
    f.name: ClearCondition(f.doc[1]) for f in CARD_STATUS.fields
}


def _bit(name: str) -> int:
    return CARD_STATUS.field(name).mask


OUT_OF_RANGE = _bit("OUT_OF_RANGE")
ADDRESS_ERROR = _bit("ADDRESS_ERROR")
BLOCK_LEN_ERROR = _bit("BLOCK_LEN_ERROR")
ERASE_SEQ_ERROR = _bit("ERASE_SEQ_ERROR")
ERASE_PARAM = _bit("ERASE_PARAM")
WP_VIOLATION = _bit("WP_VIOLATION")
CARD_IS_LOCKED = _bit("CARD_IS_LOCKED")
LOCK_UNLOCK_FAILED = _bit("LOCK_UNLOCK_FAILED")
COM_CRC_ERROR = _bit("COM_CRC_ERROR")
ILLEGAL_COMMAND = _bit("ILLEGAL_COMMAND")
CARD_ECC_FAILED = _bit("CARD_ECC_FAILED")
CC_ERROR = _bit("CC_ERROR")
ERROR = _bit("ERROR")
CSD_OVERWRITE = _bit("CSD_OVERWRITE")
WP_ERASE_SKIP = _bit("WP_ERASE_SKIP")
CARD_ECC_DISABLED = _bit("CARD_ECC_DISABLED")
ERASE_RESET = _bit("ERASE_RESET")
CURRENT_STATE = _bit("CURRENT_STATE")
READY_FOR_DATA = _bit("READY_FOR_DATA")
FX_EVENT = _bit("FX_EVENT")
APP_CMD = _bit("APP_CMD")
AKE_SEQ_ERROR = _bit("AKE_SEQ_ERROR")


def status_mask(clear: ClearCondition) -> int:
    """OR of the card status bits with clear condition ``clear``."""
    m = 0
    for f in CARD_STATUS.fields:
        if CARD_STATUS_CLEAR[f.name] is clear:
            m |= f.mask
    return m


#: Status bits in the 16-bit status field of R6 (PLS 4.9.5): bits 23, 22,
#: 19 and 12:0 of the card status, packed into bits 15, 14, 13 and 12:0.
R6_STATUS_BITS = (COM_CRC_ERROR | ILLEGAL_COMMAND | ERROR) | 0x1FFF


def r6_status(card_status: int) -> int:
    """Pack a card status into R6's 16-bit status field (PLS 4.9.5)."""
    return (
        ((card_status >> 8) & 0xC000) | ((card_status >> 6) & 0x2000) | (card_status & 0x1FFF)
    )


# --------------------------------------------------------------------------
# OCR (PLS 5.1)

OCR = Register(
    "OCR",
    0,
    4,
    (
        Field("LOW_VOLTAGE", 7, 1, Access.RO, "reserved for low voltage range"),
        Field("VDD_27_28", 15, 1, Access.RO),
        Field("VDD_28_29", 16, 1, Access.RO),
        Field("VDD_29_30", 17, 1, Access.RO),
        Field("VDD_30_31", 18, 1, Access.RO),
        Field("VDD_31_32", 19, 1, Access.RO),
        Field("VDD_32_33", 20, 1, Access.RO),
        Field("VDD_33_34", 21, 1, Access.RO),
        Field("VDD_34_35", 22, 1, Access.RO),
        Field("VDD_35_36", 23, 1, Access.RO),
        Field("S18A", 24, 1, Access.RO, "switching to 1.8V accepted"),
        Field("CO2T", 27, 1, Access.RO, "over 2TB card (SDUC)"),
        Field("UHS_II", 29, 1, Access.RO, "UHS-II card status"),
        Field("CCS", 30, 1, Access.RO, "card capacity status: 1 = SDHC/SDXC"),
        Field("BUSY", 31, 1, Access.RO, "card power up status (1 = ready)"),
    ),
    doc="Operation conditions register (PLS 5.1)",
)
OCR_VOLTAGE_WINDOW = 0x00FFFFFF  #: the ACMD41 argument bits a host offers
OCR_VDD_2V7_3V6 = 0x00FF8000  #: bits 23:15, the voltages the spec defines
OCR_CCS = OCR.field("CCS").mask
OCR_BUSY = OCR.field("BUSY").mask
#: ACMD41 argument: host capacity support (PLS 4.2.3.1).
ACMD41_HCS = 1 << 30

# --------------------------------------------------------------------------
# CID (PLS 5.2), 128 bits; Field.lsb counts from bit 0 of the 128-bit value.

CID = Register(
    "CID",
    0,
    16,
    (
        Field("MID", 120, 8, Access.RO, "manufacturer ID"),
        Field("OID", 104, 16, Access.RO, "OEM/application ID (2 ASCII)"),
        Field("PNM", 64, 40, Access.RO, "product name (5 ASCII)"),
        Field("PRV", 56, 8, Access.RO, "product revision (BCD n.m)"),
        Field("PSN", 24, 32, Access.RO, "product serial number"),
        Field("MDT_YEAR", 12, 8, Access.RO, "manufacturing year - 2000"),
        Field("MDT_MONTH", 8, 4, Access.RO, "manufacturing month"),
        Field("CRC", 1, 7, Access.RO, "CRC7 of bits 127:8"),
        Field("ONE", 0, 1, Access.RO, "always 1"),
    ),
    doc="Card identification register (PLS 5.2)",
)

# --------------------------------------------------------------------------
# CSD (PLS 5.3)

_CSD_COMMON_TAIL = (
    Field("FILE_FORMAT_GRP", 15, 1, Access.RO),
    Field("COPY", 14, 1, Access.RW, "copy flag (OTP)"),
    Field("PERM_WRITE_PROTECT", 13, 1, Access.RW, "permanent write protection (OTP)"),
    Field("TMP_WRITE_PROTECT", 12, 1, Access.RW, "temporary write protection"),
    Field("FILE_FORMAT", 10, 2, Access.RO),
    Field("CRC", 1, 7, Access.RW, "CRC7 of bits 127:8"),
    Field("ONE", 0, 1, Access.RO),
)

CSD_V1 = Register(
    "CSD_V1",
    0,
    16,
    (
        Field("CSD_STRUCTURE", 126, 2, Access.RO, "0 = version 1.0"),
        Field("TAAC", 112, 8, Access.RO, "data read access time 1"),
        Field("NSAC", 104, 8, Access.RO, "data read access time 2 (clocks*100)"),
        Field("TRAN_SPEED", 96, 8, Access.RO, "max data transfer rate"),
        Field("CCC", 84, 12, Access.RO, "card command classes"),
        Field("READ_BL_LEN", 80, 4, Access.RO, "log2 of max read block length"),
        Field("READ_BL_PARTIAL", 79, 1, Access.RO),
        Field("WRITE_BLK_MISALIGN", 78, 1, Access.RO),
        Field("READ_BLK_MISALIGN", 77, 1, Access.RO),
        Field("DSR_IMP", 76, 1, Access.RO),
        Field("C_SIZE", 62, 12, Access.RO, "device size"),
        Field("VDD_R_CURR_MIN", 59, 3, Access.RO),
        Field("VDD_R_CURR_MAX", 56, 3, Access.RO),
        Field("VDD_W_CURR_MIN", 53, 3, Access.RO),
        Field("VDD_W_CURR_MAX", 50, 3, Access.RO),
        Field("C_SIZE_MULT", 47, 3, Access.RO, "device size multiplier"),
        Field("ERASE_BLK_EN", 46, 1, Access.RO),
        Field("SECTOR_SIZE", 39, 7, Access.RO, "erase sector size - 1, in write blocks"),
        Field("WP_GRP_SIZE", 32, 7, Access.RO, "write protect group size - 1, in sectors"),
        Field("WP_GRP_ENABLE", 31, 1, Access.RO),
        Field("R2W_FACTOR", 26, 3, Access.RO),
        Field("WRITE_BL_LEN", 22, 4, Access.RO, "log2 of max write block length"),
        Field("WRITE_BL_PARTIAL", 21, 1, Access.RO),
    )
    + _CSD_COMMON_TAIL,
    doc="CSD version 1.0, standard capacity (PLS 5.3.2)",
)

CSD_V2 = Register(
    "CSD_V2",
    0,
    16,
    (
        Field("CSD_STRUCTURE", 126, 2, Access.RO, "1 = version 2.0"),
        Field("TAAC", 112, 8, Access.RO, "fixed 0x0E"),
        Field("NSAC", 104, 8, Access.RO, "fixed 0x00"),
        Field("TRAN_SPEED", 96, 8, Access.RO),
        Field("CCC", 84, 12, Access.RO),
        Field("READ_BL_LEN", 80, 4, Access.RO, "fixed 9"),
        Field("READ_BL_PARTIAL", 79, 1, Access.RO),
        Field("WRITE_BLK_MISALIGN", 78, 1, Access.RO),
        Field("READ_BLK_MISALIGN", 77, 1, Access.RO),
        Field("DSR_IMP", 76, 1, Access.RO),
        Field("C_SIZE", 48, 22, Access.RO, "capacity = (C_SIZE+1) * 512 KiB"),
        Field("ERASE_BLK_EN", 46, 1, Access.RO),
        Field("SECTOR_SIZE", 39, 7, Access.RO),
        Field("WP_GRP_SIZE", 32, 7, Access.RO),
        Field("WP_GRP_ENABLE", 31, 1, Access.RO),
        Field("R2W_FACTOR", 26, 3, Access.RO),
        Field("WRITE_BL_LEN", 22, 4, Access.RO),
        Field("WRITE_BL_PARTIAL", 21, 1, Access.RO),
    )
    + _CSD_COMMON_TAIL,
    doc="CSD version 2.0, SDHC/SDXC (PLS 5.3.3)",
)

# --------------------------------------------------------------------------
# SCR (PLS 5.6), 64 bits

SCR = Register(
    "SCR",
    0,
    8,
    (
        Field("SCR_STRUCTURE", 60, 4, Access.RO),
        Field("SD_SPEC", 56, 4, Access.RO, "0: 1.0/1.01, 1: 1.10, 2: 2.00 or later"),
        Field("DATA_STAT_AFTER_ERASE", 55, 1, Access.RO, "erased data reads 1s"),
        Field("SD_SECURITY", 52, 3, Access.RO),
        Field("SD_BUS_WIDTHS", 48, 4, Access.RO, "bit0: 1 bit, bit2: 4 bit"),
        Field("SD_SPEC3", 47, 1, Access.RO, "3.0X or later"),
        Field("EX_SECURITY", 43, 4, Access.RO),
        Field("SD_SPEC4", 42, 1, Access.RO),
        Field("SD_SPECX", 38, 4, Access.RO),
        Field("CMD_SUPPORT", 32, 4, Access.RO, "bit1: CMD23, bit0: CMD20"),
    ),
    doc="SD configuration register (PLS 5.6)",
)

# --------------------------------------------------------------------------
# SD status (ACMD13, PLS 4.10.2), 512 bits; named fields of interest

SD_STATUS = Register(
    "SD_STATUS",
    0,
    64,
    (
        Field("DAT_BUS_WIDTH", 510, 2, Access.RO, "0: 1 bit, 2: 4 bit"),
        Field("SECURED_MODE", 509, 1, Access.RO),
        Field("SD_CARD_TYPE", 480, 16, Access.RO),
        Field("SIZE_OF_PROTECTED_AREA", 448, 32, Access.RO),
        Field("SPEED_CLASS", 440, 8, Access.RO),
        Field("PERFORMANCE_MOVE", 432, 8, Access.RO),
        Field("AU_SIZE", 428, 4, Access.RO),
        Field("ERASE_SIZE", 408, 16, Access.RO),
        Field("ERASE_TIMEOUT", 402, 6, Access.RO),
        Field("ERASE_OFFSET", 400, 2, Access.RO),
    ),
    doc="SD status (PLS 4.10.2)",
)

# --------------------------------------------------------------------------
# CMD6 switch function status (PLS 4.3.10.4), 512 bits

SWITCH_STATUS = Register(
    "SWITCH_STATUS",
    0,
    64,
    (
        Field("MAX_CURRENT", 496, 16, Access.RO, "max current consumption (mA)"),
        Field("FG6_SUPPORT", 480, 16, Access.RO),
        Field("FG5_SUPPORT", 464, 16, Access.RO),
        Field("FG4_SUPPORT", 448, 16, Access.RO),
        Field("FG3_SUPPORT", 432, 16, Access.RO),
        Field("FG2_SUPPORT", 416, 16, Access.RO),
        Field("FG1_SUPPORT", 400, 16, Access.RO),
        Field("FG6_SELECT", 396, 4, Access.RO),
        Field("FG5_SELECT", 392, 4, Access.RO),
        Field("FG4_SELECT", 388, 4, Access.RO),
        Field("FG3_SELECT", 384, 4, Access.RO),
        Field("FG2_SELECT", 380, 4, Access.RO),
        Field("FG1_SELECT", 376, 4, Access.RO),
        Field("STRUCTURE_VERSION", 368, 8, Access.RO),
    ),
    doc="Switch function status returned by CMD6 (PLS 4.3.10.4)",
)

#: The 64-byte tuning block pattern for 4-bit mode (PLS 4.2.4.5, Table 4-2).
TUNING_BLOCK_4BIT = bytes.fromhex(
    "ff0fff000ffcc3ccc33cccfffefffeef"
    "ffdfffddfffbfffbbfff7fff77f7bdef"
    "fff0fff00ffccc3ccc33cccfffefffee"
    "fffdfffddfffbfffbbfff7fff77f7bde"
)

# --------------------------------------------------------------------------
# Commands (PLS 4.7.4, Tables 4-21 .. 4-32)


class CmdType(Enum):
    """Command types (PLS 4.7.2)."""

    BC = "bc"  #: broadcast, no response
    BCR = "bcr"  #: broadcast with response
    AC = "ac"  #: addressed, no data
    ADTC = "adtc"  #: addressed, data transfer


class Resp(Enum):
    """Response types (PLS 4.9)."""

    NONE = "-"
    R1 = "R1"
    R1B = "R1b"
    R2 = "R2"
    R3 = "R3"
    R6 = "R6"
    R7 = "R7"

    @property
    def length(self) -> int:
        """Payload bytes a host controller returns (QEMU's ``sd_do_command``)."""
        return {"-": 0, "R2": 16}.get(self.value, 4)


class Arg(Enum):
    """What a command's argument holds (PLS 4.7.4, the "argument" column)."""

    NONE = "stuff bits"
    RCA = "[31:16] RCA"
    ADDRESS = "data address"  #: SDSC: a byte address; SDHC/SDXC: a block address
    OTHER = "command-specific"  #: OCR, check pattern, block length, bus width, ...


class Data(Enum):
    """Which way an ``adtc`` command's data block goes (PLS 4.7.4)."""

    READ = "card to host"
    WRITE = "host to card"
    EITHER = "argument bit 0"  #: CMD56 GEN_CMD: RD/WR in bit 0 (PLS 4.3.12)


@dataclass(frozen=True)
class SpecCommand:
    """One SD-mode command or application command as the spec defines it."""

    index: int
    name: str
    cls: int | None  #: command class (None: reserved / not class-bound)
    kind: CmdType | None
    resp: Resp
    app: bool = False
    reserved: bool = False  #: reserved, or defined by another spec (SDIO, security)
    arg: Arg = Arg.NONE
    data: Data | None = None  #: ``adtc`` only

    @property
    def reads(self) -> bool:
        """The host moves a data block from the card (GEN_CMD's either way:
        the harness reads it, argument bit 0 set)."""
        return self.data in (Data.READ, Data.EITHER)


def _c(i: int, name: str, cls: int | None, kind: CmdType | None, resp: Resp,
       reserved: bool = False, arg: Arg = Arg.NONE, data: Data | None = None) -> SpecCommand:
    return SpecCommand(i, name, cls, kind, resp, False, reserved, arg, data)


def _a(i: int, name: str, kind: CmdType | None, resp: Resp, reserved: bool = False,
       arg: Arg = Arg.NONE, data: Data | None = None) -> SpecCommand:
    return SpecCommand(i, name, 8, kind, resp, True, reserved, arg, data)


_BC, _BCR, _AC, _ADTC = CmdType.BC, CmdType.BCR, CmdType.AC, CmdType.ADTC
_N, _R1, _R1B, _R2, _R3, _R6, _R7 = Resp.NONE, Resp.R1, Resp.R1B, Resp.R2, Resp.R3, Resp.R6, Resp.R7
_RCA, _ADDR, _OTHER = Arg.RCA, Arg.ADDRESS, Arg.OTHER
_RD, _WR, _EITHER = Data.READ, Data.WRITE, Data.EITHER

#: Every SD-mode command index 0..63 (PLS 4.7.4).
SD_COMMANDS: dict[int, SpecCommand] = {
    c.index: c
    for c in (
        _c(0, "GO_IDLE_STATE", 0, _BC, _N),
        _c(1, "reserved", None, None, _N, True),
        _c(2, "ALL_SEND_CID", 0, _BCR, _R2),
        _c(3, "SEND_RELATIVE_ADDR", 0, _BCR, _R6),
        _c(4, "SET_DSR", 0, _BC, _N, arg=_OTHER),
        _c(5, "IO_SEND_OP_COND", 9, None, _N, True),
        _c(6, "SWITCH_FUNC", 10, _ADTC, _R1, arg=_OTHER, data=_RD),
        _c(7, "SELECT_DESELECT_CARD", 0, _AC, _R1B, arg=_RCA),
        _c(8, "SEND_IF_COND", 0, _BCR, _R7, arg=_OTHER),
        _c(9, "SEND_CSD", 0, _AC, _R2, arg=_RCA),
        _c(10, "SEND_CID", 0, _AC, _R2, arg=_RCA),
        _c(11, "VOLTAGE_SWITCH", 0, _AC, _R1),
        _c(12, "STOP_TRANSMISSION", 0, _AC, _R1B),
        _c(13, "SEND_STATUS", 0, _AC, _R1, arg=_RCA),
        _c(14, "reserved", None, None, _N, True),
        _c(15, "GO_INACTIVE_STATE", 0, _AC, _N, arg=_RCA),
        _c(16, "SET_BLOCKLEN", 2, _AC, _R1, arg=_OTHER),
        _c(17, "READ_SINGLE_BLOCK", 2, _ADTC, _R1, arg=_ADDR, data=_RD),
        _c(18, "READ_MULTIPLE_BLOCK", 2, _ADTC, _R1, arg=_ADDR, data=_RD),
        _c(19, "SEND_TUNING_BLOCK", 2, _ADTC, _R1, data=_RD),
        _c(20, "SPEED_CLASS_CONTROL", 2, _AC, _R1B, arg=_OTHER),
        _c(21, "reserved", None, None, _N, True),
        _c(22, "ADDRESS_EXTENSION", 2, _AC, _R1, arg=_OTHER),
        _c(23, "SET_BLOCK_COUNT", 2, _AC, _R1, arg=_OTHER),
        _c(24, "WRITE_BLOCK", 4, _ADTC, _R1, arg=_ADDR, data=_WR),
        _c(25, "WRITE_MULTIPLE_BLOCK", 4, _ADTC, _R1, arg=_ADDR, data=_WR),
        _c(26, "reserved for manufacturer", None, None, _N, True),
        _c(27, "PROGRAM_CSD", 4, _ADTC, _R1, data=_WR),
        _c(28, "SET_WRITE_PROT", 6, _AC, _R1B, arg=_ADDR),
        _c(29, "CLR_WRITE_PROT", 6, _AC, _R1B, arg=_ADDR),
        _c(30, "SEND_WRITE_PROT", 6, _ADTC, _R1, arg=_ADDR, data=_RD),
        _c(31, "reserved", None, None, _N, True),
        _c(32, "ERASE_WR_BLK_START", 5, _AC, _R1, arg=_ADDR),
        _c(33, "ERASE_WR_BLK_END", 5, _AC, _R1, arg=_ADDR),
        _c(34, "switch function command set", 10, None, _N, True),
        _c(35, "switch function command set", 10, None, _N, True),
        _c(36, "switch function command set", 10, None, _N, True),
        _c(37, "switch function command set", 10, None, _N, True),
        _c(38, "ERASE", 5, _AC, _R1B, arg=_OTHER),
        _c(39, "reserved", None, None, _N, True),
        _c(40, "defined by DPS spec", None, None, _N, True),
        _c(41, "reserved", None, None, _N, True),
        _c(42, "LOCK_UNLOCK", 7, _ADTC, _R1, data=_WR),
        _c(43, "Q_MANAGEMENT", 1, _AC, _R1B, arg=_OTHER),
        _c(44, "Q_TASK_INFO_A", 1, _AC, _R1, arg=_OTHER),
        _c(45, "Q_TASK_INFO_B", 1, _AC, _R1, arg=_OTHER),
        _c(46, "Q_RD_TASK", 1, _ADTC, _R1, arg=_OTHER, data=_RD),
        _c(47, "Q_WR_TASK", 1, _ADTC, _R1, arg=_OTHER, data=_WR),
        _c(48, "READ_EXTR_SINGLE", 11, _ADTC, _R1, arg=_OTHER, data=_RD),
        _c(49, "WRITE_EXTR_SINGLE", 11, _ADTC, _R1, arg=_OTHER, data=_WR),
        _c(50, "switch function command set", 10, None, _N, True),
        _c(51, "reserved", None, None, _N, True),
        _c(52, "IO_RW_DIRECT (SDIO)", 9, None, _N, True),
        _c(53, "IO_RW_EXTENDED (SDIO)", 9, None, _N, True),
        _c(54, "reserved for SDIO", 9, None, _N, True),
        _c(55, "APP_CMD", 8, _AC, _R1, arg=_RCA),
        _c(56, "GEN_CMD", 8, _ADTC, _R1, arg=_OTHER, data=_EITHER),
        _c(57, "switch function command set", 10, None, _N, True),
        _c(58, "READ_EXTR_MULTI", 11, _ADTC, _R1, arg=_OTHER, data=_RD),
        _c(59, "WRITE_EXTR_MULTI", 11, _ADTC, _R1, arg=_OTHER, data=_WR),
        _c(60, "reserved for manufacturer", None, None, _N, True),
        _c(61, "reserved for manufacturer", None, None, _N, True),
        _c(62, "reserved for manufacturer", None, None, _N, True),
        _c(63, "reserved for manufacturer", None, None, _N, True),
    )
}

#: Application-specific commands (PLS 4.7.4, Table 4-32), and the indices
#: reserved for the SD security specification (Part 3).
SD_APP_COMMANDS: dict[int, SpecCommand] = {
    c.index: c
    for c in (
        _a(6, "SET_BUS_WIDTH", _AC, _R1, arg=_OTHER),
        _a(13, "SD_STATUS", _ADTC, _R1, data=_RD),
        _a(22, "SEND_NUM_WR_BLOCKS", _ADTC, _R1, data=_RD),
        _a(23, "SET_WR_BLK_ERASE_COUNT", _AC, _R1, arg=_OTHER),
        _a(41, "SD_SEND_OP_COND", _BCR, _R3, arg=_OTHER),
        _a(42, "SET_CLR_CARD_DETECT", _AC, _R1, arg=_OTHER),
        _a(51, "SEND_SCR", _ADTC, _R1, data=_RD),
        _a(18, "reserved for SD security", None, _N, True),
        _a(25, "reserved for SD security", None, _N, True),
        _a(26, "reserved for SD security", None, _N, True),
        _a(38, "reserved for SD security", None, _N, True),
        *(_a(i, "reserved for SD security", None, _N, True) for i in range(43, 50)),
    )
}


def index(name: str, app: bool = False) -> int:
    """The index of the (application) command ``name`` (``"READ_SINGLE_BLOCK"``)."""
    table = SD_APP_COMMANDS if app else SD_COMMANDS
    for c in table.values():
        if c.name == name and not c.reserved:
            return c.index
    raise KeyError(f"no {'application ' if app else ''}command {name!r} in PLS 4.7.4")


def commands(*, app: bool = False, arg: Arg | None = None,
             data: Data | None = None) -> frozenset[int]:
    """The indices of the defined (application) commands whose argument is
    ``arg`` and whose data goes ``data`` (either left out: any)."""
    table = SD_APP_COMMANDS if app else SD_COMMANDS
    return frozenset(c.index for c in table.values() if not c.reserved
                     and (arg is None or c.arg is arg) and (data is None or c.data is data))


def command_name(index: int, app: bool = False) -> str:
    """``"CMD17 READ_SINGLE_BLOCK"`` / ``"ACMD41 SD_SEND_OP_COND"`` style name."""
    table = SD_APP_COMMANDS if app else SD_COMMANDS
    prefix = "ACMD" if app else "CMD"
    c = table.get(index)
    return f"{prefix}{index} {c.name}" if c else f"{prefix}{index} (undefined)"


# --------------------------------------------------------------------------
# Helpers


def crc7(data: bytes) -> int:
    """CRC7 (x^7 + x^3 + 1) of ``data``, MSB first (PLS 4.5)."""
    reg = 0
    for byte in data:
        for bit in range(7, -1, -1):
            reg <<= 1
            if ((reg >> 7) ^ (byte >> bit)) & 1:
                reg ^= 0x89
            reg &= 0xFF
    return reg & 0x7F


def register_value(data: bytes) -> int:
    """A big-endian register image (CID/CSD/SCR/...) as an integer."""
    return int.from_bytes(data, "big")


#: Capacity classes by size (PLS 3.3): SDSC up to 2 GiB, SDHC up to 32 GiB,
#: SDXC up to 2 TiB, SDUC above.

# -- command arguments and data blocks, as the spec defines them -------------

#: CMD8 SEND_IF_COND argument (PLS 4.3.13): VHS 0001b (2.7-3.6 V) in bits
#: 11:8 and a check pattern the card echoes in R7.
CMD8_VHS_27_36 = 0x100
CMD8_CHECK_PATTERN = 0xAA
#: ACMD6 SET_BUS_WIDTH argument bits 1:0 by bus width (PLS 4.7.4).
ACMD6_BUS_WIDTH = {1: 0, 4: 2}
#: CMD42 lock card data structure, byte 0 flags (PLS 4.3.7, Table 4-12).
LOCK_SET_PWD = 0x01
LOCK_CLR_PWD = 0x02
LOCK_LOCK = 0x04
LOCK_ERASE = 0x08
#: Data block lengths of CMD30 SEND_WRITE_PROT (32 protection bits) and
#: ACMD22 SEND_NUM_WR_BLOCKS (a 32-bit count), PLS 4.3.5 and 4.3.14.
WRITE_PROT_BYTES = 4
NUM_WR_BLOCKS_BYTES = 4

SDSC_MAX = 2 << 30
SDHC_MAX = 32 << 30
SDXC_MAX = 2 << 40


def capacity_class(size: int) -> str:
    """``"SDSC"``, ``"SDHC"``, ``"SDXC"`` or ``"SDUC"`` for a card of ``size`` bytes."""
    if size <= SDSC_MAX:
        return "SDSC"
    if size <= SDHC_MAX:
        return "SDHC"
    if size <= SDXC_MAX:
        return "SDXC"
    return "SDUC"
