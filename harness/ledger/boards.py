"""Where QEMU's board SD controllers depart from their vendors' manuals.

The model has no uSDHC register layout yet (:mod:`harness.hwdefs.boards`),
so no model switch consults these; the board tests (``tests/qtest/boards``)
hold QEMU to each.
"""

from __future__ import annotations

from harness.ledger.entry import KnownDifference, Scope, Versions

BOARDS: tuple[KnownDifference, ...] = (
    KnownDifference(
        "usdhc.vendor-spec-16bit", Scope.QEMU_BUG, "usdhc",
        "The Vendor Specific Register (0xC0) is 32 bits wide (CMD_BYTE_EN is bit 31).",
        "hw/sd/sdhci.c keeps it in a 16-bit field: the upper half of a write is dropped "
        "and reads back 0.",
        Versions(None, None, ("7.2.22", "10.0.13", "11.1.3")),
        spec="i.MX 6/7 Reference Manual, uSDHC VEND_SPEC",
        evidence="tests/qtest/boards/test_board_qemu.py (mcimx7d-sabre)"),
)
