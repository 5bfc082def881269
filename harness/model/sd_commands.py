"""The card's command table: one row per SD-mode command and ACMD.

Each row gives the command class and type QEMU's sd-card uses, the response
the spec defines, the handler (a method name of :class:`SDCard`) and what
the model does with it.  Commands without a row answer as QEMU does for an
unknown command: no response and ILLEGAL_COMMAND in the next status.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from harness.hwdefs.sd import CmdType, Resp
from harness.profile import Version


class Support(Enum):
    """How the model (like QEMU) answers a command."""

    IMPLEMENTED = "implemented"
    OPTIONAL = "optional, not implemented: illegal command"
    UNIMPLEMENTED = "recognised, not implemented: illegal command"
    RESERVED = "reserved / other specification: illegal command"
    SECURITY = "SD security (Part 3), not implemented: illegal command"
    VERSION = "depends on the QEMU version (see note)"


@dataclass(frozen=True)
class CommandRow:
    index: int
    app: bool
    name: str
    cls: int  #: class in QEMU's table (0 where QEMU has no entry)
    kind: CmdType
    resp: Resp
    handler: str
    support: Support
    note: str = ""
    in_proto: bool = True  #: QEMU >= 9.1 has a table entry (matters while locked)


_BC, _BCR, _AC, _ADTC = CmdType.BC, CmdType.BCR, CmdType.AC, CmdType.ADTC
_N, _R1, _R1B, _R2, _R3, _R6, _R7 = Resp.NONE, Resp.R1, Resp.R1B, Resp.R2, Resp.R3, Resp.R6, Resp.R7
_I, _O, _U, _X, _S, _V = (Support.IMPLEMENTED, Support.OPTIONAL, Support.UNIMPLEMENTED,
                          Support.RESERVED, Support.SECURITY, Support.VERSION)


def _r(i: int, name: str, cls: int, kind: CmdType, resp: Resp, handler: str,
       support: Support = _I, note: str = "", in_proto: bool = True) -> CommandRow:
    return CommandRow(i, False, name, cls, kind, resp, handler, support, note, in_proto)


def _a(i: int, name: str, kind: CmdType, resp: Resp, handler: str,
       support: Support = _I, note: str = "") -> CommandRow:
    return CommandRow(i, True, name, 8, kind, resp, handler, support, note)


_ILL = "_cmd_illegal"

COMMANDS: tuple[CommandRow, ...] = (
    _r(0, "GO_IDLE_STATE", 0, _BC, _N, "_cmd_go_idle", note="resets the card, no response"),
    _r(1, "SEND_OP_COND", 0, _BCR, _N, _ILL, _X, "MMC/SPI only: unknown in SD mode",
       in_proto=False),
    _r(2, "ALL_SEND_CID", 0, _BCR, _R2, "_cmd_all_send_cid", note="ready -> ident"),
    _r(3, "SEND_RELATIVE_ADDR", 0, _BCR, _R6, "_cmd_send_relative_addr",
       note="ident/stby -> stby; RCA random (>= 9.1) or +0x4567 (< 9.1)"),
    _r(4, "SEND_DSR", 0, _BC, _N, _ILL, _U, "DSR not implemented"),
    _r(5, "IO_SEND_OP_COND", 9, _BC, _N, _ILL, _O, "SDIO"),
    _r(6, "SWITCH_FUNCTION", 10, _ADTC, _R1, "_cmd_switch_function", note="64-byte status"),
    _r(7, "SELECT_DESELECT_CARD", 0, _AC, _R1B, "_cmd_select"),
    _r(8, "SEND_IF_COND", 0, _BCR, _R7, "_cmd_send_if_cond", note="illegal for spec v1.10"),
    _r(9, "SEND_CSD", 0, _AC, _R2, "_cmd_send_csd"),
    _r(10, "SEND_CID", 0, _AC, _R2, "_cmd_send_cid"),
    _r(11, "VOLTAGE_SWITCH", 0, _AC, _R1, _ILL, _O, "no 1.8 V signalling"),
    _r(12, "STOP_TRANSMISSION", 0, _AC, _R1B, "_cmd_stop"),
    _r(13, "SEND_STATUS", 0, _AC, _R1, "_cmd_send_status"),
    _r(14, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(15, "GO_INACTIVE_STATE", 0, _AC, _N, "_cmd_go_inactive"),
    _r(16, "SET_BLOCKLEN", 2, _AC, _R1, "_cmd_set_blocklen", note="> 512: BLOCK_LEN_ERROR"),
    _r(17, "READ_SINGLE_BLOCK", 2, _ADTC, _R1, "_cmd_read_single"),
    _r(18, "READ_MULTIPLE_BLOCK", 0, _ADTC, _R1, "_cmd_read_multiple",
       note="QEMU handles it outside its table (class 0 there)", in_proto=False),
    _r(19, "SEND_TUNING_BLOCK", 2, _ADTC, _R1, "_cmd_send_tuning", note="spec_version 3 only"),
    _r(20, "SPEED_CLASS_CONTROL", 2, _AC, _R1B, _ILL, _O),
    _r(21, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(22, "ADDRESS_EXTENSION", 0, _AC, _R1, _ILL, _X, "SDUC only: unknown", in_proto=False),
    _r(23, "SET_BLOCK_COUNT", 2, _AC, _R1, "_cmd_set_block_count", note="spec_version 3 only"),
    _r(24, "WRITE_BLOCK", 4, _ADTC, _R1, "_cmd_write_single"),
    _r(25, "WRITE_MULTIPLE_BLOCK", 0, _ADTC, _R1, "_cmd_write_multiple",
       note="QEMU handles it outside its table (class 0 there)", in_proto=False),
    _r(26, "PROGRAM_CID", 4, _ADTC, _R1, "_cmd_program_cid", _V,
       "accepted before 9.1 (data must equal the CID), unknown from 9.1", in_proto=False),
    _r(27, "PROGRAM_CSD", 4, _ADTC, _R1, "_cmd_program_csd", note="16 bytes"),
    _r(28, "SET_WRITE_PROT", 6, _AC, _R1B, "_cmd_set_write_prot", note="SDSC only"),
    _r(29, "CLR_WRITE_PROT", 6, _AC, _R1B, "_cmd_clr_write_prot", note="SDSC only"),
    _r(30, "SEND_WRITE_PROT", 6, _ADTC, _R1, "_cmd_send_write_prot", note="SDSC only"),
    _r(31, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(32, "ERASE_WR_BLK_START", 5, _AC, _R1, "_cmd_erase_start"),
    _r(33, "ERASE_WR_BLK_END", 5, _AC, _R1, "_cmd_erase_end"),
    _r(34, "READ_SEC_CMD", 10, _ADTC, _R1, _ILL, _O),
    _r(35, "WRITE_SEC_CMD", 10, _ADTC, _R1, _ILL, _O),
    _r(36, "SEND_PSI", 10, _ADTC, _R1, _ILL, _O),
    _r(37, "CONTROL_ASSD_SYSTEM", 10, _AC, _R1, _ILL, _O),
    _r(38, "ERASE", 5, _AC, _R1B, "_cmd_erase"),
    _r(39, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(40, "DPS", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(41, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(42, "LOCK_UNLOCK", 7, _ADTC, _R1, "_cmd_lock_unlock"),
    _r(43, "Q_MANAGEMENT", 1, _AC, _R1B, _ILL, _O),
    _r(44, "Q_TASK_INFO_A", 1, _AC, _R1, _ILL, _O),
    _r(45, "Q_TASK_INFO_B", 1, _AC, _R1, _ILL, _O),
    _r(46, "Q_RD_TASK", 1, _ADTC, _R1, _ILL, _O),
    _r(47, "Q_WR_TASK", 1, _ADTC, _R1, _ILL, _O),
    _r(48, "READ_EXTR_SINGLE", 1, _ADTC, _R1, _ILL, _O),
    _r(49, "WRITE_EXTR_SINGLE", 1, _ADTC, _R1, _ILL, _O),
    _r(50, "DIRECT_SECURE_READ", 10, _ADTC, _R1, _ILL, _O),
    _r(51, "reserved", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(52, "IO_RW_DIRECT", 9, _BC, _N, _ILL, _O, "SDIO"),
    _r(53, "IO_RW_EXTENDED", 9, _BC, _N, _ILL, _O, "SDIO"),
    _r(54, "reserved for SDIO", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False),
    _r(55, "APP_CMD", 8, _AC, _R1, "_cmd_app_cmd", note="next command is an ACMD"),
    _r(56, "GEN_CMD", 8, _ADTC, _R1, "_cmd_gen_cmd", note="read as zero, writes ignored"),
    _r(57, "DIRECT_SECURE_WRITE", 10, _ADTC, _R1, _ILL, _O),
    _r(58, "READ_EXTR_MULTI", 11, _ADTC, _R1, _ILL, _O),
    _r(59, "WRITE_EXTR_MULTI", 11, _ADTC, _R1, _ILL, _O),
    *(_r(i, "reserved for manufacturer", 0, _AC, _N, _ILL, _X, "unknown", in_proto=False)
      for i in range(60, 64)),
)

APP_COMMANDS: tuple[CommandRow, ...] = (
    _a(6, "SET_BUS_WIDTH", _AC, _R1, "_acmd_set_bus_width", note="SD status DAT_BUS_WIDTH"),
    _a(13, "SD_STATUS", _ADTC, _R1, "_acmd_sd_status", note="64 bytes"),
    _a(22, "SEND_NUM_WR_BLOCKS", _ADTC, _R1, "_acmd_send_num_wr_blocks", note="4 bytes"),
    _a(23, "SET_WR_BLK_ERASE_COUNT", _AC, _R1, "_acmd_set_wr_blk_erase_count",
       note="accepted, no effect"),
    _a(41, "SD_SEND_OP_COND", _BCR, _R3, "_acmd_send_op_cond", note="power-up timer"),
    _a(42, "SET_CLR_CARD_DETECT", _AC, _R1, "_acmd_set_clr_card_detect",
       note="accepted, no effect"),
    _a(51, "SEND_SCR", _ADTC, _R1, "_acmd_send_scr", note="8 bytes"),
    *(_a(i, "reserved for SD security", _AC, _N, _ILL, _S)
      for i in (18, 25, 26, 38, 43, 44, 45, 46, 47, 48, 49)),
)

CMD_ROWS: dict[int, CommandRow] = {r.index: r for r in COMMANDS}
ACMD_ROWS: dict[int, CommandRow] = {r.index: r for r in APP_COMMANDS}
#: ACMD indices that fall back to the regular command of the same index.
ACMD_FALLBACK_NOTE = "any other ACMD index runs the regular command of that index (APP_CMD cleared)"

#: QEMU < 9.1 looked command classes up in a fixed 64-entry table (used for
#: the class 6 check on SDHC and for what a locked card accepts).
LEGACY_CLASSES: tuple[int, ...] = (
    0, 0, 0, 0, 0, 9, 10, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 6, 6, 6, 6,
    5, 5, 10, 10, 10, 10, 5, 9, 9, 9, 7, 7, 7, 7, 7, 7,
    7, 7, 10, 7, 9, 9, 9, 8, 8, 10, 8, 8, 8, 8, 8, 8,
)


@dataclass(frozen=True)
class VersionDiff:
    """A guest-visible difference between QEMU versions of sd.c."""

    key: str
    since: Version  #: first version with the new behaviour
    old: str
    new: str


#: The boundaries: sources of 7.2, 10.0.13 and 10.2.2 were compared.  The
#: 7.2 -> 10.0 changes came with QEMU's command-table rework, taken as 9.1;
#: the 10.0 -> 10.2 changes are taken as 10.1.  11.1 behaves like 10.2.
V_PROTO: Version = (9, 1, 0)
V_10_1: Version = (10, 1, 0)

VERSION_DIFFS: tuple[VersionDiff, ...] = (
    VersionDiff("rca", V_PROTO, "CMD3 adds 0x4567 to the RCA", "CMD3 picks a random RCA"),
    VersionDiff("cmd6-state", V_PROTO, "CMD6 works in any data-transfer-mode state",
                "CMD6 works in transfer state only"),
    VersionDiff("cmd17-length", V_PROTO,
                "CMD17 reads 512 bytes on SDHC (CMD16 length on SDSC) at the first data read",
                "CMD17 reads the CMD16 length at the command, SDHC included"),
    VersionDiff("cmd26", V_PROTO, "CMD26 PROGRAM_CID accepted (16 bytes)",
                "CMD26 is an unknown command"),
    VersionDiff("cmd42-length", V_PROTO, "CMD42 data block has the CMD16 length",
                "CMD42 data block is 512 bytes"),
    VersionDiff("cmd56", V_PROTO, "CMD56 reads CMD16-length blocks of 0xEC, writes CMD16 length",
                "CMD56 reads zeros with a stale length, writes 512 bytes"),
    VersionDiff("current-cmd", V_PROTO,
                "an illegal command leaves the data source alone; other data bytes are ignored",
                "an illegal command clears the data source; a data byte for a non-write source "
                "aborts QEMU; a no-response answer rewinds the data buffer"),
    VersionDiff("inactive", V_PROTO, "commands in inactive state are processed (all illegal)",
                "commands in inactive state are dropped without touching the status"),
    VersionDiff("class-table", V_PROTO, "fixed class table (see LEGACY_CLASSES)",
                "classes from the command table; commands without an entry refused while locked"),
    VersionDiff("sendingdata-state", V_10_1,
                "9.1-10.0: ACMD13/22/51 and CMD19 start sending in any state (7.2 checked it)",
                "illegal outside transfer state"),
    VersionDiff("spec-v1", V_10_1, "spec_version 1 (v1.10) accepted", "spec_version 1 refused"),
    VersionDiff("size-rule", V_10_1, "image size must be a power of 2",
                "power of 2 up to 2 GiB, above that a multiple of 512 KiB"),
)
