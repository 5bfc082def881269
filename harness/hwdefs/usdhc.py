"""The i.MX uSDHC registers where they differ from the standard SDHCI, as data.

Names and fields are the i.MX 7Dual Applications Processor Reference Manual's
(chapter "Ultra Secured Digital Host Controller (uSDHC)"); the standard
registers keep their place otherwise.  What differs:

* PROT_CTRL (``0x28``) replaces Host Control 1 / Power Control: the data
  transfer width is two bits (DTW, bits 2:1: 1-bit, 4-bit, 8-bit), DMA
  select moves to bits 9:8 (DMASEL), there is no power control byte;
* MIX_CTRL (``0x48``) holds the transfer mode (the low half of CMD_XFR_TYP
  at ``0x0C`` is reserved on the uSDHC), and the command is issued by the
  32-bit CMD_XFR_TYP write;
* PRES_STATE (``0x24``) reports SD Clock Stable (SDSTB, bit 3) and SD Clock
  Gated Off (SDOFF, bit 7);
* vendor registers: WTMK_LVL (``0x44``), DLL_CTRL (``0x60``),
  CLK_TUNE_CTRL_STATUS (``0x68``), VEND_SPEC (``0xC0``), TUNING_CTRL (``0xCC``).

QEMU's ``imx-usdhc`` (hw/sd/sdhci.c ``esdhc_read``/``esdhc_write``/
``usdhc_write``) translates PROT_CTRL and MIX_CTRL onto its standard state,
answers 0 for the vendor registers but VEND_SPEC, and also hides the
register QEMU calls undocumented (:data:`REG27`, ``0x6C``, which guests
touch for erratum ERR004536).  Its departures are ledger entries ``usdhc.*``.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["CLK_TUNE_CTRL_STATUS", "CMD_XFR_TYP", "DLL_CTRL", "MIX_CTRL", "OWN_REGISTERS",
           "PRES_STATE", "PROT_CTRL", "REG27", "TUNING_CTRL", "VEND_SPEC", "WTMK_LVL",
           "ZERO_REGISTERS"]

RO, RW = Access.RO, Access.RW

PROT_CTRL = Register("PROT_CTRL", 0x28, 4, (
    Field("LCTL", 0, 1, RW, "LED control"),
    Field("DTW", 1, 2, RW, "Data transfer width: 0 1-bit, 1 4-bit, 2 8-bit"),
    Field("D3CD", 3, 1, RW, "DATA3 as card detection pin"),
    Field("EMODE", 4, 2, RW, "Endian mode"),
    Field("CDTL", 6, 1, RW, "Card detect test level"),
    Field("CDSS", 7, 1, RW, "Card detect signal selection"),
    Field("DMASEL", 8, 2, RW, "DMA select: 0 simple DMA, 1 ADMA1, 2 ADMA2"),
    Field("SABGREQ", 16, 1, RW, "Stop at block gap request"),
    Field("CREQ", 17, 1, RW, "Continue request"),
    Field("RWCTL", 18, 1, RW, "Read wait control"),
    Field("IABG", 19, 1, RW, "Interrupt at block gap"),
    Field("WECINT", 24, 1, RW, "Wakeup event enable on card interrupt"),
    Field("WECINS", 25, 1, RW, "Wakeup event enable on card insertion"),
    Field("WECRM", 26, 1, RW, "Wakeup event enable on card removal"),
), "Protocol Control (i.MX 7 RM, uSDHC PROT_CTRL)")

#: DTW values (PROT_CTRL bits 2:1).
DTW_1BIT, DTW_4BIT, DTW_8BIT = 0, 1, 2

CMD_XFR_TYP = Register("CMD_XFR_TYP", 0x0C, 4, (
    Field("RSPTYP", 16, 2, RW, "Response type select"),
    Field("CCCEN", 19, 1, RW, "Command CRC check enable"),
    Field("CICEN", 20, 1, RW, "Command index check enable"),
    Field("DPSEL", 21, 1, RW, "Data present select"),
    Field("CMDTYP", 22, 2, RW, "Command type"),
    Field("CMDINX", 24, 6, RW, "Command index"),
), "Command Transfer Type: the command in the upper half, the lower half reserved "
   "(i.MX 7 RM, uSDHC CMD_XFR_TYP)")

MIX_CTRL = Register("MIX_CTRL", 0x48, 4, (
    Field("DMAEN", 0, 1, RW, "DMA enable"),
    Field("BCEN", 1, 1, RW, "Block count enable"),
    Field("AC12EN", 2, 1, RW, "Auto CMD12 enable"),
    Field("DDR_EN", 3, 1, RW, "Dual data rate mode"),
    Field("DTDSEL", 4, 1, RW, "Data transfer direction select: 1 read"),
    Field("MSBSEL", 5, 1, RW, "Multi/single block select"),
    Field("NIBBLE_POS", 6, 1, RW, "Nibble position for DDR 4-bit"),
    Field("AC23EN", 7, 1, RW, "Auto CMD23 enable"),
    Field("EXE_TUNE", 22, 1, RW, "Execute tuning"),
    Field("SMP_CLK_SEL", 23, 1, RW, "Tuned clock or fixed clock to sample data"),
    Field("AUTO_TUNE_EN", 24, 1, RW, "Auto tuning enable"),
    Field("FBCLK_SEL", 25, 1, RW, "Feedback clock source selection"),
), "Mixer Control: the transfer mode (i.MX 7 RM, uSDHC MIX_CTRL)")

PRES_STATE = Register("PRES_STATE", 0x24, 4, (
    Field("SDSTB", 3, 1, RO, "SD clock stable"),
    Field("IPGOFF", 4, 1, RO, "IPG clock gated off internally"),
    Field("HCKOFF", 5, 1, RO, "HCLK gated off internally"),
    Field("PEROFF", 6, 1, RO, "IPG_PERCLK gated off internally"),
    Field("SDOFF", 7, 1, RO, "SD clock gated off internally"),
), "Present State, the uSDHC's own bits (i.MX 7 RM, uSDHC PRES_STATE)")

VEND_SPEC = Register("VEND_SPEC", 0xC0, 4, (
    Field("EXT_DMA_EN", 0, 1, RW, "External DMA request enable"),
    Field("VSELECT", 1, 1, RW, "Voltage selection"),
    Field("CONFLICT_CHK_EN", 2, 1, RW, "Conflict check enable"),
    Field("AC12_WR_CHKBUSY_EN", 3, 1, RW, "Check busy after Auto CMD12 for writes"),
    Field("FRC_SDCLK_ON", 8, 1, RW, "Force the SD clock on"),
    Field("CRC_CHK_DIS", 15, 1, RW, "CRC check disable"),
    Field("CMD_BYTE_EN", 31, 1, RW, "Byte access to CMD_XFR_TYP enable"),
), "Vendor Specific Register (i.MX 7 RM, uSDHC VEND_SPEC)")

WTMK_LVL = Register("WTMK_LVL", 0x44, 4, (), "Watermark Level (i.MX 7 RM)")
DLL_CTRL = Register("DLL_CTRL", 0x60, 4, (), "DLL Control (i.MX 7 RM)")
CLK_TUNE_CTRL_STATUS = Register("CLK_TUNE_CTRL_STATUS", 0x68, 4, (),
                                "Clock Tuning Control and Status (i.MX 7 RM)")
REG27 = Register("REG27", 0x6C, 4, (), "Undocumented register (erratum ERR004536)")
TUNING_CTRL = Register("TUNING_CTRL", 0xCC, 4, (), "Tuning Control (i.MX 7 RM)")

#: The registers QEMU's uSDHC answers 0 at (reads at exactly their offset),
#: writes dropped, by offset; MIX_CTRL reads 0 as well but its writes land.
ZERO_REGISTERS: dict[int, Register] = {r.offset: r for r in (
    WTMK_LVL, DLL_CTRL, CLK_TUNE_CTRL_STATUS, REG27, TUNING_CTRL)}

#: The registers that take the place of standard ones (CMD_XFR_TYP, PROT_CTRL,
#: WTMK_LVL over the upper half of the capabilities, MIX_CTRL over Maximum
#: Current) or lie in the standard map's holes: what a report names at their
#: offsets.  PRES_STATE only adds bits to Present State, which keeps its name.
OWN_REGISTERS: tuple[Register, ...] = (
    CMD_XFR_TYP, PROT_CTRL, WTMK_LVL, MIX_CTRL, DLL_CTRL, CLK_TUNE_CTRL_STATUS, REG27,
    VEND_SPEC, TUNING_CTRL)
