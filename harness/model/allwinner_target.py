"""``AwModelTarget``: the golden model of a board with an Allwinner SD/MMC host.

The Target window is the controller's 4 KiB (:data:`harness.hwdefs.allwinner.WINDOW`)
at the board's base; the card is the shared SD card model
(:class:`~harness.model.sdcard.SDCard`) on the controller's bus
(:class:`~harness.model.allwinner.AwSdHost`), DMA goes to the board's RAM.
QEMU's memory core takes 4-byte aligned accesses only (``.valid`` min and max 4):
a wider access is split into 4-byte pieces, a narrower or misaligned piece
is refused (reads 0, writes dropped); outside the window reads are 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import allwinner as A
from harness.ledger import boundaries, entry
from harness.machine import Machine
from harness.model.allwinner import CMD_IDX, AwSdHost
from harness.model.board_target import TARGETS, BoardModelTarget
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.sdcard import SDCard
from harness.model.target import ModelTarget, card_medium, model_params, split_access
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access

__all__ = ["AwModelTarget"]

RCA = entry("sd.rca-random")
#: Since this version the line is driven 0/1 (before: the masked status value).
LEVEL_0_1 = boundaries.SUNXI_IRQ_LEVEL.since
_RESP0_RCA = A.SD_RESP0.offset  # R6: RCA in bits 31:16 of SD_RESP0


@TARGETS.controller("allwinner")
class AwModelTarget(BoardModelTarget):
    """The model of a board's Allwinner controller and card (see the module
    docstring); the arguments are :class:`ModelTarget`'s."""

    def __init__(self, machine: Machine, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: Any = None) -> None:
        board = machine.board_def
        if board is None or board.controller not in A.VARIANTS:
            raise ValueError("AwModelTarget needs a board with an allwinner-sdhost controller")
        _host, card_params = model_params(machine)
        image, size = card_medium(machine, image, size)
        self.machine, self.profile, self.strict = machine, profile, strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type, ram_base=board.ram_base)
        # No medium: the board still plugs a card, which is then not inserted.
        self.card = card if card is not None else SDCard(
            self.clock, image, size, profile=profile, machine=machine.type, strict=strict,
            **card_params)
        self.host = AwSdHost(self.card, self.memory, A.VARIANTS[board.controller],
                             level_is_value=profile.version < LEVEL_0_1)
        self.adoptions: list[tuple[str, int]] = []
        self.refused: list[str] = []
        self._irq_reported = False

    # -- registers --------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        value = 0
        for off, n in split_access(offset, size):
            if n == 4 and 0 <= off < A.WINDOW:
                value |= self.host.read(off) << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        value &= (1 << (8 * size)) - 1
        for off, n in split_access(offset, size):
            if n == 4 and 0 <= off < A.WINDOW:
                self.host.write(off, (value >> (8 * (off - offset))) & 0xFFFF_FFFF)

    # -- memory, time, interrupt --------------------------------------------------

    def irq_level(self) -> bool:
        return self.host.level

    def _irq_changes(self) -> list[bool]:
        return self.host.irq_changes

    # -- beyond the Target interface ------------------------------------------------

    def _rca_read(self, args: tuple[Any, ...]) -> bool:
        """A 4-byte read of SD_RESP0 right after CMD3 (an SD card, QEMU >= 9.1)."""
        card = self.card
        return (int(args[0]) == _RESP0_RCA and int(args[1]) == 4 and isinstance(card, SDCard)
                and not card.legacy and self.host.command & CMD_IDX == 3)

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt the RCA QEMU's card drew at random (PLS 4.2.2; ledger
        ``sd.rca-random``) when a read of SD_RESP0 after CMD3 differs only in
        bits 31:16; an RCA of 0 or the card's previous one is refused."""
        if op != "read" or not self._rca_read(args):
            return False
        if (int(model_value) ^ int(qemu_value)) & 0xFFFF:
            return False
        rca = int(qemu_value) >> 16
        card = self.card
        assert isinstance(card, SDCard)
        if rca == 0 or rca == card.previous_rca:
            self.refused.append(f"QEMU's CMD3 published RCA {rca:#06x}: 0 or the card's "
                                "previous RCA is not a new random address")
            return False
        self.adoptions.append((RCA.adopts, rca))
        card.rca = rca
        self.host.regs[_RESP0_RCA] = int(qemu_value) & 0xFFFF_FFFF
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        """A read of SD_RESP0 after CMD3: QEMU's RCA cannot be predicted."""
        return op == "read" and self._rca_read(args)

    def adopt(self, kind: str, step: Any) -> list[str]:
        """Nothing is taken from QEMU past a difference but guest memory and the image."""
        if kind == "irq" or step.op == "read":
            return []
        return ModelTarget.adopt(self, kind, step)

    def set_card_inserted(self, inserted: bool) -> None:
        """Insert or eject the medium (QMP); the controller sees the change."""
        if self.card.inserted == inserted:
            return
        self.card.inserted = inserted
        self.host.set_inserted(inserted)
