"""Where QEMU's board SD controllers depart from their vendors' reference manuals.

Written in the style of :mod:`harness.model.sdhci_deviations`.  The model has
no uSDHC register layout yet (see :mod:`harness.hwdefs.boards`), so nothing
consults these; the board tests (``tests/qtest/boards``) hold QEMU to each.
"""

from __future__ import annotations

from harness.model.deviations import Deviation

BOARD_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "usdhc.vendor-spec-16bit", "i.MX 6/7 Reference Manual, uSDHC VEND_SPEC (0xC0)",
        "Vendor Specific Register is 32 bits wide (CMD_BYTE_EN is bit 31).",
        "hw/sd/sdhci.c keeps it in a uint16_t (7.2, 10.0, 11.1): the upper half of "
        "a write is dropped and reads 0.",
    ),
)
