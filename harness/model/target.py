"""``ModelTarget``: the golden model behind the Target interface.

Wires one :class:`~harness.model.clock.VirtualClock`, an SD card, the
sdhci-pci controller and sparse guest memory together, and turns Target
accesses into what QEMU's memory core hands the device:

* an access is split as ``flatview_read/write_continue`` splits it: pieces
  of at most 4 bytes (sdhci's ``valid.max_access_size``), each no larger
  than the alignment of its address, little endian; so a quadword becomes
  two longwords and a misaligned longword becomes byte/word pieces;
* a piece outside the 256-byte register window lands on whatever follows the
  BAR; nothing is mapped there in the harness's layout, so it behaves as
  QEMU's unassigned memory: reads 0, writes are dropped.  No exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.hwdefs import sdhci as H
from harness.hwdefs.sdhci import REGISTER_WINDOW
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.memory import GuestMemory
from harness.model.sdcard import SDCard
from harness.model.sdhci import SDHCI, SDBusCard
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access, check_clock_step, check_memory


def split_access(offset: int, size: int) -> list[tuple[int, int]]:
    """``(offset, size)`` pieces QEMU's memory core issues for one access
    to a region with 1..4 byte aligned accesses (``memory_access_size``)."""
    out: list[tuple[int, int]] = []
    while size > 0:
        n = min(size, 4)
        align = offset & -offset if offset else 1 << 30
        n = min(n, align)
        n = 1 << (n.bit_length() - 1)
        out.append((offset, n))
        offset += n
        size -= n
    return out


class ModelTarget:
    """The model as a :class:`harness.target.Target`.

    ``image``/``size`` and ``card_options`` (``spec_version``,
    ``erase_blocks_as_zero``, ``readonly``) go to the SD card; ``card``
    replaces it with any object offering the SD-bus operations.
    ``sd_spec_version``, ``capareg``, ``maxcurr`` and ``uhs_mode`` are
    sdhci-pci's properties; ``ram_size`` the machine's RAM.  ``strict``
    makes card and controller follow the specifications where QEMU deviates.
    """

    name: str = "model"

    def __init__(self, image: str | Path | None = None, size: int | None = None, *,
                 profile: BuildProfile = NEWEST, machine: str | None = None,
                 strict: Strictness = False, sd_spec_version: int | str | None = None,
                 capareg: int | str | None = None, maxcurr: int | str | None = None,
                 uhs_mode: int | str | None = None, ram_size: int = 128 << 20,
                 card: SDBusCard | None = None, **card_options: Any) -> None:
        self.profile = profile
        self.machine = machine
        self.strict = strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(ram_size, machine)
        if card is None:
            card = SDCard(self.clock, image, size, profile=profile, machine=machine,
                          strict=strict, **card_options)
        self.card: SDBusCard = card
        self.sdhci = SDHCI(self.clock, card, self.memory, profile=profile,
                           sd_spec_version=sd_spec_version, capareg=capareg,
                           maxcurr=maxcurr, uhs_mode=uhs_mode, strict=strict)

    # -- registers ------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        if size in (1, 2, 4) and not offset & (size - 1) and 0 <= offset < REGISTER_WINDOW:
            return self.sdhci.read(offset, size)  # aligned: one piece, as split_access gives
        check_access(offset, size)
        value = 0
        for off, n in split_access(offset, size):
            if 0 <= off < REGISTER_WINDOW:
                piece = self.sdhci.read(off, n)
            else:
                piece = 0
            value |= piece << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        if size in (1, 2, 4) and not offset & (size - 1) and 0 <= offset < REGISTER_WINDOW:
            self.sdhci.write(offset, size, value & ((1 << (8 * size)) - 1))
            return
        check_access(offset, size)
        value &= (1 << (8 * size)) - 1
        for off, n in split_access(offset, size):
            if 0 <= off < REGISTER_WINDOW:
                piece = (value >> (8 * (off - offset))) & ((1 << (8 * n)) - 1)
                self.sdhci.write(off, n, piece)

    # -- memory, time, interrupt ------------------------------------------------

    def mem_read(self, addr: int, length: int) -> bytes:
        check_memory(addr, length)
        data, _ok = self.memory.read(addr, length)
        return data

    def mem_write(self, addr: int, data: bytes) -> None:
        check_memory(addr, len(data))
        self.memory.write(addr, bytes(data))
        self.sdhci.unpark_adma()

    def clock_step(self, ns: int | None = None) -> int:
        check_clock_step(ns)
        self.sdhci.timer_steps = 0
        return self.clock.step(ns)

    def irq_level(self) -> bool:
        return self.sdhci.irq_level()

    def image_read(self, offset: int, length: int) -> bytes:
        reader = getattr(self.card, "image_read", None)
        if reader is None:
            return bytes(length)
        return bytes(reader(offset, length))

    def close(self) -> None:
        """Nothing to release: the model holds no processes or files."""

    # -- beyond the Target interface ----------------------------------------------

    def deviations_consulted(self) -> set[str]:
        """Keys of every deviation the card and controller models consulted."""
        out = set(self.sdhci.deviations.consulted)
        dev = getattr(self.card, "dev", None)
        if dev is not None:
            out |= dev.consulted
        return out

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt a value QEMU drew at random, if that is all that differs.

        Since 9.1 QEMU's card picks its RCA with ``qemu_guest_getrandom``
        (PLS 4.2.2 lets the card choose any RCA), so the R6 response to CMD3
        cannot be predicted.  When a read of RSPREG0 after CMD3 differs only
        in the RCA bits, the card takes QEMU's RCA and the read agrees.
        """
        card = self.card
        if op != "read" or not isinstance(card, SDCard) or card.legacy:
            return False
        if (self.sdhci.cmdreg >> 8) & 0x3F != 3:
            return False
        offset, size = int(args[0]), int(args[1])
        rca_lo = H.RSPREG0.offset + 2  # RCA is R6 bits 31:16 = RSPREG0 bytes 2..3
        if not (offset <= rca_lo and offset + size >= rca_lo + 2):
            return False
        shift = 8 * (rca_lo - offset)
        mask = 0xFFFF << shift
        if (int(model_value) ^ int(qemu_value)) & ~mask:
            return False
        rca = (int(qemu_value) >> shift) & 0xFFFF
        card.rca = rca
        self.sdhci.rspreg[0] = (rca << 16) | (self.sdhci.rspreg[0] & 0xFFFF)
        return True

    def set_card_inserted(self, inserted: bool) -> None:
        """Insert or eject the card's medium (QEMU: blockdev change/eject);
        the controller sees a card change event."""
        setattr(self.card, "inserted", inserted)  # noqa: B010 (read-only in SDBusCard)
        self.sdhci.card_changed()

    @property
    def hung(self) -> str | None:
        """Why QEMU would hang or abort at this point, if it would."""
        return self.sdhci.hung or getattr(self.card, "fatal", None)
