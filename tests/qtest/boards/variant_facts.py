"""What each board's controller variant does, as facts a test checks on any
Target: the model (``test_board_models.py``) and QEMU (``test_board_qemu.py``)
are each held to the same statements, taken from the vendors' manuals and
QEMU's documented behaviour (:mod:`harness.hwdefs.usdhc`, ``s3c``, ``npcm``),
never from a build's answers."""

from __future__ import annotations

from harness.driver.host import HostDriver
from harness.hwdefs import aspeed as A
from harness.hwdefs import cadence as C
from harness.hwdefs import npcm as N
from harness.hwdefs import s3c as S
from harness.hwdefs import sdhci as H
from harness.hwdefs import usdhc as U
from harness.target import Target

_DMASEL_ADMA2 = 2


def s3c_control_registers(t: Target) -> None:
    """CONTROL2/3/4 read 0 and drop writes (s3c.control-registers-ignored);
    the standard registers around them still work."""
    for reg in S.VENDOR_REGISTERS.values():
        t.write(reg.offset, 4, 0xFFFF_FFFF)
        assert t.read(reg.offset, 4) == 0, reg.name
    t.write(H.NORINTSTSEN.offset, 2, 0x00FF)
    assert t.read(H.NORINTSTSEN.offset, 2) == 0x00FF


def aspeed_slot(t: Target, version: tuple[int, ...]) -> None:
    """Slot 0 of the AST2600's wrapper: its SoC's capabilities (one value for
    every SoC before 10.0: aspeed.capareg-per-soc) and, with a writable card,
    Write Protect Switch Pin Level 1 before 10.0 and 0 (the EVB's inverted
    signal, aspeed.wp-inverted) from 10.0, after a Software Reset too."""
    new = version >= (10, 0)
    caps = t.read(H.CAPAB.offset, 4) | t.read(H.CAPAB.offset + 4, 4) << 32
    assert caps == (A.CAPAREG_AST2600 if new else A.CAPAREG_BEFORE_10_0)
    for _ in range(2):
        prnsts = t.read(H.PRNSTS.offset, 4)
        assert prnsts & H.PRNSTS_CARDINSERTED
        assert bool(prnsts & H.PRNSTS_WRITEPROTECT) is not new
        t.write(H.SWRST.offset, 1, H.SWRST_ALL)


def aspeed_wrapper(t: Target, version: tuple[int, ...]) -> None:
    """The AST2600 SD wrapper's own registers, 0x100 below slot 0: two slots
    present, debounce 5, RESET reading back 0, 32-bit accesses only; the
    capability mirrors, whose high half (10.0 on) sets the slot's upper
    Capabilities as Linux's aspeed_sdc_set_slot_capability does for SDR104
    (7.2: a plain register, the slot unchanged)."""
    w, new = -A.SLOT_STRIDE, version >= (10, 0)
    info = A.SDC_INFO.mask("S0_PRESENT", "S1_PRESENT")
    assert t.read(w + A.SDC_INFO.offset, 4) == info
    assert t.read(w + A.SDC_DEBOUNCE.offset, 4) == A.DEBOUNCE_RESET
    assert t.read(w + A.SDC_DEBOUNCE.offset, 2) == 0  # refused
    t.write(w + A.SDC_INFO.offset, 4, 0xFFFF_FFFF)
    assert t.read(w + A.SDC_INFO.offset, 4) == 0xFFFF_FFFE
    t.write(w + A.SDC_INFO.offset, 4, info)
    caps = t.read(H.CAPAB.offset, 4) | t.read(H.CAPAB.offset + 4, 4) << 32
    assert t.read(w + A.SDC_S0_CAP1.offset, 4) == caps & 0xFFFF_FFFF
    high = t.read(w + A.SDC_S0_CAP2.offset, 4)
    assert high == (caps >> 32 if new else 0)
    sdr104 = 1 << 1
    t.write(w + A.SDC_S0_CAP2.offset, 4, high | sdr104)
    assert t.read(H.CAPAB.offset + 4, 4) == (caps >> 32 | sdr104 if new else caps >> 32)
    assert t.read(w + A.SDC_S0_CAP2.offset, 4) == high | sdr104
    t.write(w + A.SDC_S0_CAP2.offset, 4, high)  # the slot keeps it across a reset


