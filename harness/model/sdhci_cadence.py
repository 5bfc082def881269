"""The Cadence SD4HC (``cadence-sdhci``, hw/sd/cadence_sdhci.c): a generic
sysbus SDHCI behind Cadence's Host Register Set.

As QEMU builds it (7.2.22, 10.0.13 and 11.1.1 alike; the PolarFire SoC of
``microchip-icicle-kit``, hw/riscv/microchip_pfsoc.c): a 4 KiB window with the
HRS (:mod:`harness.hwdefs.cadence`) at its start and the standard SDHCI, with
its type's defaults (``sd-spec-version`` 2, ``capareg`` 0x057834b4), at
``SRS_BASE`` 0x200.  The board description puts the register window at the
SRS, so the driver and the model see the standard SDHCI there; the HRS lies
0x200 below it, at Target offsets ``-0x200..-0x101`` (:class:`CadenceHrs`), and
the 0x100 bytes between them are unassigned (read 0, writes dropped).

HRS00's SWR bit is the controller's own reset: the HRS back to its reset
values and a device cold reset of the SDHCI inside, which resets the SD bus
below it too, so the card is reset as by CMD0 (QEMU ``sd_reset``: idle, RCA 0,
block length 512).  A Software Reset For All of the SDHCI (SDHC 2.2.11)
leaves the HRS and the card alone.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import cadence as C
from harness.model.sdhci import CONTROLLERS, SDHCI

__all__ = ["CadenceHrs", "CadenceSdhci"]

_U32 = 0xFFFF_FFFF


class CadenceHrs:
    """The Host Register Set as hw/sd/cadence_sdhci.c behaves (see
    :mod:`harness.hwdefs.cadence`): 32-bit accesses only, HRS00 read-only but
    for SWR, HRS04's ACK following WR/RD, HRS06's TUNE_UP reading back 0,
    plain registers elsewhere."""

    def __init__(self, owner: CadenceSdhci) -> None:
        self.owner = owner
        self.regs: dict[int, int] = {}
        self.reset()

    def reset(self) -> None:
        """The HRS part of the controller's reset (``cadence_sdhci_reset``)."""
        self.regs = {C.HRS00.offset: C.HRS00_RESET}

    def read(self, offset: int, size: int) -> int:
        if size != 4 or offset & 3:
            return 0  # refused by the memory core (valid sizes 4..4)
        return self.regs.get(offset, 0)

    def write(self, offset: int, size: int, value: int) -> None:
        if size != 4 or offset & 3:
            return
        value &= _U32
        if offset == C.HRS00.offset:
            if value & C.HRS00.mask("SWR"):
                self.owner.controller_reset()
        elif offset == C.HRS04.offset:
            ack = C.HRS04.mask("ACK")
            asked = value & C.HRS04.mask("WR", "RD")
            self.regs[offset] = value | ack if asked else value & ~ack
        elif offset == C.HRS06.offset:
            self.regs[offset] = value & ~C.HRS06.mask("TUNE_UP")
        else:
            self.regs[offset] = value


@CONTROLLERS.controller("cadence")
class CadenceSdhci(SDHCI):
    """``cadence-sdhci``: the SDHCI inside (the Target's register window) and
    the HRS below it (:class:`CadenceHrs`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hrs = CadenceHrs(self)

    def controller_reset(self) -> None:
        """HRS00.SWR: the HRS, then a cold reset of the SDHCI and its bus
        (the card reset as QEMU's ``sd_reset``; no pending-insert quirk here)."""
        self.hrs.reset()
        card_reset = getattr(self.card, "reset", None)
        if callable(card_reset):
            card_reset()
        self.reset()
        self.pending_insert = self.pending_insert_quirk
        self.update_irq()

    def read_outside(self, offset: int, size: int) -> int:
        """The HRS at ``-0x200..-0x101`` of the SRS window."""
        off = offset + C.SRS_BASE
        if 0 <= off < C.HRS_SIZE:
            return self.hrs.read(off, size)
        return super().read_outside(offset, size)

    def write_outside(self, offset: int, size: int, value: int) -> None:
        off = offset + C.SRS_BASE
        if 0 <= off < C.HRS_SIZE:
            self.hrs.write(off, size, value)
        else:
            super().write_outside(offset, size, value)
