"""Where a lockstep step is in the SPI-mode byte stream, for divergence reports.

The counterpart of :class:`harness.check.transfer.CommandTracker` for a
board whose card is in SPI mode (:mod:`harness.hwdefs.pl022`,
:mod:`harness.hwdefs.sifive_spi`): it names the register an access reaches
(GPIO D or the PL022 SSP; SiFive's SPI) and follows the frames the host
writes to SSPDR (``txdata``) as PLS 7.3 frames them: a byte ``01xxxxxx`` outside
a data block starts a command of six bytes; after CMD24/CMD25 a start token
(0xFE/0xFC) starts a write block of 512 data and 2 CRC bytes.  It reports
the command in progress and how many frames followed its last byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, TRACKERS, Sides, Step
from harness.hwdefs import pl022 as P
from harness.hwdefs import sd
from harness.hwdefs import sd_spi as T
from harness.hwdefs import sifive_spi as S
from harness.hwdefs.layouts import layout

__all__ = ["SpiTracker", "window_register"]

_WRITES = (24, 25)
#: Per ``Board.variant``: the window offset where the host writes the bytes.
DATA_REGISTERS: dict[str, int] = {"spi": P.ssp(P.SSPDR), "sifive-spi": S.TXDATA.offset}


def window_register(offset: int, variant: str = "spi") -> str:
    """The name of what ``offset`` of an SPI board's window reaches
    (:data:`harness.hwdefs.layouts.LAYOUTS` ``variant``)."""
    return layout(variant).where(offset)


def _name(index: int, app: bool) -> str:
    spi = None if app else T.SPI_ONLY_COMMANDS.get(index)
    return f"CMD{index} {spi.name}" if spi is not None else sd.command_name(index, app=app)


@dataclass
class _Command:
    index: int
    app: bool
    arg: int
    step: int
    frames: int = 0

    @property
    def name(self) -> str:
        """``CMD17 READ_SINGLE_BLOCK``, as the SPI command table names it."""
        return _name(self.index, self.app)


@TRACKERS.controller("spi")
class SpiTracker:
    """Follows the SPI frames a scenario writes (see the module docstring) on a
    board of ``variant`` (:data:`DATA_REGISTERS`)."""

    def __init__(self, variant: str = "spi") -> None:
        self.variant = variant
        self._dr = DATA_REGISTERS[variant]
        self.command: _Command | None = None
        self._frame = bytearray()
        self._frame_step = 0
        self._block_left = 0
        self._after_cmd55 = False

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Take note of a write to SSPDR about to run; the command it completes."""
        if op != "write" or args[0] != self._dr:
            return ""
        return self._byte(int(args[2]) & 0xFF, index)

    def _byte(self, b: int, index: int) -> str:
        c = self.command
        if c is not None:
            c.frames += 1
        if self._block_left:
            self._block_left -= 1
            return ""
        if self._frame:
            self._frame.append(b)
            if len(self._frame) < 6:
                return ""
            cmd = self._frame[0] & 0x3F
            app = self._after_cmd55
            self._after_cmd55 = cmd == 55 and not app
            self.command = _Command(cmd, app, int.from_bytes(self._frame[1:5], "big"),
                                    self._frame_step)
            self._frame = bytearray()
            return _name(cmd, app)
        if b & 0xC0 == T.CMD_START:
            self._frame = bytearray([b])
            self._frame_step = index
        elif b in (T.TOKEN_SINGLE, T.TOKEN_MULTI_WRITE) and c is not None \
                and c.index in _WRITES:
            self._block_left = 512 + 2
        return ""

    def after(self, step: Step) -> None:
        """Nothing to learn from an answer (the stream is the host's)."""

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        """:meth:`after` without a step."""

    @staticmethod
    def follows(offset: int, size: int) -> bool:
        """No access's answer is followed."""
        return False

    def after_reads(self, offset: int, size: int, answers: list[int]) -> None:
        """:meth:`after_op` for reads in a row: nothing either."""

    def context(self, step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
        """Lines that place ``step`` in the byte stream."""
        lines: list[str] = []
        if step.op in ("read", "write"):
            lines.append(f"register: {window_register(int(step.args[0]), self.variant)}")
        c = self.command
        if c is not None:
            name = _name(c.index, c.app)
            lines.append(f"SPI command in progress: {name} arg {c.arg:#010x}, sent at step "
                         f"#{c.step}; {c.frames} frames since its CRC byte")
        return lines


@TRACKERS.controller("sifive-spi")
class SifiveSpiTracker(SpiTracker):
    """sifive_u's follower: the SPI card's, with SiFive's SPI register names."""

    def __init__(self) -> None:
        super().__init__("sifive-spi")
