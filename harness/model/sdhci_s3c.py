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
reads 0 too.  In strict mode the three are the manual's read/write registers:
each keeps what was written (0 after a reset for all), and an access to one runs a
pending transfer step first, as every other register access does.  Everything
else is the standard SDHCI of :class:`SDHCI`.
"""

from __future__ import annotations

from harness.hwdefs.s3c import VENDOR_REGISTERS
from harness.model.sdhci import CONTROLLERS, SDHCI

__all__ = ["S3cSdhci"]


#: The ledger's switch of this front end.
IGNORED = "s3c.control-registers-ignored"


@CONTROLLERS.controller("s3c")
class S3cSdhci(SDHCI):
    """``s3c-sdhci``: :class:`SDHCI` less the three vendor registers (QEMU), or
    with them as plain read/write registers (strict)."""

    DEVICES = ("sdhci", "s3c")

    def read(self, offset: int, size: int) -> int:
        if offset in VENDOR_REGISTERS:
            if self.qemu(IGNORED):
                return 0
            self.timer_steps = 0
            self.resume_pending_transfer()
            return self.controls.get(offset, 0) & ((1 << (8 * size)) - 1)
        return super().read(offset, size)

    def write(self, offset: int, size: int, value: int) -> None:
        if offset in VENDOR_REGISTERS:
            if self.qemu(IGNORED):
                return
            self.timer_steps = 0
            self.resume_pending_transfer()
            width = (1 << (8 * size)) - 1
            self.controls[offset] = (self.controls.get(offset, 0) & ~width) | (value & width)
            return
        super().write(offset, size, value)

    def reset(self) -> None:
        """:meth:`SDHCI.reset`, CONTROL2/3/4 back to 0 (strict mode's registers)."""
        super().reset()
        #: CONTROL2/3/4 as written since the last reset (strict mode only).
        self.controls: dict[int, int] = {}
