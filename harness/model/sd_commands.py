"""The card's command table: QEMU's side of every SD-mode command and ACMD.

One row per command of :data:`harness.hwdefs.sd.SD_COMMANDS` and
:data:`~harness.hwdefs.sd.SD_APP_COMMANDS` (name, spec class, type and
response live there, once).  A row adds what QEMU's sd-card does with the
command: its class in QEMU's table where that differs from the spec, how it
is supported, whether QEMU >= 9.1 has a table entry, a note, and the
handler: the :class:`~harness.model.sdcard.SDCard` method bound to the row
by ``SD.handles`` (:class:`~harness.model.commands.CommandTable`).
Commands without a handler answer as QEMU does for an unknown command: no
response and ILLEGAL_COMMAND in the next status.
"""

from __future__ import annotations

from harness.hwdefs.sd import SD_APP_COMMANDS, SD_COMMANDS
from harness.model.commands import CommandRow, CommandTable, Support

_I, _O, _U, _X, _S, _V = (Support.IMPLEMENTED, Support.OPTIONAL, Support.UNIMPLEMENTED,
                          Support.RESERVED, Support.SECURITY, Support.VERSION)


def _r(i: int, support: Support = _I, note: str = "", in_proto: bool = True,
       cls: int | None = None) -> CommandRow:
    return CommandRow(SD_COMMANDS[i], support, note, in_proto, cls)


def _a(i: int, support: Support = _I, note: str = "") -> CommandRow:
    return CommandRow(SD_APP_COMMANDS[i], support, note)


COMMANDS: tuple[CommandRow, ...] = (
    _r(0, note="resets the card, no response"),
    _r(1, _X, "SEND_OP_COND is MMC/SPI only: unknown in SD mode", in_proto=False),
    _r(2, note="ready -> ident"),
    _r(3, note="ident/stby -> stby; RCA random (>= 9.1) or +0x4567 (< 9.1)"),
    _r(4, _U, "DSR not implemented"),
    _r(5, _O, "SDIO"),
    _r(6, note="64-byte status"),
    _r(7),
    _r(8, note="illegal for spec v1.10"),
    _r(9),
    _r(10),
    _r(11, _O, "no 1.8 V signalling"),
    _r(12),
    _r(13),
    _r(14, _X, "unknown", in_proto=False),
    _r(15),
    _r(16, note="> 512: BLOCK_LEN_ERROR"),
    _r(17),
    _r(18, note="QEMU handles it outside its table (class 0 there)", in_proto=False, cls=0),
    _r(19, note="spec_version 3 only"),
    _r(20, _O),
    _r(21, _X, "unknown", in_proto=False),
    _r(22, _X, "SDUC only: unknown", in_proto=False, cls=0),
    _r(23, note="spec_version 3 only"),
    _r(24),
    _r(25, note="QEMU handles it outside its table (class 0 there)", in_proto=False, cls=0),
    _r(26, _V, "PROGRAM_CID: accepted before 9.1 (data must equal the CID), unknown from 9.1",
       in_proto=False, cls=4),
    _r(27, note="16 bytes"),
    _r(28, note="SDSC only"),
    _r(29, note="SDSC only"),
    _r(30, note="SDSC only"),
    _r(31, _X, "unknown", in_proto=False),
    _r(32),
    _r(33),
    *(_r(i, _O) for i in (34, 35, 36, 37)),
    _r(38),
    _r(39, _X, "unknown", in_proto=False),
    _r(40, _X, "unknown", in_proto=False),
    _r(41, _X, "unknown", in_proto=False),
    _r(42),
    *(_r(i, _O) for i in (43, 44, 45, 46, 47)),
    _r(48, _O, cls=1),
    _r(49, _O, cls=1),
    _r(50, _O),
    _r(51, _X, "unknown", in_proto=False),
    _r(52, _O, "SDIO"),
    _r(53, _O, "SDIO"),
    _r(54, _X, "unknown", in_proto=False, cls=0),
    _r(55, note="next command is an ACMD"),
    _r(56, note="read as zero, writes ignored"),
    _r(57, _O),
    _r(58, _O),
    _r(59, _O),
    *(_r(i, _X, "unknown", in_proto=False) for i in range(60, 64)),
)

APP_COMMANDS: tuple[CommandRow, ...] = (
    _a(6, note="SD status DAT_BUS_WIDTH"),
    _a(13, note="64 bytes"),
    _a(22, note="4 bytes"),
    _a(23, note="accepted, no effect"),
    _a(41, note="power-up timer"),
    _a(42, note="accepted, no effect"),
    _a(51, note="8 bytes"),
    *(_a(i, _S) for i in (18, 25, 26, 38, 43, 44, 45, 46, 47, 48, 49)),
)

#: QEMU < 9.1 looked command classes up in a fixed 64-entry table (used for
#: the class 6 check on SDHC and for what a locked card accepts).
LEGACY_CLASSES: tuple[int, ...] = (
    0, 0, 0, 0, 0, 9, 10, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 6, 6, 6, 6,
    5, 5, 10, 10, 10, 10, 5, 9, 9, 9, 7, 7, 7, 7, 7, 7,
    7, 7, 10, 7, 9, 9, 9, 8, 8, 10, 8, 8, 8, 8, 8, 8,
)

#: The SD-mode table.  Any ACMD index without a row runs the regular
#: command of that index with APP_CMD set (PLS 4.3.9).
SD = CommandTable("SD", COMMANDS, APP_COMMANDS, legacy_classes=LEGACY_CLASSES)


#: The boundaries of the ledger's ``sd.version.*`` entries (the builds on
#: each side: :mod:`harness.ledger.boundaries`): the 7.2 -> 10.0 changes
#: came with QEMU's command-table rework, taken as 9.1; the 10.0 -> 10.2
#: changes are taken as 10.1.
