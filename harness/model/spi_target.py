"""``SpiModelTarget``: the golden model of a board whose SD card is in SPI mode.

The Target window of such a board (:mod:`harness.hwdefs.pl022`) holds GPIO
port D (the chip select) at offset 0 and the PL022 SSP at 0x1000; the SSP's
bus carries ``ssi-sd`` (:mod:`harness.model.ssi_sd`) with the card
(:class:`~harness.model.sdcard_spi.SpiCard`) and the board's OLED
controller, which answers 0 to every frame, as does ``ssi-sd`` while it is
not selected (QEMU ``hw/ssi/ssi.c`` ORs the peripherals' answers).  Accesses
are split as QEMU's memory core splits them (4 bytes at most); outside the
two devices reads are 0 and writes dropped.  The interrupt line is the SSP's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import pl022 as P
from harness.ledger import entry
from harness.machine import Machine
from harness.model.board_target import TARGETS, BoardModelTarget
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.pl022 import Pl022, Pl061
from harness.model.sdcard_spi import SpiCard
from harness.model.ssi_sd import SsiSd
from harness.model.target import card_medium, model_params, split_access
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access

__all__ = ["SpiModelTarget"]

#: The ledger entry of the one value the model adopts from QEMU here.
STALE = entry("spi.illegal-r1-stale")


@TARGETS.controller("spi")
class SpiModelTarget(BoardModelTarget):
    """The model of an SPI board's chip select, SSP, ``ssi-sd`` and card
    (see the module docstring); the arguments are :class:`ModelTarget`'s."""

    def __init__(self, machine: Machine, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: Any = None) -> None:
        board = machine.board_def
        if board is None or not board.spi:
            raise ValueError("SpiModelTarget needs a board whose card is in SPI mode")
        _host, card_params = model_params(machine)
        image, size = card_medium(machine, image, size)
        self.machine, self.profile, self.strict = machine, profile, strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type, ram_base=board.ram_base,
                                  other_ram=board.other_ram)
        self.card = card if card is not None else SpiCard(
            self.clock, image, size, profile=profile, machine=machine.type, strict=strict,
            **card_params)
        self.ssi_sd = SsiSd(self.card)
        #: ssi-sd's chip select level (active low); the board raises it at start.
        self.cs_level = True
        self.adoptions: list[tuple[str, int]] = []
        self.refused: list[str] = []
        self._irq_reported = False
        self._last_undefined = False
        self._controller()

    def _controller(self) -> None:
        """The board's SSI controller and chip select: lm3s6965evb's PL022 and PL061."""
        self.ssp = Pl022(self._bus)
        self.gpio = Pl061(self._pin)

    def _pin(self, pin: int, level: bool) -> None:
        if pin == P.CS_PIN:
            self.cs_level = level

    def _bus(self, value: int) -> int:
        return 0 if self.cs_level else self.ssi_sd.transfer(value)

    # -- registers --------------------------------------------------------------

    def _piece_read(self, off: int, size: int) -> int:
        if off in P.SSP_WINDOW:
            inner = off - P.SSP_WINDOW.start
            self._last_undefined = inner == P.SSPDR.offset and self.ssp.head_undefined
            return self.ssp.read(inner) & ((1 << (8 * size)) - 1)
        if off in P.GPIO_WINDOW:
            return self.gpio.read(off - P.GPIO_WINDOW.start) & ((1 << (8 * size)) - 1)
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
            if off in P.SSP_WINDOW:
                self.ssp.write(off - P.SSP_WINDOW.start, piece)
            elif off in P.GPIO_WINDOW:
                self.gpio.write(off - P.GPIO_WINDOW.start, piece)

    # -- memory, time, interrupt --------------------------------------------------

    def irq_level(self) -> bool:
        return self.ssp.level

    def _irq_changes(self) -> list[bool]:
        return self.ssp.irq_changes

    # -- beyond the Target interface ------------------------------------------------

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt QEMU's byte where the card left its one response byte
        unwritten (QEMU >= 10.1, an illegal command: uninitialised stack in
        ``ssi-sd``, ledger ``spi.illegal-r1-stale``); nothing else."""
        if op != "read" or not self._last_undefined:
            return False
        if int(args[0]) != P.ssp(P.SSPDR) or int(qemu_value) > 0xFF:
            return False
        self._last_undefined = False
        self.adoptions.append((STALE.adopts, int(qemu_value)))
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        """A read of SSPDR whose next frame the card left undefined."""
        return op == "read" and int(args[0]) == P.ssp(P.SSPDR) and self.ssp.head_undefined

    def set_card_inserted(self, inserted: bool) -> None:
        self.card.inserted = inserted
