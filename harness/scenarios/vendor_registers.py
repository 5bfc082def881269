"""Board controllers' vendor registers (the ``registers`` group, one board each).

A scenario here names the controller variant it writes (``params["variant"]``,
:data:`harness.hwdefs.boards.Board.variant`): the check runs it only on the
boards with that controller (:func:`harness.check.boards.skip_reason`), the
default check on those of ``DEFAULT_BOARDS``.  Offsets and fields come from
:mod:`harness.hwdefs.usdhc`, :mod:`harness.hwdefs.npcm`,
:mod:`harness.hwdefs.aspeed` and :mod:`harness.hwdefs.cadence`.
"""

from __future__ import annotations

from harness.driver import host as D
from harness.driver.host import HostDriver
from harness.hwdefs import aspeed as A
from harness.hwdefs import cadence as C
from harness.hwdefs import npcm as N
from harness.hwdefs import sdhci as H
from harness.hwdefs import usdhc as U
from harness.scenarios.registry import Context, scenario
from harness.target import Target

#: The params key naming the one controller variant a scenario is for.
VARIANT = "variant"


@scenario("usdhc-vendor-registers", "registers", params={VARIANT: "usdhc"})
def _usdhc_vendor(t: Target, ctx: Context) -> None:
    """The uSDHC's own registers (i.MX 7 RM; QEMU's esdhc_write): the vendor
    registers drop writes and read 0; VEND_SPEC keeps its low half and
    FRC_SDCLK_ON clears PRES_STATE SDOFF (set otherwise); PROT_CTRL's DTW
    maps onto the standard bus width bits, each width on its own."""
    for reg in U.ZERO_REGISTERS.values():
        t.write(reg.offset, 4, 0xFFFF_FFFF)
        t.read(reg.offset, 4)
    for value in (0xFFFF_FFFF, 0, U.VEND_SPEC.mask("FRC_SDCLK_ON"),
                  U.VEND_SPEC.mask("VSELECT", "CMD_BYTE_EN")):
        t.write(U.VEND_SPEC.offset, 4, value)
        t.read(U.VEND_SPEC.offset, 4)
        t.read(U.PRES_STATE.offset, 4)
    dtw = U.PROT_CTRL.field("DTW")
    for width in (U.DTW_1BIT, U.DTW_8BIT, U.DTW_4BIT, U.DTW_4BIT | U.DTW_8BIT):
        t.write(U.PROT_CTRL.offset, 4, dtw.put(0, width))
        t.read(U.PROT_CTRL.offset, 4)
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    t.read(U.VEND_SPEC.offset, 4)
    t.read(U.PROT_CTRL.offset, 4)


@scenario("npcm-vendor-window", "registers", params={VARIANT: "npcm"})
def _npcm_window(t: Target, ctx: Context) -> None:
    """The NPCM7xx wrapper's window (QEMU's npcm7xx_sdhci.c, the documented
    behaviour): BOOTTOCTRL a 32-bit read/write register, other sizes refused;
    the preset values read-only; every other offset of the window refused;
    a Software Reset For All leaves BOOTTOCTRL (the device reset clears it)."""
    boot = N.BOOTTOCTRL.offset
    for value in (0xFFFF_FFFF, 0x1234_5678):
        t.write(boot, 4, value)
        t.read(boot, 4)
    t.write(boot, 2, 0xABCD)
    t.read(boot, 4)
    for reg in N.PRSTVALS:
        t.write(reg.offset, reg.width, 0xFFFF)
        t.read(reg.offset, reg.width)
    lo, hi = N.WINDOW
    for off in range(lo, hi, 4):
        if off != boot:
            t.write(off, 4, 0xFFFF_FFFF)
            t.read(off, 4)
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    t.read(boot, 4)
    t.read(lo, 2)


@scenario("aspeed-wrapper-registers", "registers", params={VARIANT: "aspeed"})
def _aspeed_wrapper(t: Target, ctx: Context) -> None:
    """The Aspeed wrapper's own registers, 0x100 below slot 0 (QEMU's
    aspeed_sdhci.c; names as Linux's sdhci-of-aspeed.c): every offset after
    reset, sizes other than 32 bits refused, SDC_INFO's RESET bit reading
    back 0, plain registers; the capability mirrors Linux writes to set a
    slot's capabilities (1.8 V, SDR104) changing the slot's Capabilities and
    Maximum Current, each half on its own since 10.0; SDC_IRQ_STAT following
    slot 0's line.  The mirrors are written back at the end: a slot keeps
    its capabilities across ``system_reset``."""
    w = -A.SLOT_STRIDE
    for off in range(0, A.SLOT_STRIDE, 4):
        t.read(w + off, 4)
    t.write(w + A.SDC_DEBOUNCE.offset, 2, 0xFFFF)
    t.read(w + A.SDC_DEBOUNCE.offset, 2)
    t.read(w + A.SDC_DEBOUNCE.offset, 4)
    for off, value in ((A.SDC_INFO.offset, 0xFFFF_FFFF), (A.SDC_INFO.offset, 0),
                       (0x08, 0x1234_5678), (A.SDC_PHASE.offset, 0xFFFF_FFFF)):
        t.write(w + off, 4, value)
        t.read(w + off, 4)
    mirrors = (A.SDC_S0_CAP1, A.SDC_S0_CAP2, A.SDC_S0_MAXCURR, A.SDC_S1_CAP1, A.SDC_S1_CAP2,
               A.SDC_S1_MAXCURR)
    saved = [(reg.offset, t.read(w + reg.offset, 4)) for reg in mirrors]
    caps = dict(saved)
    for reg, value in ((A.SDC_S0_CAP1, caps[A.SDC_S0_CAP1.offset] ^ 1 << 26),  # 1.8 V
                       (A.SDC_S0_CAP2, caps[A.SDC_S0_CAP2.offset] | 1 << 1),   # SDR104
                       (A.SDC_S0_MAXCURR, 0x00AB_CDEF), (A.SDC_S1_MAXCURR, 0x1234_5678),
                       (A.SDC_S1_CAP1, 0x0102_0304), (A.SDC_S1_CAP2, 0x0506_0708)):
        t.write(w + reg.offset, 4, value)
        t.read(w + reg.offset, 4)
        t.read(H.CAPAB.offset, 4)
        t.read(H.CAPAB.offset + 4, 4)
        t.read(H.MAXCURR.offset, 4)
    d = HostDriver(t)
    d.setup()
    t.write(H.NORINTSIGEN.offset, 2, H.NIS_CMDCMPL)
    d.cmd(D.GO_IDLE_STATE)
    t.read(w + A.SDC_IRQ_STAT.offset, 4)
    t.write(H.NORINTSTS.offset, 2, H.NIS_CMDCMPL)
    t.read(w + A.SDC_IRQ_STAT.offset, 4)
    t.write(H.NORINTSIGEN.offset, 2, 0)
    for off, value in saved:
        t.write(w + off, 4, value)
    t.read(H.CAPAB.offset, 4)
    t.read(H.CAPAB.offset + 4, 4)


