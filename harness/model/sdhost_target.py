"""``SdhostModelTarget``: the golden model of a raspi board driven through its SDHOST.

The Target window of such a board (:mod:`harness.hwdefs.bcm2835_sdhost`)
holds the GPIO block at offset 0 and the SDHOST at 0x2000.  The board's SD
card starts on the SDHCI's bus (the GPIO block's reset); a GPFSEL write that
selects ALT0 on pins 48-53 moves it to the SDHOST's
(:class:`~harness.model.bcm2835_gpio.Bcm2835Gpio`), one that selects input
moves it back, leaving the SDHOST with no card.  Accesses are split as QEMU's
memory core splits them (4 bytes at most, aligned), each piece masked to its
size; outside the two blocks reads are 0 and writes dropped.  The interrupt
line is the SDHOST's (``sysbus-irq``, GPU IRQ 56 on bcm2835-ic).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import bcm2835_sdhost as B
from harness.machine import Machine
from harness.model.bcm2835_gpio import Bcm2835Gpio
from harness.model.bcm2835_sdhost import Bcm2835Sdhost
from harness.model.board_target import TARGETS, BoardModelTarget
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.sdcard import SDCard
from harness.model.target import RCA, ModelTarget, card_medium, model_params, split_access
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access

__all__ = ["SdhostModelTarget"]


@TARGETS.controller("sdhost")
class SdhostModelTarget(BoardModelTarget):
    """The model of a raspi board's GPIO function select, SDHOST and card
    (see the module docstring); the arguments are :class:`ModelTarget`'s."""

    def __init__(self, machine: Machine, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: Any = None) -> None:
        board = machine.board_def
        if board is None or board.variant != "sdhost":
            raise ValueError("SdhostModelTarget needs a board driven through its SDHOST")
        _host, card_params = model_params(machine)
        image, size = card_medium(machine, image, size)
        self.machine, self.profile, self.strict = machine, profile, strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type, ram_base=board.ram_base)
        self.card: SDCard = card if card is not None else SDCard(
            self.clock, image, size, profile=profile, machine=machine.type, strict=strict,
            **card_params)
        self.host = Bcm2835Sdhost()
        self.gpio = Bcm2835Gpio(self._route)
        self.adoptions: list[tuple[str, int]] = []
        self.refused: list[str] = []
        self._irq_reported = False

    def _route(self, to_sdhost: bool) -> None:
        self.host.card = self.card if to_sdhost else None

    # -- registers --------------------------------------------------------------

    def _piece_read(self, off: int, size: int) -> int:
        mask = (1 << (8 * size)) - 1
        if off in B.SDHOST_WINDOW:
            return self.host.read(off - B.SDHOST_WINDOW.start) & mask
        if off in B.GPIO_WINDOW:
            return self.gpio.read(off - B.GPIO_WINDOW.start) & mask
        return 0

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        value = 0
        for off, n in split_access(offset, size):
            value |= self._piece_read(off, n) << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        value &= (1 << (8 * size)) - 1
        for off, n in split_access(offset, size):
            piece = (value >> (8 * (off - offset))) & ((1 << (8 * n)) - 1)
            if off in B.SDHOST_WINDOW:
                self.host.write(off - B.SDHOST_WINDOW.start, piece)
            elif off in B.GPIO_WINDOW:
                self.gpio.write(off - B.GPIO_WINDOW.start, piece)

    # -- memory, time, interrupt --------------------------------------------------

    def irq_level(self) -> bool:
        return self.host.level

    def _irq_changes(self) -> list[bool]:
        return self.host.irq_changes

    # -- beyond the Target interface ------------------------------------------------

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt the RCA QEMU's card drew at random (ledger ``sd.rca-random``):
        a read of SDRSP0 after CMD3 that differs in bits 31:16 only."""
        card = self.card
        if op != "read" or int(args[0]) != B.host(B.SDRSP[0]) or int(args[1]) != 4:
            return False
        if not isinstance(card, SDCard) or card.legacy or self.host.cmd & 0x3F != 3:
            return False
        if (int(model_value) ^ int(qemu_value)) & 0xFFFF:
            return False
        rca = (int(qemu_value) >> 16) & 0xFFFF
        if rca in (0, card.previous_rca):
            self.refused.append(f"QEMU's CMD3 published RCA {rca:#06x}: not a new random "
                                "address, so it is not adopted")
            return False
        self.adoptions.append((RCA.adopts, rca))
        card.rca = rca
        self.host.rsp[0] = (rca << 16) | (self.host.rsp[0] & 0xFFFF)
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        """A read of SDRSP0 after CMD3 (an SD card's random RCA)."""
        card = self.card
        return (op == "read" and int(args[0]) == B.host(B.SDRSP[0])
                and isinstance(card, SDCard) and not card.legacy
                and self.host.cmd & 0x3F == 3)

    def adopt(self, kind: str, step: Any) -> list[str]:
        """Take QEMU's side of a difference so that a run goes on past it (the
        scoreboard, :mod:`harness.check.scoreboard`): the interrupt line; a
        whole-register read of plain SDHOST state (:data:`_ADOPTABLE`; not
        SDDATA, whose read moves the FIFO); guest memory and card image bytes
        as :meth:`ModelTarget.adopt` takes them.  Returns what was taken."""
        op, args, value = step.op, step.args, step.qemu
        host = self.host
        if kind == "irq":
            host.level = self._irq_reported = bool(step.irq_qemu)
            host.irq_changes.clear()
            return [f"interrupt line {int(step.irq_qemu)}"]
        if op == "read":
            where = _ADOPTABLE.get(int(args[0])) if int(args[1]) == 4 else None
            if where is None or not isinstance(value, int):
                return []
            name, index = where
            if index is None:
                setattr(host, name, value)
            else:
                getattr(host, name)[index] = value
            return [f"{name if index is None else f'SDRSP{index}'} {value:#x}"]
        if op in ("mem_read", "image_read"):
            return ModelTarget.adopt(self, kind, step)
        return []

    def image_touched(self) -> list[tuple[int, int]]:
        return ModelTarget.image_touched(self)

    def set_card_inserted(self, inserted: bool) -> None:
        """Eject or insert the card's medium (QMP ``eject``/``blockdev-change-medium``)."""
        self.card.inserted = inserted

#: SDHOST registers a read returns straight from one piece of state (the
#: attribute, and the index in a list attribute), by window offset: the ones
#: :meth:`SdhostModelTarget.adopt` can take from QEMU.
_ADOPTABLE: dict[int, tuple[str, int | None]] = {
    B.host(B.SDCMD): ("cmd", None), B.host(B.SDHSTS): ("status", None),
    B.host(B.SDEDM): ("edm", None), B.host(B.SDVDD): ("vdd", None),
    B.host(B.SDHBCT): ("hbct", None), B.host(B.SDHBLC): ("hblc", None),
    **{B.host(r): ("rsp", i) for i, r in enumerate(B.SDRSP)},
}
