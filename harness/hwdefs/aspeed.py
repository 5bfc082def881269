"""Aspeed's SD controller wrapper (``aspeed.sdhci-*``, hw/sd/aspeed_sdhci.c),
as data: where its slots lie and the capabilities it gives them.

The wrapper is a 4 KiB window: its own registers in the first 0x100 bytes,
slot *n*'s standard SDHCI registers at ``SLOT_STRIDE * (n + 1)``.  It
realizes each slot with ``sd-spec-version`` 2 and one capabilities value:
per SoC since QEMU 10.0 (boundary ``aspeed.capareg-per-soc``), before that
one value for every SoC.
"""

from __future__ import annotations

__all__ = ["CAPAREG_AST2600", "CAPAREG_BEFORE_10_0", "SLOT_STRIDE", "slot_offset"]

#: Distance between the slots' register windows (and from the wrapper's own).
SLOT_STRIDE = 0x100
#: The AST2600's slots since 10.0: 64-bit capabilities, 1.8 V, SDR50/SDR104/DDR50
#: in the upper half, ADMA1 in the lower one.
CAPAREG_AST2600 = 0x0000_0007_01F8_0080
#: Every Aspeed SoC's slots before 10.0 (7.2.22's ASPEED_SDHCI_CAPABILITIES).
CAPAREG_BEFORE_10_0 = 0x01E8_0080


def slot_offset(slot: int) -> int:
    """Offset of slot ``slot``'s SDHCI registers in the wrapper's window."""
    return SLOT_STRIDE * (slot + 1)
