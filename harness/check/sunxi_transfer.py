"""Where a lockstep step is in the commands of an Allwinner SD/MMC host, for reports.

The counterpart of :class:`harness.check.transfer.CommandTracker` for a
board with ``allwinner-sdhost`` (:mod:`harness.hwdefs.allwinner`): it names
the register an access reaches and follows the commands the host loads
(a write of SD_CMDR with CMD_LOAD; SD_CAGR is its argument, SD_BYCR the
bytes it moves) and the words moved through the data port since.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, TRACKERS, Sides, Step
from harness.hwdefs import allwinner as A
from harness.hwdefs import sd
from harness.hwdefs.layouts import layout

__all__ = ["SunxiTracker", "window_register"]

_LOAD = A.SD_CMDR.field("CMD_LOAD").mask
_CLK = A.SD_CMDR.field("PRG_CLK").mask
_DATA = A.SD_CMDR.field("DATA_TRANS").mask
#: The data port: SD_FIFO, and 0x100 on sun4i (on the others SD_THLDC, which
#: no data command touches: counting it there only miscounts a register test).
_FIFOS = (A.SD_FIFO.offset, A.SD_THLDC.offset)
_LAYOUT = layout("allwinner")


def window_register(offset: int) -> str:
    """The name of what ``offset`` of the controller's window reaches
    (:data:`harness.hwdefs.layouts.LAYOUTS` ``allwinner``)."""
    return _LAYOUT.where(offset)


@dataclass
class _Command:
    index: int
    app: bool
    arg: int
    step: int
    data: bool
    byte_count: int
    words: int = 0

    @property
    def name(self) -> str:
        """``CMD17 READ_SINGLE_BLOCK``, as the SD command tables name it."""
        return sd.command_name(self.index, app=self.app)


@TRACKERS.controller("allwinner")
class SunxiTracker:
    """Follows the commands a scenario loads (see the module docstring)."""

    def __init__(self) -> None:
        self.command: _Command | None = None
        self._arg = 0
        self._byte_count = 0x200  # SD_BYCR's reset value
        self._after_cmd55 = False

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Note a write about to run; the command it loads, if any."""
        if op == "write" and int(args[1]) == 4:
            return self._write(int(args[0]), int(args[2]), index)
        if op == "read" and int(args[0]) in _FIFOS and self.command is not None:
            self.command.words += 1
        return ""

    def _write(self, offset: int, value: int, index: int) -> str:
        if offset == A.SD_CAGR.offset:
            self._arg = value
        elif offset == A.SD_BYCR.offset:
            self._byte_count = value
        elif offset in _FIFOS and self.command is not None:
            self.command.words += 1
        elif offset == A.SD_CMDR.offset and value & _LOAD and not value & _CLK:
            cmd = value & 0x3F
            app = self._after_cmd55
            self._after_cmd55 = cmd == 55 and not app
            self.command = _Command(cmd, app, self._arg, index, bool(value & _DATA),
                                    self._byte_count)
            return sd.command_name(cmd, app=app)
        return ""

    def after(self, step: Step) -> None:
        """Nothing to learn from an answer."""

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        """:meth:`after` without a step."""

    @staticmethod
    def follows(offset: int, size: int) -> bool:
        """No answer is followed."""
        return False

    def after_reads(self, offset: int, size: int, answers: list[int]) -> None:
        """:meth:`after_op` for reads in a row: nothing either."""

    def context(self, step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
        """Lines that place ``step`` in the command in progress."""
        lines: list[str] = []
        if step.op in ("read", "write"):
            lines.append(f"register: {window_register(int(step.args[0]))}")
        c = self.command
        if c is not None:
            name = c.name
            data = (f"; data command, SD_BYCR {c.byte_count:#x}, {c.words} words through "
                    "the data port since" if c.data else "")
            lines.append(f"command in progress: {name} arg {c.arg:#010x}, loaded at step "
                         f"#{c.step}{data}")
        return lines
