"""Where a lockstep step is in a PL181 board's command stream, for divergence reports.

The counterpart of :class:`harness.check.transfer.CommandTracker` for a
board whose card is behind an ARM PL181 MMCI (:mod:`harness.hwdefs.pl181`):
it names the register an access reaches (an MMCI register, the FIFO, a
system register) and follows the commands a write of MCICommand with
Enable issues (TRM 3.3.4), after a CMD55 as an application command, and the
FIFO words moved since.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, TRACKERS, Sides, Step
from harness.hwdefs import pl181 as P
from harness.hwdefs import sd
from harness.hwdefs.layouts import layout

__all__ = ["Pl181Tracker", "window_register"]

_COMMAND = P.mmci(P.MCICOMMAND)
_ARGUMENT = P.mmci(P.MCIARGUMENT)
_ENABLE = P.MCICOMMAND.mask("Enable")
_INDEX = P.MCICOMMAND.field("CmdIndex")
_FIFO = range(P.mmci(P.FIFO_START), P.mmci(P.FIFO_END))
_LAYOUT = layout("pl181")


def window_register(offset: int) -> str:
    """The name of what ``offset`` of a PL181 board's window reaches
    (:data:`harness.hwdefs.layouts.LAYOUTS` ``pl181``)."""
    return _LAYOUT.where(offset)


@dataclass
class _Command:
    index: int
    app: bool
    arg: int
    step: int
    words: int = 0

    @property
    def name(self) -> str:
        return sd.command_name(self.index, app=self.app)


@TRACKERS.controller("pl181")
class Pl181Tracker:
    """Follows the commands a scenario issues through MCICommand."""

    def __init__(self) -> None:
        self.command: _Command | None = None
        self._arg = 0
        self._after_cmd55 = False

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Note a write about to run; the command an enabled MCICommand issues."""
        if op != "write":
            return ""
        offset, value = int(args[0]), int(args[2])
        if offset == _ARGUMENT:
            self._arg = value
        elif offset == _COMMAND and value & _ENABLE:
            cmd = _INDEX.get(value)
            app = self._after_cmd55
            self._after_cmd55 = cmd == 55 and not app
            self.command = _Command(cmd, app, self._arg, index)
            return self.command.name
        elif offset in _FIFO and self.command is not None:
            self.command.words += 1
        return ""

    def after(self, step: Step) -> None:
        """Count the FIFO words a read took."""
        if step.op == "read" and int(step.args[0]) in _FIFO and self.command is not None:
            self.command.words += 1

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        if op == "read" and int(args[0]) in _FIFO and self.command is not None:
            self.command.words += 1

    @staticmethod
    def follows(offset: int, size: int) -> bool:
        """Only FIFO reads move what the tracker knows."""
        return offset in _FIFO

    def after_reads(self, offset: int, size: int, answers: list[int]) -> None:
        if offset in _FIFO and self.command is not None:
            self.command.words += len(answers)

    def context(self, step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
        """Lines that place ``step`` in the command stream."""
        lines: list[str] = []
        if step.op in ("read", "write"):
            lines.append(f"register: {window_register(int(step.args[0]))}")
        c = self.command
        if c is not None:
            lines.append(f"command in progress: {c.name} arg {c.arg:#010x}, sent at step "
                         f"#{c.step}; {c.words} FIFO words since")
        return lines
