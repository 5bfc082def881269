"""The eMMC command table: QEMU's side of each command of the ``emmc`` device.

One row per command QEMU's eMMC protocol knows, over the standard's rows
(:data:`harness.hwdefs.emmc.EMMC_COMMANDS`, JESD84-B51 6.10.4); any other
index is unknown (illegal).  The rows and the handler binding are those of
the SD table (:class:`~harness.model.commands.CommandTable`): the
:class:`~harness.model.emmc.EmmcCard` methods are bound by ``EMMC.handles``,
and the SD card's handlers QEMU shares between the protocols by
``EMMC.inherit``.
"""

from __future__ import annotations

from harness.hwdefs.emmc import EMMC_COMMANDS
from harness.hwdefs.sd import SD_APP_COMMANDS
from harness.model.commands import CommandRow, CommandTable, Support

_I, _U = Support.IMPLEMENTED, Support.UNIMPLEMENTED


def _r(i: int, support: Support = _I, note: str = "", in_proto: bool = True,
       cls: int | None = None) -> CommandRow:
    return CommandRow(EMMC_COMMANDS[i], support, note, in_proto, cls)


COMMANDS: tuple[CommandRow, ...] = (
    _r(0, note="reset; in sleep only arguments 0 and 0xF0F0F0F0"),
    _r(1, note="OCR in R3; an enquiry starts the 0.5 ms power-up timer"),
    _r(2),
    _r(3, note="the host's RCA, R1"),
    _r(4, _U, "SET_DSR not implemented"),
    _r(5),
    _r(6, note="EXT_CSD byte access", cls=10),
    _r(7),
    _r(8, note="512 bytes"),
    _r(9),
    _r(10),
    _r(11, _U, "READ_DAT_UNTIL_STOP not implemented"),
    _r(12),
    _r(13),
    _r(14, _U, "BUSTEST_R not implemented"),
    _r(15),
    _r(16),
    _r(17),
    _r(18, note="outside QEMU's table; RPMB result frames", in_proto=False, cls=0),
    _r(19, _U, "BUSTEST_W not implemented"),
    _r(20, _U, "WRITE_DAT_UNTIL_STOP not implemented"),
    _r(23, note="16-bit count"),
    _r(24),
    _r(25, note="outside QEMU's table; RPMB request frames", in_proto=False, cls=0),
    _r(26, note="16 bytes, must equal the CID"),
    _r(27),
    _r(28, note="byte-addressed devices only"),
    _r(29, note="byte-addressed devices only"),
    _r(30, note="byte-addressed devices only"),
    _r(31, _U, "SEND_WRITE_PROT_TYPE not implemented"),
    _r(35),
    _r(36),
    _r(38, note="erase, trim and discard alike"),
    _r(39, _U, "FAST_IO not implemented"),
    _r(40, _U, "GO_IRQ_STATE not implemented"),
    _r(42),
    _r(49, _U, "SET_TIME not implemented"),
    _r(55),
    _r(56),
)

#: After CMD55 these indices are the SD security commands (illegal); any
#: other index runs the regular command.
APP_COMMANDS: tuple[CommandRow, ...] = tuple(
    CommandRow(SD_APP_COMMANDS[i], Support.SECURITY)
    for i in (18, 25, 26, 38, *range(43, 50)))

EMMC = CommandTable("eMMC", COMMANDS, APP_COMMANDS)
