"""Where a lockstep step is in the commands of an OMAP1 MMC/SD host, for reports.

The counterpart of :class:`harness.check.transfer.CommandTracker` for a
board with ``omap-mmc`` (:mod:`harness.hwdefs.omap_mmc`): it names the
register an access reaches and follows the commands a 16-bit MMC_CMD write
issues while MMC_CON.POW is set (MMC_ARGL/MMC_ARGH its argument; after a
CMD55 an application command), and the MMC_DATA words moved since.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, TRACKERS, Sides, Step
from harness.hwdefs import omap_mmc as O
from harness.hwdefs import sd
from harness.hwdefs.layouts import layout

__all__ = ["OmapTracker", "window_register"]

_POW = O.MMC_CON.mask("POW")
_INDX, _INIT, _TYPE = (O.MMC_CMD.field(n) for n in ("INDX", "INIT", "TYPE"))


_LAYOUT = layout("omap-mmc")


def window_register(offset: int) -> str:
    """The name of what ``offset`` of the controller's window reaches
    (:data:`harness.hwdefs.layouts.LAYOUTS` ``omap-mmc``: QEMU's
    ``omap_mmc_read``/``write`` decode each 16-bit register at its own offset,
    so +0x012 is no register, not MMC_STAT)."""
    return _LAYOUT.where(offset)


@dataclass
class _Command:
    index: int
    app: bool
    arg: int
    step: int
    data: bool
    words: int = 0

    @property
    def name(self) -> str:
        return sd.command_name(self.index, app=self.app)


@TRACKERS.controller("omap-mmc")
class OmapTracker:
    """Follows the commands a scenario issues (see the module docstring)."""

    def __init__(self) -> None:
        self.command: _Command | None = None
        self._arg = 0
        self._pow = False
        self._after_cmd55 = False

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Note an access about to run; the command an MMC_CMD write issues."""
        offset = int(args[0])
        if op == "read" and offset == O.MMC_DATA.offset and self.command is not None:
            self.command.words += 1
        if op != "write" or int(args[1]) != O.ACCESS_SIZE:
            return ""
        value = int(args[2]) & 0xFFFF
        if offset == O.MMC_ARGL.offset:
            self._arg = (self._arg & 0xFFFF_0000) | value
        elif offset == O.MMC_ARGH.offset:
            self._arg = (self._arg & 0xFFFF) | (value << 16)
        elif offset == O.MMC_CON.offset:
            self._pow = bool(value & _POW)
        elif offset == O.MMC_DATA.offset and self.command is not None:
            self.command.words += 1
        elif offset == O.MMC_CMD.offset and self._pow:
            return self._issue(value, index)
        return ""

    def _issue(self, value: int, index: int) -> str:
        cmd = _INDX.get(value)
        if _INIT.get(value) and cmd == 0:
            return "the initialisation stream (INIT)"
        app = self._after_cmd55
        self._after_cmd55 = cmd == 55 and not app
        self.command = _Command(cmd, app, self._arg, index, _TYPE.get(value) == O.TYPE_ADTC)
        return self.command.name

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
            data = f"; data command, {c.words} MMC_DATA words since" if c.data else ""
            lines.append(f"command in progress: {c.name} arg {c.arg:#010x}, sent at step "
                         f"#{c.step}{data}")
        return lines
