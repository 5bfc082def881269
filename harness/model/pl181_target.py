"""``Pl181ModelTarget``: the golden model of a board whose SD card is behind a PL181.

The Target window of such a board (:mod:`harness.hwdefs.pl181`) holds the
system registers at offset 0 (SYS_ID, the board's ``Board.devices`` value;
SYS_MCI, where the board wires the MMCI's card-detect and write-protect
outputs: QEMU ``hw/arm/vexpress.c`` and ``realview.c`` to ``arm_sysctl``'s
GPIO inputs, bit 0 and bit 1) and
the MMCI (:class:`harness.model.pl181.Pl181`) at 0x5000.  Accesses are split
as QEMU's memory core splits them (4 bytes at most, aligned pieces; each
piece reaches the device at its own offset, its answer masked to its
size); elsewhere reads are 0 and writes dropped (scenarios go nowhere else).
The interrupt line is MCIINTR0 (GIC SPI 9); MCIINTR1 (SPI 10) is
:meth:`Pl181ModelTarget.irq1_level`.  The card is the shared SD card model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import pl181 as P
from harness.ledger import entry
from harness.machine import Machine
from harness.model.board_target import TARGETS, BoardModelTarget
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.pl181 import Pl181
from harness.model.sdcard import SDCard
from harness.model.target import card_medium, model_params, split_access
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access

__all__ = ["SYS_ID", "Pl181ModelTarget"]

#: The board property SYS_ID reads (``Board.devices``): the ``sys_id`` the
#: board's source gives its ``realview_sysctl`` (hw/arm/vexpress.c: 0x1190f500,
#: HBI-0190, the V2M-P1 motherboard; hw/arm/realview.c: 0x01780500 on a PB).
SYS_ID = "realview_sysctl.sys_id"
#: The ledger's entry of the value the model adopts (CMD3's random RCA).
RCA = entry("sd.rca-random")
_RESPONSE0 = P.mmci(P.MCIRESPONSE[0])
_RCA_BYTES = range(_RESPONSE0 + 2, _RESPONSE0 + 4)  # R6 bits 31:16


@TARGETS.controller("pl181")
class Pl181ModelTarget(BoardModelTarget):
    """The model of a PL181 board's MMCI, system registers and card (see
    the module docstring); the arguments are :class:`ModelTarget`'s."""

    def __init__(self, machine: Machine, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: Any = None) -> None:
        board = machine.board_def
        if board is None or board.variant != "pl181":
            raise ValueError("Pl181ModelTarget needs a board whose controller is a PL181")
        _host, card_params = model_params(machine)
        image, size = card_medium(machine, image, size)
        self.machine, self.profile, self.strict = machine, profile, strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type, ram_base=board.ram_base)
        self.card = card if card is not None else SDCard(
            self.clock, image, size, profile=profile, machine=machine.type, strict=strict,
            **card_params)
        self.mmci = Pl181(self.card)
        self.sys_id = dict(board.devices)[SYS_ID]
        self.adoptions: list[tuple[str, int]] = []
        self.refused: list[str] = []
        self._irq_reported = False

    # -- registers --------------------------------------------------------------

    def _piece_read(self, off: int, size: int) -> int:
        mask = (1 << (8 * size)) - 1
        if off in P.MMCI_WINDOW:
            return self.mmci.read(off - P.MMCI_WINDOW.start) & mask
        if off in P.SYSREG_WINDOW:
            return self._sysreg(off - P.SYSREG_WINDOW.start) & mask
        return 0

    def _sysreg(self, off: int) -> int:
        if off == P.SYS_ID.offset:
            return self.sys_id
        if off == P.SYS_MCI.offset:
            return (P.SYS_MCI.mask("CARDIN") if self.card.inserted else 0) | (
                P.SYS_MCI.mask("WPROT") if self.card.readonly else 0)
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
            if off in P.MMCI_WINDOW:
                piece = (value >> (8 * (off - offset))) & ((1 << (8 * n)) - 1)
                self.mmci.write(off - P.MMCI_WINDOW.start, piece)

    # -- memory, time, interrupt --------------------------------------------------

    def irq_level(self) -> bool:
        """MCIINTR0, the line the board's Target watches."""
        return self.mmci.levels[0]

    def _irq_changes(self) -> list[bool]:
        return self.mmci.irq_changes[0]

    def irq1_level(self) -> bool:
        """MCIINTR1 (the interrupt input after MCIINTR0's on the boards: GIC SPI
        10 on vexpress-a9, 18 on realview-pb-a8)."""
        return self.mmci.levels[1]

    # -- beyond the Target interface ------------------------------------------------

    def _cmd3_rca(self, offset: int, size: int) -> bool:
        """A read covering Response0's RCA bytes right after CMD3 (SD card, >= 9.1)."""
        card = self.card
        return (isinstance(card, SDCard) and not card.legacy
                and self.mmci.cmd & P.MCICOMMAND.field("CmdIndex").mask == 3
                and offset <= _RCA_BYTES.start and offset + size >= _RCA_BYTES.stop)

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt the RCA QEMU's card drew for CMD3 (since 9.1, ledger
        ``sd.rca-random``) when a read of MCIResponse0 differs in its bits
        31:16 only; an RCA of 0 or the card's previous one is a fault, not
        a draw, and stays a divergence."""
        if op != "read" or not self._cmd3_rca(int(args[0]), int(args[1])):
            return False
        shift = 8 * (_RCA_BYTES.start - int(args[0]))
        mask = 0xFFFF << shift
        if (int(model_value) ^ int(qemu_value)) & ~mask:
            return False
        rca = (int(qemu_value) >> shift) & 0xFFFF
        card = self.card
        assert isinstance(card, SDCard)
        if rca == 0 or rca == card.previous_rca:
            self.refused.append(f"QEMU's CMD3 published RCA {rca:#06x}: not a new random "
                                "address, so it is not adopted")
            return False
        self.adoptions.append((RCA.adopts, rca))
        card.rca = rca
        self.mmci.response[0] = (rca << 16) | (self.mmci.response[0] & 0xFFFF)
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        return op == "read" and self._cmd3_rca(int(args[0]), int(args[1]))

    def set_card_inserted(self, inserted: bool) -> None:
        """Eject or insert the medium: the card changes, and SYS_MCI with it
        (QEMU ``sd_cardchange`` -> ``pl181_set_inserted`` -> ``arm_sysctl``)."""
        self.card.inserted = inserted
