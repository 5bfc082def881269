"""Where a lockstep step is in the SD protocol: the command in progress and
the position of a data-port access in its transfer.

The lockstep target sees only register accesses.  :class:`CommandTracker`
keeps the bytes the scenario wrote to the registers that set up a command
(BLKSIZE, BLKCNT, ARGUMENT, TRNMOD), notes each command that a write to
CMDREG's upper byte issues (SDHC 2.2.6), counts the bytes moved through
BDATA since then, and learns the card's addressing from the ACMD41 response
(OCR bit 30, CCS: PLS 5.1).  A divergence report uses it to say which
command, block and byte a differing answer belongs to, and what the image
recipe holds there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.step import MODEL_QEMU, Sides, Step
from harness.hwdefs import emmc, sd, sdhci
from harness.hwdefs.fields import Register
from harness.images import BLOCK, Recipe

_SETUP_END = sdhci.CMDREG.offset + 2
_CMD_BYTE = sdhci.CMDREG.offset + 1
_DATA = range(sdhci.BDATA.offset, sdhci.BDATA.offset + sdhci.BDATA.width)
#: Commands that read card blocks through the data lines (PLS 4.7.4).
READ_BLOCKS = (17, 18)
#: Commands after which the image no longer holds what its recipe generated.
WRITES_CARD = (24, 25, 38)
_OCR_BUSY, _OCR_CCS = 1 << 31, 1 << 30


@dataclass
class IssuedCommand:
    """A command as issued: what the registers held when CMDREG was written."""

    index: int
    app: bool
    arg: int
    blksize: int
    blkcnt: int
    trnmod: int
    step: int
    #: Bytes moved through the data port since the command was issued.
    data_bytes: int = 0
    #: Issued to an eMMC device (JESD84 names; no application commands).
    is_emmc: bool = False

    @property
    def name(self) -> str:
        """``CMD18 READ_MULTIPLE_BLOCK`` (from the command table)."""
        if self.is_emmc:
            return emmc.command_name(self.index)
        return sd.command_name(self.index, app=self.app)


def _overlap(offset: int, size: int, window: range) -> int:
    return max(0, min(offset + size, window.stop) - max(offset, window.start))


class CommandTracker:
    """Follows the commands a scenario issues (see the module docstring)."""

    def __init__(self, recipe: Recipe | None = None) -> None:
        self._regs = bytearray(_SETUP_END)
        self._after_cmd55 = False
        self.recipe = recipe
        self.command: IssuedCommand | None = None
        #: High capacity (block addressed) card; None until ACMD41 says.
        self.ccs: bool | None = None
        self.card_written = False

    def _reg(self, r: Register) -> int:
        return int.from_bytes(self._regs[r.offset:r.offset + r.width], "little")

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Take note of an operation about to run; the name of the command
        it issues, if it issues one."""
        if op != "write":
            return ""
        offset, size, value = args
        for i in range(size):
            if 0 <= offset + i < _SETUP_END:
                self._regs[offset + i] = (value >> (8 * i)) & 0xFF
        if not offset <= _CMD_BYTE < offset + size:
            return ""
        cmd = (value >> (8 * (_CMD_BYTE - offset))) & 0x3F
        app = self._after_cmd55
        self._after_cmd55 = cmd == 55 and not app
        blksize = self._reg(sdhci.BLKSIZE) & sdhci.BLKSIZE_SIZE_MASK
        self.command = IssuedCommand(cmd, app, self._reg(sdhci.ARGUMENT), blksize,
                               self._reg(sdhci.BLKCNT), self._reg(sdhci.TRNMOD), index,
                               is_emmc=self.recipe is not None and self.recipe.kind == "eMMC")
        if not app and cmd in WRITES_CARD:
            self.card_written = True
        return self.command.name

    def after(self, step: Step) -> None:
        """Account for an operation that ran (and agreed, or was explained)."""
        self.after_op(step.op, step.args, step.qemu)

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        """:meth:`after` for ``op(*args)`` answered ``answer``, no step made."""
        c = self.command
        if c is None or op not in ("read", "write"):
            return
        offset, size = args[0], args[1]
        if offset < _DATA.stop and _DATA.start < offset + size:
            c.data_bytes += _overlap(offset, size, _DATA)
        rsp = sdhci.RSPREG0.offset
        if (op == "read" and c.app and c.index == 41 and offset <= rsp
                and offset + size >= rsp + 4):
            ocr = (int(answer) >> (8 * (rsp - offset))) & 0xFFFF_FFFF
            if ocr & _OCR_BUSY:
                self.ccs = bool(ocr & _OCR_CCS)

    @staticmethod
    def follows(offset: int, size: int) -> bool:
        """Whether :meth:`after_op` takes note of an access to ``(offset,
        size)`` at all: one touching the data port (bytes moved) or covering
        RSPREG0 (ACMD41's OCR); a caller may skip it for any other."""
        rsp = sdhci.RSPREG0.offset
        return (offset < _DATA.stop and _DATA.start < offset + size) or (
            offset <= rsp and offset + size >= rsp + 4)

    def after_reads(self, offset: int, size: int, answers: list[int]) -> None:
        """:meth:`after_op` for each of ``answers``, reads of one register
        in a row (a block through the data port) taken in one go."""
        c = self.command
        if c is None or not answers:
            return
        rsp = sdhci.RSPREG0.offset
        if c.app and c.index == 41 and offset <= rsp and offset + size >= rsp + 4:
            for answer in answers:
                self.after_op("read", (offset, size), answer)
            return
        if offset < _DATA.stop and _DATA.start < offset + size:
            c.data_bytes += _overlap(offset, size, _DATA) * len(answers)

    def context(self, step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
        """Lines that place ``step`` in the command in progress."""
        c = self.command
        if c is None or step.op == "image_read":  # the image is compared after the run
            return []
        lines = [f"command in progress: {c.name} arg {c.arg:#010x}{self._address(c)}",
                 f"  issued at step #{c.step} with BLKSIZE {c.blksize}, BLKCNT {c.blkcnt}, "
                 f"TRNMOD {c.trnmod:#06x}"]
        if step.op not in ("read", "write"):
            return lines
        offset, size = step.args[0], step.args[1]
        if not _overlap(offset, size, _DATA):
            return lines
        pos = c.data_bytes
        lines.append(f"data port: transfer bytes {pos:#x}..{pos + size - 1:#x} "
                     f"({self._where(c, pos)}) moved by this access")
        first = _first_differing_data_byte(step)
        if first is not None:
            at = pos + first + offset - max(offset, _DATA.start)
            m, q = (int(step.model) >> (8 * first)) & 0xFF, (int(step.qemu) >> (8 * first)) & 0xFF
            lines.append(f"first differing byte: transfer byte {at:#x} ({self._where(c, at)}): "
                         f"{sides.reference} {m:#04x}, {sides.other} {q:#04x}")
            lines += self._recipe_line(c, at)
        return lines

    def _address(self, c: IssuedCommand) -> str:
        if c.app or c.index not in READ_BLOCKS + (24, 25):
            return ""
        if self.ccs is None:
            return " (card addressing not seen: no ACMD41 response read)"
        if self.ccs:
            return f" (block {c.arg})"
        return f" (byte address: block {c.arg // BLOCK} + {c.arg % BLOCK:#x})"

    @staticmethod
    def _where(c: IssuedCommand, pos: int) -> str:
        if not c.blksize:
            return "BLKSIZE 0"
        of = f" of {c.blkcnt}" if c.trnmod & sdhci.TRNMOD_BLKCNT_EN else ""
        return f"block {pos // c.blksize}{of}, byte offset {pos % c.blksize:#x}"

    def _recipe_line(self, c: IssuedCommand, at: int) -> list[str]:
        r = self.recipe
        if (r is None or c.app or c.index not in READ_BLOCKS or self.ccs is None
                or r.pattern not in ("all", "ends")):
            return []
        card = (c.arg * BLOCK if self.ccs else c.arg) + at
        if card >= r.size:
            return [f"image recipe {r.name}: card offset {card:#x} is beyond its "
                    f"{r.size:#x} bytes"]
        stale = "; the card has been written since" if self.card_written else ""
        return [f"image recipe {r.name}: card offset {card:#x} holds "
                f"{r.expected(card, 1)[0]:#04x} as generated{stale}"]


def _first_differing_data_byte(step: Step) -> int | None:
    """Index in the read value of the first differing byte that came from
    the data port, if any."""
    if step.op != "read" or not isinstance(step.model, int) or not isinstance(step.qemu, int):
        return None
    offset, size = step.args[0], step.args[1]
    for i in range(size):
        if offset + i in _DATA and (step.model ^ step.qemu) >> (8 * i) & 0xFF:
            return i
    return None