@scenario("cadence-host-registers", "registers", params={VARIANT: "cadence"})
def _cadence_hrs(t: Target, ctx: Context) -> None:
    """The Cadence SD4HC's Host Register Set, 0x200 below the SDHCI (QEMU's
    cadence_sdhci.c; names as Linux's sdhci-cadence.c): every offset after
    reset (HRS00 0x00010000), sizes other than 32 bits refused, HRS00
    read-only, plain registers, the unassigned gap up to the SDHCI; HRS04's
    PHY write and read as ``sdhci_cdns_write_phy_reg`` polls ACK; HRS06's
    eMMC mode and TUNE_UP as ``sdhci_cdns_set_tune_val`` waits for it."""
    w = -C.SRS_BASE
    for off in range(0, C.HRS_SIZE, 4):
        t.read(w + off, 4)
    t.read(w + C.HRS00.offset, 2)
    t.read(w + C.HRS00.offset + 2, 1)
    for off, size, value in ((0x04, 4, 0xFFFF_FFFF), (0x04, 2, 0xABCD), (0x08, 4, 0x1234_5678),
                             (0xFC, 4, 0xA5A5_5A5A), (C.HRS00.offset, 4, 0xFFFF_FFFE),
                             (C.HRS_SIZE, 4, 0xFFFF_FFFF), (C.SRS_BASE - 4, 4, 0xFFFF_FFFF)):
        t.write(w + off, size, value)
        t.read(w + off, 4)
    phy = w + C.HRS04.offset
    for request in ("WR", "RD"):
        tmp = C.HRS04.field("WDATA").put(0, 0x5A) | C.HRS04.field("ADDR").put(0, 0x06)
        t.write(phy, 4, tmp)
        t.read(phy, 4)
        t.write(phy, 4, tmp | C.HRS04.mask(request))
        t.read(phy, 4)
        t.write(phy, 4, tmp)
        t.read(phy, 4)
    t.write(phy, 4, C.HRS04.mask("ACK", "RDATA"))
    t.read(phy, 4)
    emmc = w + C.HRS06.offset
    mode = C.HRS06.field("MODE").put(0, 4) | C.HRS06.field("TUNE").put(0, 0x2A)
    for value in (mode, mode | C.HRS06.mask("TUNE_UP"), 0xFFFF_FFFF):
        t.write(emmc, 4, value)
        t.read(emmc, 4)


@scenario("cadence-software-reset", "registers", params={VARIANT: "cadence"})
def _cadence_swr(t: Target, ctx: Context) -> None:
    """HRS00.SWR (QEMU's cadence_sdhci.c): the HRS back to its reset values
    and a cold reset of the SDHCI inside and of its SD bus, so an identified
    card is back in *idle* with RCA 0 (``sd_reset``): CMD13 to its old RCA
    gets no answer until it is identified again.  A Software Reset For All
    of the SDHCI (SDHC 2.2.11) leaves the HRS and the card alone."""
    w = -C.SRS_BASE
    d = HostDriver(t)
    d.init()
    for off, value in ((0x04, 0x0000_0007), (C.HRS06.offset, 0x0000_0002)):
        t.write(w + off, 4, value)
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    t.read(w + 0x04, 4)
    t.read(w + C.HRS06.offset, 4)
    d.setup()
    d.send_status()
    t.write(w + C.HRS00.offset, 4, C.HRS00.mask("SWR"))
    for off in (C.HRS00.offset, 0x04, C.HRS06.offset):
        t.read(w + off, 4)
    for reg in (H.PRNSTS, H.NORINTSTS, H.NORINTSTSEN, H.HOSTCTL, H.CLKCON, H.CAPAB):
        t.read(reg.offset, reg.width)
    d.setup()
    d.send_status()
    d.init_card()
    d.send_status()
