"""A slot of the Aspeed SD controller: a generic sysbus SDHCI behind
Aspeed's wrapper (``aspeed.sdhci-ast2600``, hw/sd/aspeed_sdhci.c).

The wrapper is a 4 KiB window whose first 0x100 bytes are its own
registers (slot presence, debounce, a copy of each slot's capabilities,
the slots' interrupt status) and whose slot *n* lies at ``0x100 * (n + 1)``;
it ORs the slots' interrupt lines into the SoC's GIC input.  The board
description puts the register window at slot 0, so what the driver and
the model see is the standard SDHCI, realized by the wrapper with
``sd-spec-version`` 2 and the SoC's capabilities (0x0000000701f80080 on
the AST2600 since 10.0, boundary ``aspeed.capareg-per-soc``; 0x01e80080
before, :mod:`harness.hwdefs.aspeed`).  The wrapper's own registers lie just
below that window, at offsets ``-0x100..-1`` of the Target
(:class:`AspeedWrapper`); slot 1's registers, above it, are not modelled.

The AST2600 EVB wires its SD slots' write-protect signal inverted, and
QEMU says so with the SDHCI property ``wp-inverted`` since 10.0 (boundary
``aspeed.wp-inverted``): an unprotected card then reads as write-protected
in Present State (Write Protect Switch Pin Level 0, SDHC 3.00 2.2.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.hwdefs import aspeed as A
from harness.ledger import boundaries
from harness.model.sdhci import CONTROLLERS, SDHCI
from harness.profile import NEWEST, BuildProfile

__all__ = ["AspeedSdhci", "AspeedWrapper"]


_U32 = 0xFFFF_FFFF


def _deposit(value: int, shift: int, part: int) -> int:
    """``value`` with its 32 bits at ``shift`` replaced by ``part``."""
    return value & ~(_U32 << shift) | (part & _U32) << shift


class AspeedWrapper:
    """The wrapper's own registers (:data:`harness.hwdefs.aspeed.WRAPPER_REGISTERS`),
    as hw/sd/aspeed_sdhci.c behaves, over slot 0 (``slot``) and slot 1.

    * 32-bit accesses only; another size reads 0 and is dropped (the memory
      core refuses it: ``valid`` 4..4).
    * SDC_INFO resets to the slots present; its RESET bit reads back 0 and
      resets nothing.  SDC_DEBOUNCE resets to 5.  Every other offset is a
      plain read/write register, reset to 0.
    * The capability mirrors read the slot's own Capabilities and Maximum
      Current, and a write changes them: since 10.0 each 32-bit half on its
      own (a write to slot 1's Maximum Current takes the upper half from
      slot 0's, which no guest can make non-zero); before, a low-half write
      replaces the whole value and the high halves are plain registers
      (``aspeed.capability-mirrors-halves``).  Neither is put back by a reset.
    * SDC_IRQ_STAT bit *n* follows slot *n*'s line at every update of it.

    Slot 1 has the wrapper's capabilities on a two-slot wrapper, and all
    zero on a one-slot wrapper (an SDHCI never realized); its registers are
    not modelled.
    """

    def __init__(self, slot: SDHCI, slots: int, halves: bool) -> None:
        self.slot, self.slots, self.halves = slot, slots, halves
        self.s1_capareg = slot.capareg if slots == 2 else 0
        self.s1_maxcurr = 0
        self.regs: dict[int, int] = {}
        self.reset()

    def reset(self) -> None:
        """The wrapper's device reset (``aspeed_sdhci_reset_hold``)."""
        info = A.SDC_INFO.mask("S0_PRESENT") | (A.SDC_INFO.mask("S1_PRESENT")
                                                if self.slots == 2 else 0)
        self.regs = {A.SDC_INFO.offset: info, A.SDC_DEBOUNCE.offset: A.DEBOUNCE_RESET}

    def read(self, offset: int, size: int) -> int:
        if size != 4 or offset & 3:
            return 0
        s = self.slot
        mirrors = {A.SDC_S0_CAP1.offset: s.capareg & _U32,
                   A.SDC_S0_MAXCURR.offset: s.maxcurr & _U32,
                   A.SDC_S1_CAP1.offset: self.s1_capareg & _U32,
                   A.SDC_S1_MAXCURR.offset: self.s1_maxcurr & _U32}
        if self.halves:
            mirrors[A.SDC_S0_CAP2.offset] = s.capareg >> 32 & _U32
            mirrors[A.SDC_S1_CAP2.offset] = self.s1_capareg >> 32 & _U32
        if offset in mirrors:
            return mirrors[offset]
        return self.regs.get(offset, 0)

    def write(self, offset: int, size: int, value: int) -> None:
        if size != 4 or offset & 3:
            return
        s, value = self.slot, value & _U32
        if offset == A.SDC_INFO.offset:
            self.regs[offset] = value & ~A.SDC_INFO.mask("RESET")
        elif offset == A.SDC_S0_CAP1.offset:
            s.capareg = _deposit(s.capareg, 0, value) if self.halves else value
        elif offset == A.SDC_S0_CAP2.offset and self.halves:
            s.capareg = _deposit(s.capareg, 32, value)
        elif offset == A.SDC_S0_MAXCURR.offset:
            s.maxcurr = _deposit(s.maxcurr, 0, value) if self.halves else value
        elif offset == A.SDC_S1_CAP1.offset:
            self.s1_capareg = _deposit(self.s1_capareg, 0, value) if self.halves else value
        elif offset == A.SDC_S1_CAP2.offset and self.halves:
            self.s1_capareg = _deposit(self.s1_capareg, 32, value)
        elif offset == A.SDC_S1_MAXCURR.offset:
            self.s1_maxcurr = _deposit(s.maxcurr, 0, value) if self.halves else value
        else:
            self.regs[offset] = value

    def slot_irq(self, n: int, level: bool) -> None:
        """Slot ``n`` drove its line to ``level`` (``aspeed_sdhci_set_irq``)."""
        bit = 1 << n
        stat = self.regs.get(A.SDC_IRQ_STAT.offset, 0)
        self.regs[A.SDC_IRQ_STAT.offset] = stat | bit if level else stat & ~bit


@CONTROLLERS.controller("aspeed")
class AspeedSdhci(SDHCI):
    """Slot 0 of an ``aspeed.sdhci-ast2600`` wrapper (ast2600-evb's SD
    controller, fuji-bmc's eMMC controller), with the wrapper's own
    registers below it (:class:`AspeedWrapper`)."""

    def __init__(self, *args: Any, capareg: int | str | None = None,
                 wp_inverted: bool = False, **kwargs: Any) -> None:
        profile = kwargs.get("profile", NEWEST)
        if capareg is None:
            capareg = self.board_capareg({}, profile)
        # The board asks for it (hw/arm/aspeed.c: the EVBs' SD slots); builds
        # before the property's boundary have no way to.
        wp_inverted = wp_inverted and profile.version >= boundaries.ASPEED_WP_INVERTED.since
        self.wrapper: AspeedWrapper | None = None  # update_irq runs in SDHCI's __init__
        super().__init__(*args, capareg=capareg, wp_inverted=wp_inverted, **kwargs)
        self.wrapper = AspeedWrapper(
            self, A.WRAPPER_SLOTS.get(str(kwargs.get("machine")), 2),
            halves=profile.version >= boundaries.ASPEED_CAPAREG.since)

    def update_irq(self) -> bool:
        level = super().update_irq()
        if self.wrapper is not None:
            self.wrapper.slot_irq(0, level)
        return level

    def read_outside(self, offset: int, size: int) -> int:
        """The wrapper's registers at ``-0x100..-1`` of slot 0's window."""
        off = offset + A.SLOT_STRIDE
        if self.wrapper is None or not 0 <= off < A.SLOT_STRIDE:
            return super().read_outside(offset, size)
        return self.wrapper.read(off, size)

    def write_outside(self, offset: int, size: int, value: int) -> None:
        off = offset + A.SLOT_STRIDE
        if self.wrapper is None or not 0 <= off < A.SLOT_STRIDE:
            super().write_outside(offset, size, value)
        else:
            self.wrapper.write(off, size, value)

    @classmethod
    def board_capareg(cls, props: Mapping[str, object], profile: BuildProfile) -> int:
        """The wrapper's capabilities for its slots on a build of ``profile``."""
        if "capareg" in props:
            return super().board_capareg(props, profile)
        return (A.CAPAREG_AST2600 if profile.version >= boundaries.ASPEED_CAPAREG.since
                else A.CAPAREG_BEFORE_10_0)