def npcm_wrapper(t: Target) -> None:
    """The wrapper's reset values over the SDHCI, its PRSTVALS/BOOTTOCTRL
    window, and a Software Reset that resets the SDHCI alone."""
    v = N.RESET_VALUES
    assert t.read(H.PRNSTS.offset, 4) & ~H.PRNSTS_LINE_LEVELS == v["prnsts"] & ~H.PRNSTS_LINE_LEVELS
    assert t.read(H.BLKGAP.offset, 1) == v["blkgap"]
    caps = t.read(H.CAPAB.offset, 4) | t.read(H.CAPAB.offset + 4, 4) << 32
    assert caps == v["capareg"]
    assert t.read(H.MAXCURR.offset, 4) == v["maxcurr"]
    assert t.read(H.HCVER.offset, 2) == v["hcver"]
    for reg, want in zip(N.PRSTVALS, N.PRSTVALS_RESET, strict=True):
        assert t.read(reg.offset, 2) == want, reg.name
        t.write(reg.offset, 2, 0x7777)  # read-only: dropped
        assert t.read(reg.offset, 2) == want, reg.name
    assert t.read(N.PRSTVALS[0].offset, 4) == 0  # a dword is refused: reads 0
    t.write(N.BOOTTOCTRL.offset, 4, 0x1234_5678)
    t.write(N.BOOTTOCTRL.offset, 2, 0xAAAA)  # a word is refused: dropped
    assert t.read(N.BOOTTOCTRL.offset, 4) == 0x1234_5678
    assert t.read(N.BOOTTOCTRL.offset, 2) == 0
    t.write(0x74, 4, 0xFFFF_FFFF)  # in the window, no register: refused
    assert t.read(0x74, 4) == 0
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    assert t.read(H.PRNSTS.offset, 4) & H.PRNSTS_CARDINSERTED
    assert t.read(H.BLKGAP.offset, 1) == 0
    assert t.read(H.HCVER.offset, 2) == v["hcver"]
    assert t.read(N.BOOTTOCTRL.offset, 4) == 0x1234_5678  # the wrapper's, not reset
    t.write(H.BLKSIZE.offset, 2, 2048)  # the buffer is 512 bytes (npcm.version-3-rules-2)
    assert t.read(H.BLKSIZE.offset, 2) & 0xFFF == 512


def usdhc_layout(t: Target) -> None:
    """PROT_CTRL maps onto the standard Host Control 1 (DTW, DMASEL) and reads
    back only those and the upper half; BLK_ATT's boundary is forced; VEND_SPEC
    FRC_SDCLK_ON clears PRES_STATE SDOFF, its absence sets it; PRES_STATE SDSTB
    follows Internal Clock Stable; MIX_CTRL reads 0."""
    dtw, dmasel = U.PROT_CTRL.field("DTW"), U.PROT_CTRL.field("DMASEL")
    prot = dtw.put(0, U.DTW_4BIT) | dmasel.put(0, _DMASEL_ADMA2) | U.PROT_CTRL.mask("LCTL")
    t.write(U.PROT_CTRL.offset, 4, prot)
    assert t.read(U.PROT_CTRL.offset, 4) == prot & ~U.PROT_CTRL.mask("LCTL")
    std = t.read(H.HOSTCTL.offset + 1, 1)  # byte 1 takes the standard path: PWRCON
    assert std == 0
    t.write(U.PROT_CTRL.offset, 4, dtw.put(0, U.DTW_8BIT))
    assert dtw.get(t.read(U.PROT_CTRL.offset, 4)) == U.DTW_8BIT
    t.write(H.BLKSIZE.offset, 2, 0x0200)
    assert t.read(H.BLKSIZE.offset, 2) == 0x7200
    sdoff, sdstb = U.PRES_STATE.mask("SDOFF"), U.PRES_STATE.mask("SDSTB")
    t.write(U.VEND_SPEC.offset, 4, 0)
    assert t.read(U.PRES_STATE.offset, 4) & sdoff
    t.write(U.VEND_SPEC.offset, 4, U.VEND_SPEC.mask("FRC_SDCLK_ON"))
    assert not t.read(U.PRES_STATE.offset, 4) & sdoff
    assert not t.read(U.PRES_STATE.offset, 4) & sdstb
    t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN)
    assert t.read(U.PRES_STATE.offset, 4) & sdstb
    t.write(U.MIX_CTRL.offset, 4, U.MIX_CTRL.mask("DTDSEL", "BCEN"))
    assert t.read(U.MIX_CTRL.offset, 4) == 0
    for reg in U.ZERO_REGISTERS.values():
        t.write(reg.offset, 4, 0xFFFF_FFFF)
        assert t.read(reg.offset, 4) == 0, reg.name


