"""The i.MX uSDHC as QEMU's ``imx-usdhc`` implements it, on the SDHCI model.

Layout from the i.MX 7 Reference Manual (:mod:`harness.hwdefs.usdhc`);
behaviour from QEMU's hw/sd/sdhci.c ``esdhc_read``/``esdhc_write``/
``usdhc_write`` and ``imx_usdhc_init`` (the same in 7.2, 10.0.13 and
11.1.1 but for the spec version), stated here as the model's own rules.
The front end decides by the exact offset of an access (after the memory
core split it), so a byte inside a register takes the standard path:

* PROT_CTRL (``0x28``): a write keeps LCTL, CDTL and CDSS, maps DTW onto the
  standard 4-bit/8-bit width bits and DMASEL (bits 9:8) onto DMA Select
  (bits 4:3), drops the other low-half bits and keeps Power Control as it
  was; bits 31:16 are Block Gap and Wakeup Control as in the standard
  layout.  A read composes DTW, DMASEL, Block Gap and Wakeup Control only
  (LCTL, CDTL, CDSS and Power Control read 0: ledger
  ``usdhc.prot-ctrl-partial-readback``).
* MIX_CTRL (``0x48``): a write sets the transfer mode (its low 16 bits)
  without issuing a command; it reads 0 (``usdhc.mix-ctrl-reads-0``).  A
  write at CMD_XFR_TYP (``0x0C``) ORs that transfer mode into its low half
  and goes to the standard register, so the command is issued with it.
* BLK_ATT (``0x04``): every write sets the SDMA buffer boundary to 512 KiB
  (``usdhc.blk-att-boundary-forced``), even a byte write.
* PRES_STATE (``0x24``): bit 3 is SDSTB, Internal Clock Stable of the
  standard Clock Control; SDOFF (bit 7) is set by a VEND_SPEC write without
  FRC_SDCLK_ON and cleared by one with it, until Present State is next
  rewritten (a card event, a reset).
* VEND_SPEC (``0xC0``): kept in 16 bits (``usdhc.vendor-spec-16bit``),
  cleared by a software reset.
* WTMK_LVL, DLL_CTRL, CLK_TUNE_CTRL_STATUS, REG27, TUNING_CTRL: read 0,
  writes dropped (``usdhc.vendor-registers-read-0``).  These, VEND_SPEC,
  PROT_CTRL reads and MIX_CTRL never reach the standard register code, so
  they do not run a pending ADMA step first; every other access does.
* No Transfer Complete after a busy response without data
  (``SDHCI_QUIRK_NO_BUSY_IRQ``, ``usdhc.no-busy-irq``).
* ``sd-spec-version`` 3 since QEMU 10.0; 7.2 keeps the common default 2.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import sdhci as H
from harness.hwdefs import usdhc as U
from harness.ledger import boundaries
from harness.model.sdhci import CONTROLLERS, SDHCI
from harness.model.sdhci_state import U16

__all__ = ["Usdhc"]

#: QEMU version from which ``imx_usdhc_init`` sets sd-spec-version 3.
SPEC_3_SINCE = boundaries.USDHC_SPEC_3.since
_SDSTB = U.PRES_STATE.mask("SDSTB")
_SDOFF = U.PRES_STATE.mask("SDOFF")
_FRC_SDCLK_ON = U.VEND_SPEC.mask("FRC_SDCLK_ON")
_DTW = U.PROT_CTRL.field("DTW")
_DMASEL = U.PROT_CTRL.field("DMASEL")
_STD_DMASEL = H.HOSTCTL.field("DMASEL")
#: PROT_CTRL bits that keep their standard meaning: LCTL, CDTL, CDSS.
_SAME_BITS = U.PROT_CTRL.mask("LCTL", "CDTL", "CDSS")
#: BLK_ATT: the SDMA buffer boundary field set to 512 KiB (value 7).
_BOUNDARY_512K = H.BLKSIZE.field("SDMABUFBND").put(0, 7)
_SILENT = frozenset({*U.ZERO_REGISTERS, U.MIX_CTRL.offset, U.VEND_SPEC.offset,
                     U.PROT_CTRL.offset})


@CONTROLLERS.controller("usdhc")
class Usdhc(SDHCI):
    """``imx-usdhc``: :class:`SDHCI` behind the i.MX register layout."""

    busy_irq = False

    def __init__(self, *args: Any, sd_spec_version: int | str | None = None,
                 **kwargs: Any) -> None:
        profile = kwargs.get("profile")
        if sd_spec_version is None and profile is not None:
            sd_spec_version = 3 if profile.version >= SPEC_3_SINCE else 2
        self.vendor_spec = 0
        super().__init__(*args, sd_spec_version=sd_spec_version, **kwargs)

    def reset(self) -> None:
        super().reset()
        self.vendor_spec = 0  # among the registers a reset clears

    def read(self, offset: int, size: int) -> int:
        width = (1 << (8 * size)) - 1
        if offset not in _SILENT:
            value = super().read(offset, size)
            if offset == U.PRES_STATE.offset:
                value &= ~_SDSTB
                if self.clkcon & H.CLKCON_INTCLK_STABLE:
                    value |= _SDSTB
            return value & width
        self.timer_steps = 0
        if offset == U.PROT_CTRL.offset:
            return self._prot_ctrl() & width
        if offset == U.VEND_SPEC.offset:
            return self.vendor_spec & width
        return 0

    def _prot_ctrl(self) -> int:
        """PROT_CTRL as the front end composes it from the standard state."""
        # Each width bit maps onto its own DTW bit: both set read DTW 3.
        dtw = ((U.DTW_8BIT if self.hostctl1 & H.HOSTCTL_WIDTH8 else 0)
               | (U.DTW_4BIT if self.hostctl1 & H.HOSTCTL_WIDTH4 else 0))
        value = _DTW.put(0, dtw) | _DMASEL.put(0, _STD_DMASEL.get(self.hostctl1))
        return value | self.blkgap << 16 | self.wakcon << 24

    def write(self, offset: int, size: int, value: int) -> None:
        value &= (1 << (8 * size)) - 1
        if offset == U.MIX_CTRL.offset:
            self.timer_steps = 0
            self.trnmod = value & U16
        elif offset == U.CMD_XFR_TYP.offset:
            self.write_unmasked(offset, size, value | self.trnmod)
        elif offset in U.ZERO_REGISTERS:
            self.timer_steps = 0
        elif offset == U.VEND_SPEC.offset:
            self.timer_steps = 0
            self.vendor_spec = value & U16
            if value & _FRC_SDCLK_ON:
                self.prnsts &= ~_SDOFF
            else:
                self.prnsts |= _SDOFF
        elif offset == U.PROT_CTRL.offset:
            self.write_unmasked(offset, size, self._host_control(value))
        elif offset == H.BLKSIZE.offset:
            self.write_unmasked(offset, size, value | _BOUNDARY_512K)
        else:
            super().write(offset, size, value)

    def _host_control(self, value: int) -> int:
        """A PROT_CTRL write as the standard HOSTCTL/PWRCON word it becomes."""
        hostctl1 = value & _SAME_BITS
        dtw = _DTW.get(value)
        if dtw & U.DTW_8BIT:
            hostctl1 |= H.HOSTCTL_WIDTH8
        if dtw & U.DTW_4BIT:
            hostctl1 |= H.HOSTCTL_WIDTH4
        hostctl1 |= _STD_DMASEL.put(0, _DMASEL.get(value))
        return (value & ~0xFFFF) | hostctl1 | self.pwrcon << 8
