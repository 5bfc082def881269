"""``OmapModelTarget``: the golden model of a board with the OMAP1 MMC/SD host.

The Target window is the controller's 2 KiB (:data:`harness.hwdefs.omap_mmc.WINDOW`)
at the board's base (sx1: 0xFFFB7800); the card is the shared SD card model
(:class:`~harness.model.sdcard.SDCard`) on the controller's bus
(:class:`~harness.model.omap_mmc.OmapMmc`).  QEMU's memory core hands the
device accesses of 1 to 4 bytes in aligned pieces (the region sets no
``.valid``/``.impl``); the device takes 16-bit ones only.  Outside the
window reads are 0 and writes dropped (scenarios go nowhere else).  The
interrupt line is the controller's output into the level-2 interrupt
handler (OMAP_INT_OQN).  The version differences are the boundaries
``omap.srts-card-kept``, ``omap.stack-zero`` and ``omap.badwidth-logged``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import omap_mmc as O
from harness.ledger import boundaries, entry
from harness.machine import Machine
from harness.model.board_target import TARGETS, BoardModelTarget
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.omap_mmc import OmapMmc
from harness.model.sdcard import SDCard
from harness.model.target import card_medium, model_params, split_access
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access

__all__ = ["OmapModelTarget", "boot_flash_word"]

RCA = entry("sd.rca-random")
STACK = entry("omap.version.short-response-stack-bytes")
#: From these versions on: SRTS keeps the card, stack bytes read 0, bad widths read 0.
CARD_ON_BUS = boundaries.OMAP_SRTS_CARD.since
STACK_ZERO = boundaries.OMAP_STACK_ZERO.since
BADWIDTH_LOGGED = boundaries.OMAP_BADWIDTH.since
_RSP7 = O.MMC_RSP[7].offset  # R6: the RCA is the answer's first two bytes


def boot_flash_word(offset: int) -> int:
    """Guest memory at ``offset`` < 0x800, where a bad-width access went before
    11.0: sx1's boot flash, a ROM QEMU zero-fills when no -pflash is given
    (hw/arm/omap_sx1.c); qtest cannot write it."""
    return 0


@TARGETS.controller("omap-mmc")
class OmapModelTarget(BoardModelTarget):
    """The model of a board's OMAP MMC/SD host and card (see the module
    docstring); the arguments are :class:`ModelTarget`'s."""

    def __init__(self, machine: Machine, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: Any = None) -> None:
        board = machine.board_def
        if board is None or board.variant != "omap-mmc":
            raise ValueError("OmapModelTarget needs a board with the OMAP MMC/SD host")
        _host, card_params = model_params(machine)
        image, size = card_medium(machine, image, size)
        self.machine, self.profile, self.strict = machine, profile, strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type, ram_base=board.ram_base)
        self.card = card if card is not None else SDCard(
            self.clock, image, size, profile=profile, machine=machine.type, strict=strict,
            **card_params)
        v = profile.version
        self.mmc = OmapMmc(self.card, stack_zero=v >= STACK_ZERO,
                           srts_resets_card=v < CARD_ON_BUS,
                           bad_width=None if v >= BADWIDTH_LOGGED else boot_flash_word)
        self.adoptions: list[tuple[str, int]] = []
        self.refused: list[str] = []
        self._irq_reported = False

    # -- registers --------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        value = 0
        for off, n in split_access(offset, size):
            if 0 <= off < O.WINDOW:
                value |= self.mmc.read(off, n) << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        value &= (1 << (8 * size)) - 1
        for off, n in split_access(offset, size):
            if 0 <= off < O.WINDOW:
                piece = (value >> (8 * (off - offset))) & ((1 << (8 * n)) - 1)
                self.mmc.write(off, n, piece)

    # -- memory, time, interrupt --------------------------------------------------

    def irq_level(self) -> bool:
        return self.mmc.level

    def _irq_changes(self) -> list[bool]:
        return self.mmc.irq_changes

    # -- beyond the Target interface ------------------------------------------------

    def _unknown_rsp(self, offset: int, size: int) -> int | None:
        """The RSP index a 16-bit read at ``offset`` reaches whose value QEMU
        took from uninitialised stack (< 10.0), else None."""
        for i, reg in enumerate(O.MMC_RSP):
            if offset == reg.offset and size == O.ACCESS_SIZE and i in self.mmc.rsp_unknown:
                return i
        return None

    def _cmd3_rca(self, offset: int, size: int) -> bool:
        """A read of RSP7 (the R6's RCA) right after CMD3 (SD card, >= 9.1)."""
        card = self.card
        return (isinstance(card, SDCard) and not card.legacy and offset == _RSP7
                and size == O.ACCESS_SIZE
                and O.MMC_CMD.field("INDX").get(self.mmc.last_cmd) == 3)

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt what the model cannot know: the RCA QEMU's card drew for CMD3
        (since 9.1, ledger ``sd.rca-random``; 0 or the previous RCA stays a
        divergence), and before 10.0 an RSP word QEMU filled from its stack
        (ledger ``omap.version.short-response-stack-bytes``)."""
        if op != "read":
            return False
        offset, size, value = int(args[0]), int(args[1]), int(qemu_value)
        index = self._unknown_rsp(offset, size)
        if index is not None:
            self.adoptions.append((STACK.adopts, value))
            self.mmc.rsp[index] = value
            self.mmc.rsp_unknown.discard(index)
            return True
        if not self._cmd3_rca(offset, size):
            return False
        card = self.card
        assert isinstance(card, SDCard)
        if value == 0 or value == card.previous_rca:
            self.refused.append(f"QEMU's CMD3 published RCA {value:#06x}: not a new random "
                                "address, so it is not adopted")
            return False
        self.adoptions.append((RCA.adopts, value))
        card.rca = value
        self.mmc.rsp[7] = value
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        if op != "read":
            return False
        offset, size = int(args[0]), int(args[1])
        return self._unknown_rsp(offset, size) is not None or self._cmd3_rca(offset, size)

    def set_card_inserted(self, inserted: bool) -> None:
        """Eject or insert the medium (QEMU ``sd_cardchange``: the card resets on
        insertion; OMAP1 wires no card detect, ledger ``omap.no-card-detect``)."""
        self.card.inserted = inserted
