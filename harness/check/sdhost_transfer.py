"""Where a lockstep step is in the SDHOST's commands, for divergence reports.

The counterpart of :class:`harness.check.transfer.CommandTracker` for a
raspi board driven through its SDHOST (:mod:`harness.hwdefs.bcm2835_sdhost`):
it names the register an access reaches (the GPIO block or the SDHOST) and
follows the SDCMD writes with NEW_FLAG (the command they issue, CMD55 making
the next one an ACMD), the SDARG written before, and how many SDDATA
accesses followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, TRACKERS, Sides, Step
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import sd
from harness.hwdefs.layouts import layout

__all__ = ["SdhostTracker", "window_register"]

_CMD, _ARG, _DATA = B.host(B.SDCMD), B.host(B.SDARG), B.host(B.SDDATA)
_NEW = B.SDCMD.mask("NEW_FLAG")
_LAYOUT = layout("sdhost")


def window_register(offset: int) -> str:
    """The name of what ``offset`` of the SDHOST board's window reaches
    (:data:`harness.hwdefs.layouts.LAYOUTS` ``sdhost``)."""
    return _LAYOUT.where(offset)


@dataclass
class _Command:
    index: int
    app: bool
    arg: int
    flags: int
    step: int
    data: int = 0

    @property
    def name(self) -> str:
        """``CMD17 READ_SINGLE_BLOCK``, as the lockstep's signature names it."""
        return sd.command_name(self.index, app=self.app)


@TRACKERS.controller("sdhost")
class SdhostTracker:
    """Follows the SDHOST commands a scenario issues (see the module docstring)."""

    def __init__(self) -> None:
        self.command: _Command | None = None
        self._arg = 0
        self._after_cmd55 = False

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Note an access about to run; the command an SDCMD write issues."""
        if op not in ("read", "write"):
            return ""
        offset = int(args[0])
        if offset == _DATA and self.command is not None:
            self.command.data += 1
        if op != "write":
            return ""
        if offset == _ARG:
            self._arg = int(args[2])
        if offset != _CMD or not int(args[2]) & _NEW:
            return ""
        value = int(args[2])
        cmd, app = value & 0x3F, self._after_cmd55
        self._after_cmd55 = cmd == 55 and not app
        self.command = _Command(cmd, app, self._arg, value & ~0x3F & 0xFFFF, index)
        return sd.command_name(cmd, app=app)

    def after(self, step: Step) -> None:
        """Nothing to learn from an answer."""

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        """:meth:`after` without a step."""

    @staticmethod
    def follows(offset: int, size: int) -> bool:
        """No access's answer is followed."""
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
            flags = B.SDCMD.describe(c.flags) if c.flags else "no flags"
            lines.append(f"SDHOST command in progress: {c.name} "
                         f"arg {c.arg:#010x} ({flags}), issued at step #{c.step}; "
                         f"{c.data} SDDATA accesses since")
        return lines