def usdhc_command_takes_mix_ctrl(t: Target) -> None:
    """A 32-bit CMD_XFR_TYP write issues the command with MIX_CTRL's transfer
    mode in TRNMOD; an R1b command raises no Transfer Complete (usdhc.no-busy-irq)."""
    t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
    t.write(H.PWRCON.offset, 1, 0x0F)
    t.write(H.CLKCON.offset, 2, 0x0007)
    mode = U.MIX_CTRL.mask("DTDSEL")
    t.write(U.MIX_CTRL.offset, 4, mode)
    t.write(H.ARGUMENT.offset, 4, 0)
    t.write(U.CMD_XFR_TYP.offset, 4, H.cmdreg(0, H.RSP_NONE) << 16)  # CMD0
    assert t.read(H.NORINTSTS.offset, 2) & H.NIS_CMDCMPL
    assert t.read(H.TRNMOD.offset, 2) == mode
    t.write(H.NORINTSTS.offset, 2, 0xFFFF)
    t.write(U.MIX_CTRL.offset, 4, 0)
    t.write(U.CMD_XFR_TYP.offset, 4, H.cmdreg(7, H.RSP_48_BUSY) << 16)  # CMD7, R1b
    status = t.read(H.NORINTSTS.offset, 2)
    assert status & H.NIS_CMDCMPL and not status & H.NIS_TRNSCMPL


def cadence_hrs(t: Target) -> None:
    """The Cadence SD4HC's Host Register Set, 0x200 below the SDHCI (QEMU's
    cadence_sdhci.c): HRS00 resets to 0x00010000 and keeps it, 32-bit accesses
    only, HRS04's ACK set by a write with WR or RD and cleared by any other,
    HRS06's TUNE_UP reading back 0, plain registers elsewhere, nothing
    between the HRS and the SDHCI."""
    w = -C.SRS_BASE
    assert t.read(w + C.HRS00.offset, 4) == C.HRS00_RESET
    t.write(w + C.HRS00.offset, 4, 0xFFFF_FFFE)
    assert t.read(w + C.HRS00.offset, 4) == C.HRS00_RESET
    assert t.read(w + C.HRS00.offset + 2, 2) == 0  # 16 bits: refused
    t.write(w + 0x08, 4, 0x1234_5678)
    t.write(w + 0x08, 2, 0xFFFF)  # refused
    assert t.read(w + 0x08, 4) == 0x1234_5678
    ack = C.HRS04.mask("ACK")
    t.write(w + C.HRS04.offset, 4, C.HRS04.mask("WR") | 0x5A06)
    assert t.read(w + C.HRS04.offset, 4) == ack | C.HRS04.mask("WR") | 0x5A06
    t.write(w + C.HRS04.offset, 4, ack | 0x5A06)
    assert t.read(w + C.HRS04.offset, 4) == 0x5A06
    t.write(w + C.HRS06.offset, 4, 0xFFFF_FFFF)
    assert t.read(w + C.HRS06.offset, 4) == 0xFFFF_FFFF & ~C.HRS06.mask("TUNE_UP")
    t.write(w + C.HRS_SIZE, 4, 0xFFFF_FFFF)
    assert t.read(w + C.HRS_SIZE, 4) == 0
    assert t.read(H.CAPAB.offset, 4) == H.CAPAREG_DEFAULT  # TYPE_SYSBUS_SDHCI's default


def cadence_software_reset(t: Target) -> None:
    """HRS00.SWR resets the HRS and cold-resets the SDHCI inside with its SD
    bus: the SDHCI's registers clear, and the identified card is back in
    *idle* with RCA 0, so CMD13 to its old RCA times out (no answer) until
    CMD0..CMD3 again; SWR itself reads back 0."""
    d = HostDriver(t)
    d.init()
    assert not d.send_status().error
    t.write(-C.SRS_BASE + C.HRS06.offset, 4, 2)
    t.write(-C.SRS_BASE + C.HRS00.offset, 4, C.HRS00.mask("SWR"))
    assert t.read(-C.SRS_BASE + C.HRS00.offset, 4) == C.HRS00_RESET
    assert t.read(-C.SRS_BASE + C.HRS06.offset, 4) == 0
    assert t.read(H.NORINTSTSEN.offset, 2) == 0 and t.read(H.CLKCON.offset, 2) == 0
    d.setup()
    res = d.send_status()
    assert res.errintsts & H.EIS_CMDTOUT, res
    info = d.init_card()
    assert not d.send_status().error and info.rca == d.card.rca
