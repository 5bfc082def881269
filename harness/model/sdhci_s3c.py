"""The Samsung S3C/Exynos SDHCI: the standard controller with three vendor
control registers (:mod:`harness.hwdefs.s3c`) that QEMU's ``s3c-sdhci``
does not implement.

The Exynos 4210 manual makes CONTROL2, CONTROL3 and CONTROL4 read/write
clock and drive controls; QEMU (hw/sd/sdhci.c ``sdhci_s3c_read`` /
``sdhci_s3c_write``, the same in 7.2, 10.0.13 and 11.1.1) answers 0 for an
access at exactly one of their offsets and drops the write, without going
through the standard register code at all: such an access does not run a
pending ADMA step first, as every other register access does (ledger
``s3c.control-registers-ignored``).  An access inside one of them at another
offset (``0x82``) takes the standard path, where the space is reserved and
reads 0 too.  Everything else is the standard SDHCI of :class:`SDHCI`.
"""

from __future__ import annotations

from harness.hwdefs.s3c import VENDOR_REGISTERS
from harness.model.sdhci import CONTROLLERS, SDHCI

__all__ = ["S3cSdhci"]


@CONTROLLERS.controller("s3c")
class S3cSdhci(SDHCI):
    """``s3c-sdhci``: :class:`SDHCI` less the three vendor registers."""

    def read(self, offset: int, size: int) -> int:
        if offset in VENDOR_REGISTERS:
            return 0
        return super().read(offset, size)

    def write(self, offset: int, size: int, value: int) -> None:
        if offset in VENDOR_REGISTERS:
            return
        super().write(offset, size, value)
