"""The SD host controller register map, declared once.

Offsets, widths and bit fields follow the SD Host Controller Simplified
Specification (v3.00, section 2 "SD Host Standard Register"), with the
register and field names used throughout sdqtest.  Access types are the
specification's; where QEMU's ``sdhci`` differs, the model and
the ledger (``harness.ledger.sdhci``) say so.

Pure data and tiny helpers: imported by the model, the host driver and the
divergence reports.  Names here are a stable interface.
"""

from __future__ import annotations

import struct
from dataclasses import replace

from harness.hwdefs.fields import Access, Field, Register

RO, RW, RW1C, WO, RSVD, ROC = (
    Access.RO, Access.RW, Access.RW1C, Access.WO, Access.RSVD, Access.ROC,
)

#: Size of the register window (BAR0 of sdhci-pci), in bytes.
REGISTER_WINDOW = 0x100

# --------------------------------------------------------------------------
# Field groups shared by several registers
# --------------------------------------------------------------------------

#: Normal interrupt status / status enable / signal enable layout (2.2.17-19).
_NORINT_FIELDS = (
    Field("CMDCMPL", 0, 1, RW1C, "Command Complete"),
    Field("TRNSCMPL", 1, 1, RW1C, "Transfer Complete"),
    Field("BLKGAP", 2, 1, RW1C, "Block Gap Event"),
    Field("DMAINT", 3, 1, RW1C, "DMA Interrupt"),
    Field("WBUFRDY", 4, 1, RW1C, "Buffer Write Ready"),
    Field("RBUFRDY", 5, 1, RW1C, "Buffer Read Ready"),
    Field("CARDINS", 6, 1, RW1C, "Card Insertion"),
    Field("CARDREM", 7, 1, RW1C, "Card Removal"),
    Field("CARDINT", 8, 1, RO, "Card Interrupt"),
    Field("INT_A", 9, 1, RO, "INT_A (embedded)"),
    Field("INT_B", 10, 1, RO, "INT_B (embedded)"),
    Field("INT_C", 11, 1, RO, "INT_C (embedded)"),
    Field("RETUNE", 12, 1, RO, "Re-Tuning Event (v3)", since=3),
    Field("ERRINT", 15, 1, RO, "Error Interrupt (OR of the error status bits)"),
)

#: Error interrupt status / status enable / signal enable layout (2.2.18-21).
_ERRINT_FIELDS = (
    Field("CMDTOUT", 0, 1, RW1C, "Command Timeout Error"),
    Field("CMDCRC", 1, 1, RW1C, "Command CRC Error"),
    Field("CMDEND", 2, 1, RW1C, "Command End Bit Error"),
    Field("CMDIDX", 3, 1, RW1C, "Command Index Error"),
    Field("DATTOUT", 4, 1, RW1C, "Data Timeout Error"),
    Field("DATCRC", 5, 1, RW1C, "Data CRC Error"),
    Field("DATEND", 6, 1, RW1C, "Data End Bit Error"),
    Field("CURLIM", 7, 1, RW1C, "Current Limit Error"),
    Field("ACMDERR", 8, 1, RW1C, "Auto CMD Error"),
    Field("ADMAERR", 9, 1, RW1C, "ADMA Error"),
    Field("TUNINGERR", 10, 1, RW1C, "Tuning Error (v3)", since=3),
    Field("VENDORERR", 12, 4, RW1C, "Vendor Specific Error Status"),
)


def _as(fields: tuple[Field, ...], access: Access) -> tuple[Field, ...]:
    """The same fields with another access type (enable registers are RW)."""
    return tuple(replace(f, access=access) for f in fields)


# --------------------------------------------------------------------------
# The registers (SD Host Controller Simplified Specification v3.00, 2.1/2.2)
# --------------------------------------------------------------------------

SDMASYSAD = Register("SDMASYSAD", 0x00, 4, (
    Field("ADDR", 0, 32, RW, "SDMA System Address; a write to the top byte restarts SDMA"),
), "SDMA System Address (2.2.1)")

BLKSIZE = Register("BLKSIZE", 0x04, 2, (
    Field("BLKSIZE", 0, 12, RW, "Transfer Block Size in bytes (0..2048)"),
    Field("SDMABUFBND", 12, 3, RW, "SDMA Buffer Boundary: 4 KiB << value"),
), "Block Size (2.2.2)")

BLKCNT = Register("BLKCNT", 0x06, 2, (
    Field("BLKCNT", 0, 16, RW, "Blocks Count for Current Transfer"),
), "Block Count (2.2.3)")

ARGUMENT = Register("ARGUMENT", 0x08, 4, (
    Field("ARG", 0, 32, RW, "Command Argument 1"),
), "Argument 1 (2.2.4)")

TRNMOD = Register("TRNMOD", 0x0C, 2, (
    Field("DMAEN", 0, 1, RW, "DMA Enable"),
    Field("BLKCNTEN", 1, 1, RW, "Block Count Enable"),
    Field("ACMDEN", 2, 2, RW, "Auto CMD Enable: 1 = Auto CMD12, 2 = Auto CMD23 (v3)"),
    Field("READ", 4, 1, RW, "Data Transfer Direction Select: 1 = read (card to host)"),
    Field("MULTI", 5, 1, RW, "Multi / Single Block Select"),
), "Transfer Mode (2.2.5)")

CMDREG = Register("CMDREG", 0x0E, 2, (
    Field("RSPTYP", 0, 2, RW, "Response Type Select: 0 none, 1 136-bit, 2 48-bit, 3 48-bit busy"),
    Field("CRCCHK", 3, 1, RW, "Command CRC Check Enable"),
    Field("IDXCHK", 4, 1, RW, "Command Index Check Enable"),
    Field("DATAPRSNT", 5, 1, RW, "Data Present Select"),
    Field("CMDTYP", 6, 2, RW, "Command Type: 0 normal, 1 suspend, 2 resume, 3 abort"),
    Field("CMDIDX", 8, 6, RW, "Command Index; writing the upper byte issues the command"),
), "Command (2.2.6)")

RSPREG0 = Register("RSPREG0", 0x10, 4, (Field("RSP", 0, 32, ROC, "Response [39:8]"),),
                   "Response 0 (2.2.7)")
RSPREG1 = Register("RSPREG1", 0x14, 4, (Field("RSP", 0, 32, ROC, "Response [71:40]"),),
                   "Response 1 (2.2.7)")
RSPREG2 = Register("RSPREG2", 0x18, 4, (Field("RSP", 0, 32, ROC, "Response [103:72]"),),
                   "Response 2 (2.2.7)")
RSPREG3 = Register("RSPREG3", 0x1C, 4, (
    Field("RSP", 0, 32, ROC, "Response [135:104]; Auto CMD12 response"),
), "Response 3 (2.2.7)")

BDATA = Register("BDATA", 0x20, 4, (
    Field("DATA", 0, 32, RW, "Buffer Data Port"),
), "Buffer Data Port (2.2.8)")

PRNSTS = Register("PRNSTS", 0x24, 4, (
    Field("CMDINHIBIT", 0, 1, RO, "Command Inhibit (CMD)"),
    Field("DATINHIBIT", 1, 1, RO, "Command Inhibit (DAT)"),
    Field("DATLINEACTIVE", 2, 1, RO, "DAT Line Active"),
    Field("RETUNE_REQ", 3, 1, RO, "Re-Tuning Request (v3)", since=3),
    Field("WRITE_ACTIVE", 8, 1, RO, "Write Transfer Active"),
    Field("READ_ACTIVE", 9, 1, RO, "Read Transfer Active"),
    Field("BUFWRRDY", 10, 1, RO, "Buffer Write Enable"),
    Field("BUFRDRDY", 11, 1, RO, "Buffer Read Enable"),
    Field("CARDINSERTED", 16, 1, RO, "Card Inserted"),
    Field("CARDSTABLE", 17, 1, RO, "Card State Stable"),
    Field("CARDDETECT", 18, 1, RO, "Card Detect Pin Level"),
    Field("WRITEPROTECT", 19, 1, RO, "Write Protect Switch Pin Level (1 = writable)"),
    Field("DATLVL", 20, 4, RO, "DAT[3:0] Line Signal Level"),
    Field("CMDLVL", 24, 1, RO, "CMD Line Signal Level"),
), "Present State (2.2.9)")

HOSTCTL = Register("HOSTCTL", 0x28, 1, (
    Field("LEDCTL", 0, 1, RW, "LED Control"),
    Field("WIDTH4", 1, 1, RW, "Data Transfer Width: 1 = 4-bit"),
    Field("HISPD", 2, 1, RW, "High Speed Enable"),
    Field("DMASEL", 3, 2, RW, "DMA Select: 0 SDMA, 1 ADMA1 (v2), 2 ADMA2 32-bit, 3 ADMA2 64-bit"),
    Field("WIDTH8", 5, 1, RW, "Extended Data Transfer Width (8-bit)"),
    Field("CDTESTLVL", 6, 1, RW, "Card Detect Test Level"),
    Field("CDSIGSEL", 7, 1, RW, "Card Detect Signal Selection"),
), "Host Control 1 (2.2.10)")

PWRCON = Register("PWRCON", 0x29, 1, (
    Field("BUSPWR", 0, 1, RW, "SD Bus Power"),
    Field("BUSVOLT", 1, 3, RW, "SD Bus Voltage Select: 7 = 3.3V, 6 = 3.0V, 5 = 1.8V"),
), "Power Control (2.2.11)")

BLKGAP = Register("BLKGAP", 0x2A, 1, (
    Field("STOPATGAP", 0, 1, RW, "Stop At Block Gap Request"),
    Field("CONTINUE", 1, 1, RW, "Continue Request"),
    Field("RDWAITCTL", 2, 1, RW, "Read Wait Control"),
    Field("INTATGAP", 3, 1, RW, "Interrupt At Block Gap"),
), "Block Gap Control (2.2.12)")

WAKCON = Register("WAKCON", 0x2B, 1, (
    Field("WKUPCARDINT", 0, 1, RW, "Wakeup Event Enable On Card Interrupt"),
    Field("WKUPCARDINS", 1, 1, RW, "Wakeup Event Enable On SD Card Insertion"),
    Field("WKUPCARDREM", 2, 1, RW, "Wakeup Event Enable On SD Card Removal"),
), "Wakeup Control (2.2.13)")

CLKCON = Register("CLKCON", 0x2C, 2, (
    Field("INTCLKEN", 0, 1, RW, "Internal Clock Enable"),
    Field("INTCLKSTABLE", 1, 1, RO, "Internal Clock Stable"),
    Field("SDCLKEN", 2, 1, RW, "SD Clock Enable"),
    Field("CLKGENSEL", 5, 1, RW, "Clock Generator Select (v3)", since=3),
    Field("SDCLKFSEL_HI", 6, 2, RW, "Upper Bits of SDCLK Frequency Select (v3)", since=3),
    Field("SDCLKFSEL", 8, 8, RW, "SDCLK Frequency Select"),
), "Clock Control (2.2.14)")

TIMEOUTCON = Register("TIMEOUTCON", 0x2E, 1, (
    Field("DATTOUTCNT", 0, 4, RW, "Data Timeout Counter Value: TMCLK * 2^(13+value)"),
), "Timeout Control (2.2.15)")

SWRST = Register("SWRST", 0x2F, 1, (
    Field("RSTALL", 0, 1, RW, "Software Reset For All"),
    Field("RSTCMD", 1, 1, RW, "Software Reset For CMD Line"),
    Field("RSTDAT", 2, 1, RW, "Software Reset For DAT Line"),
), "Software Reset (2.2.16)")

NORINTSTS = Register("NORINTSTS", 0x30, 2, _NORINT_FIELDS, "Normal Interrupt Status (2.2.17)")
ERRINTSTS = Register("ERRINTSTS", 0x32, 2, _ERRINT_FIELDS, "Error Interrupt Status (2.2.18)")
NORINTSTSEN = Register("NORINTSTSEN", 0x34, 2, _as(_NORINT_FIELDS[:-1], RW),
                       "Normal Interrupt Status Enable (2.2.19)")
ERRINTSTSEN = Register("ERRINTSTSEN", 0x36, 2, _as(_ERRINT_FIELDS, RW),
                       "Error Interrupt Status Enable (2.2.20)")
NORINTSIGEN = Register("NORINTSIGEN", 0x38, 2, _as(_NORINT_FIELDS[:-1], RW),
                       "Normal Interrupt Signal Enable (2.2.21)")
ERRINTSIGEN = Register("ERRINTSIGEN", 0x3A, 2, _as(_ERRINT_FIELDS, RW),
                       "Error Interrupt Signal Enable (2.2.22)")

ACMD12ERRSTS = Register("ACMD12ERRSTS", 0x3C, 2, (
    Field("NOTEXEC", 0, 1, RO, "Auto CMD12 Not Executed"),
    Field("TOUT", 1, 1, RO, "Auto CMD Timeout Error"),
    Field("CRC", 2, 1, RO, "Auto CMD CRC Error"),
    Field("END", 3, 1, RO, "Auto CMD End Bit Error"),
    Field("IDX", 4, 1, RO, "Auto CMD Index Error"),
    Field("NOTISSUED", 7, 1, RO, "Command Not Issued By Auto CMD12 Error"),
), "Auto CMD Error Status (2.2.23)")

HOSTCTL2 = Register("HOSTCTL2", 0x3E, 2, (
    Field("UHSMODE", 0, 3, RW, "UHS Mode Select (v3)", since=3),
    Field("V18EN", 3, 1, RW, "1.8V Signaling Enable (v3)", since=3),
    Field("DRVSTR", 4, 2, RW, "Driver Strength Select (v3)", since=3),
    Field("EXECTUNING", 6, 1, RW, "Execute Tuning (v3)", since=3),
    Field("SMPLCLKSEL", 7, 1, RW, "Sampling Clock Select (v3)", since=3),
    Field("V4EN", 12, 1, RW, "Host Version 4 Enable (v4.10)", since=4),
    Field("ASYNCINTEN", 14, 1, RW, "Asynchronous Interrupt Enable (v3)", since=3),
    Field("PRESETEN", 15, 1, RW, "Preset Value Enable (v3)", since=3),
), "Host Control 2 (2.2.24, v3)")

CAPAB = Register("CAPAB", 0x40, 8, (
    Field("TOCLKFREQ", 0, 6, RO, "Timeout Clock Frequency"),
    Field("TOCLKUNIT", 7, 1, RO, "Timeout Clock Unit: 1 = MHz"),
    Field("BASECLKFREQ", 8, 8, RO, "Base Clock Frequency For SD Clock (MHz)"),
    Field("MAXBLKLEN", 16, 2, RO, "Max Block Length: 512 << value"),
    Field("EMBEDDED8BIT", 18, 1, RO, "8-bit Support for Embedded Device (v3)", since=3),
    Field("ADMA2", 19, 1, RO, "ADMA2 Support"),
    Field("ADMA1", 20, 1, RO, "ADMA1 Support (v2; reserved in v3)"),
    Field("HISPD", 21, 1, RO, "High Speed Support"),
    Field("SDMA", 22, 1, RO, "SDMA Support"),
    Field("SUSPRES", 23, 1, RO, "Suspend/Resume Support"),
    Field("V33", 24, 1, RO, "Voltage Support 3.3V"),
    Field("V30", 25, 1, RO, "Voltage Support 3.0V"),
    Field("V18", 26, 1, RO, "Voltage Support 1.8V"),
    Field("BUS64BIT", 28, 1, RO, "64-bit System Bus Support"),
    Field("ASYNCINT", 29, 1, RO, "Asynchronous Interrupt Support (v3)", since=3),
    Field("SLOTTYPE", 30, 2, RO, "Slot Type (v3)", since=3),
    Field("SDR50", 32, 1, RO, "SDR50 Support (v3)", since=3),
    Field("SDR104", 33, 1, RO, "SDR104 Support (v3)", since=3),
    Field("DDR50", 34, 1, RO, "DDR50 Support (v3)", since=3),
    Field("DRVTYPEA", 36, 1, RO, "Driver Type A Support (v3)", since=3),
    Field("DRVTYPEC", 37, 1, RO, "Driver Type C Support (v3)", since=3),
    Field("DRVTYPED", 38, 1, RO, "Driver Type D Support (v3)", since=3),
    Field("RETUNETIMER", 40, 4, RO, "Timer Count for Re-Tuning (v3)", since=3),
    Field("SDR50TUNING", 45, 1, RO, "Use Tuning for SDR50 (v3)", since=3),
    Field("RETUNEMODE", 46, 2, RO, "Re-Tuning Modes (v3)", since=3),
    Field("CLKMULT", 48, 8, RO, "Clock Multiplier (v3)", since=3),
), "Capabilities (2.2.25-26)")

MAXCURR = Register("MAXCURR", 0x48, 8, (
    Field("MAXCURR33", 0, 8, RO, "Maximum Current for 3.3V (x4 mA)"),
    Field("MAXCURR30", 8, 8, RO, "Maximum Current for 3.0V (x4 mA)"),
    Field("MAXCURR18", 16, 8, RO, "Maximum Current for 1.8V (x4 mA)"),
), "Maximum Current Capabilities (2.2.27)")

FEAER = Register("FEAER", 0x50, 2, (
    Field("NOTEXEC", 0, 1, WO, "Force Event for Auto CMD12 Not Executed"),
    Field("TOUT", 1, 1, WO, "Force Event for Auto CMD Timeout Error"),
    Field("CRC", 2, 1, WO, "Force Event for Auto CMD CRC Error"),
    Field("END", 3, 1, WO, "Force Event for Auto CMD End Bit Error"),
    Field("IDX", 4, 1, WO, "Force Event for Auto CMD Index Error"),
    Field("NOTISSUED", 7, 1, WO, "Force Event for Command Not Issued By Auto CMD12 Error"),
), "Force Event Register for Auto CMD Error Status (2.2.28)")

FEERR = Register("FEERR", 0x52, 2, _as(_ERRINT_FIELDS, WO),
                 "Force Event Register for Error Interrupt Status (2.2.29)")

ADMAERR = Register("ADMAERR", 0x54, 1, (
    Field("STATE", 0, 2, ROC, "ADMA Error State: 0 ST_STOP, 1 ST_FDS, 3 ST_TFR"),
    Field("LENMISMATCH", 2, 1, ROC, "ADMA Length Mismatch Error"),
), "ADMA Error Status (2.2.30)")

ADMASYSADDR = Register("ADMASYSADDR", 0x58, 8, (
    Field("ADDR", 0, 64, RW, "ADMA System Address (descriptor pointer)"),
), "ADMA System Address (2.2.31)")

SLOT_INT_STATUS = Register("SLOT_INT_STATUS", 0xFC, 2, (
    Field("SLOTINT", 0, 8, RO, "Interrupt Signal For Each Slot"),
), "Slot Interrupt Status (2.2.33)")

HCVER = Register("HCVER", 0xFE, 2, (
    Field("SPECVER", 0, 8, RO, "Specification Version Number: 0 v1.00, 1 v2.00, 2 v3.00"),
    Field("VENDORVER", 8, 8, RO, "Vendor Version Number"),
), "Host Controller Version (2.2.34)")

REGISTERS: tuple[Register, ...] = (
    SDMASYSAD, BLKSIZE, BLKCNT, ARGUMENT, TRNMOD, CMDREG,
    RSPREG0, RSPREG1, RSPREG2, RSPREG3, BDATA, PRNSTS,
    HOSTCTL, PWRCON, BLKGAP, WAKCON, CLKCON, TIMEOUTCON, SWRST,
    NORINTSTS, ERRINTSTS, NORINTSTSEN, ERRINTSTSEN, NORINTSIGEN, ERRINTSIGEN,
    ACMD12ERRSTS, HOSTCTL2, CAPAB, MAXCURR, FEAER, FEERR, ADMAERR, ADMASYSADDR,
    SLOT_INT_STATUS, HCVER,
)

_BY_NAME: dict[str, Register] = {r.name: r for r in REGISTERS}
_BY_BYTE: dict[int, Register] = {
    r.offset + i: r for r in REGISTERS for i in range(r.width)
}


def register(name: str) -> Register:
    """The register called ``name`` (KeyError if none)."""
    return _BY_NAME[name]


def register_at(offset: int) -> Register | None:
    """The register whose bytes include ``offset``, or None for a hole."""
    return _BY_BYTE.get(offset)


def registers_in(offset: int, size: int) -> tuple[Register, ...]:
    """Every register touched by an access of ``size`` bytes at ``offset``."""
    out: list[Register] = []
    for a in range(offset, offset + size):
        r = _BY_BYTE.get(a)
        if r is not None and r not in out:
            out.append(r)
    return tuple(out)


# --------------------------------------------------------------------------
# Constants a driver needs, every one taken from the tables above
# --------------------------------------------------------------------------
#
# A register bit is ``REG.mask("FIELD")``; a multi-bit value is
# ``REG.field("FIELD").value(n)``.  The names below are the short forms the
# driver, the model and the scenarios use.


# TRNMOD (2.2.5)
_ACMDEN: Field = TRNMOD.field("ACMDEN")
TRNMOD_DMA = TRNMOD.mask("DMAEN")
TRNMOD_BLKCNT_EN = TRNMOD.mask("BLKCNTEN")
TRNMOD_ACMD12 = _ACMDEN.value(1)
TRNMOD_ACMD23 = _ACMDEN.value(2)
TRNMOD_READ = TRNMOD.mask("READ")
TRNMOD_MULTI = TRNMOD.mask("MULTI")

# CMDREG (2.2.6): values of the Response Type Select field (RSPTYP)
_RSPTYP: Field = CMDREG.field("RSPTYP")
_CMDTYP: Field = CMDREG.field("CMDTYP")
_CMDIDX: Field = CMDREG.field("CMDIDX")
RSP_NONE = 0
RSP_136 = 1
RSP_48 = 2
RSP_48_BUSY = 3
CMD_CRC_CHECK = CMDREG.mask("CRCCHK")
CMD_INDEX_CHECK = CMDREG.mask("IDXCHK")
CMD_DATA_PRESENT = CMDREG.mask("DATAPRSNT")
# CMDREG command type (CMDTYP)
CMD_TYPE_NORMAL = _CMDTYP.value(0)
CMD_TYPE_SUSPEND = _CMDTYP.value(1)
CMD_TYPE_RESUME = _CMDTYP.value(2)
CMD_TYPE_ABORT = _CMDTYP.value(3)


def cmdreg(index: int, rsp: int = RSP_NONE, *, crc: bool = False, idx: bool = False,
           data: bool = False, cmd_type: int = CMD_TYPE_NORMAL) -> int:
    """The CMDREG value issuing command ``index`` (2.2.6)."""
    v = _CMDIDX.value(index) | _RSPTYP.value(rsp) | cmd_type
    if crc:
        v |= CMD_CRC_CHECK
    if idx:
        v |= CMD_INDEX_CHECK
    if data:
        v |= CMD_DATA_PRESENT
    return v


# PRNSTS bits (2.2.9)
PRNSTS_CMDINHIBIT = PRNSTS.mask("CMDINHIBIT")
PRNSTS_DATINHIBIT = PRNSTS.mask("DATINHIBIT")
PRNSTS_DATLINEACTIVE = PRNSTS.mask("DATLINEACTIVE")
PRNSTS_WRITE_ACTIVE = PRNSTS.mask("WRITE_ACTIVE")
PRNSTS_READ_ACTIVE = PRNSTS.mask("READ_ACTIVE")
PRNSTS_BUFWRRDY = PRNSTS.mask("BUFWRRDY")
PRNSTS_BUFRDRDY = PRNSTS.mask("BUFRDRDY")
PRNSTS_CARDINSERTED = PRNSTS.mask("CARDINSERTED")
PRNSTS_CARDSTABLE = PRNSTS.mask("CARDSTABLE")
PRNSTS_CARDDETECT = PRNSTS.mask("CARDDETECT")
PRNSTS_WRITEPROTECT = PRNSTS.mask("WRITEPROTECT")
#: The line levels PRNSTS reports live: DAT[3:0] and CMD.
PRNSTS_LINE_LEVELS = PRNSTS.mask("DATLVL", "CMDLVL")

# HOSTCTL (2.2.10); DMA Select values
_DMASEL: Field = HOSTCTL.field("DMASEL")
HOSTCTL_LED = HOSTCTL.mask("LEDCTL")
HOSTCTL_WIDTH4 = HOSTCTL.mask("WIDTH4")
HOSTCTL_HISPD = HOSTCTL.mask("HISPD")
HOSTCTL_DMA_MASK = _DMASEL.mask
HOSTCTL_DMA_SDMA = _DMASEL.value(0)
HOSTCTL_DMA_ADMA1 = _DMASEL.value(1)      #: 32-bit ADMA1 (v2 only; reserved since v3)
HOSTCTL_DMA_ADMA2_32 = _DMASEL.value(2)
HOSTCTL_DMA_ADMA2_64 = _DMASEL.value(3)
HOSTCTL_WIDTH8 = HOSTCTL.mask("WIDTH8")
HOSTCTL_CDTEST_LVL = HOSTCTL.mask("CDTESTLVL")
HOSTCTL_CDTEST_EN = HOSTCTL.mask("CDSIGSEL")

# PWRCON (2.2.11); SD Bus Voltage Select values
_BUSVOLT: Field = PWRCON.field("BUSVOLT")
PWRCON_POWER_ON = PWRCON.mask("BUSPWR")
PWRCON_VOLT_33 = _BUSVOLT.value(7)
PWRCON_VOLT_30 = _BUSVOLT.value(6)
PWRCON_VOLT_18 = _BUSVOLT.value(5)

# BLKGAP (2.2.12)
BLKGAP_STOP = BLKGAP.mask("STOPATGAP")
BLKGAP_CONTINUE = BLKGAP.mask("CONTINUE")

# WAKCON (2.2.13)
WAKCON_CARDINT = WAKCON.mask("WKUPCARDINT")
WAKCON_CARDINS = WAKCON.mask("WKUPCARDINS")
WAKCON_CARDREM = WAKCON.mask("WKUPCARDREM")

# CLKCON (2.2.14)
CLKCON_INTCLK_EN = CLKCON.mask("INTCLKEN")
CLKCON_INTCLK_STABLE = CLKCON.mask("INTCLKSTABLE")
CLKCON_SDCLK_EN = CLKCON.mask("SDCLKEN")

#: HOSTCTL2 Host Version 4 Enable (SDHC 4.10, 2.2.24).
HOSTCTL2_V4EN = HOSTCTL2.mask("V4EN")

# SWRST (2.2.16)
SWRST_ALL = SWRST.mask("RSTALL")
SWRST_CMD = SWRST.mask("RSTCMD")
SWRST_DAT = SWRST.mask("RSTDAT")

# NORINTSTS bits (2.2.17)
NIS_CMDCMPL = NORINTSTS.mask("CMDCMPL")
NIS_TRNSCMPL = NORINTSTS.mask("TRNSCMPL")
NIS_BLKGAP = NORINTSTS.mask("BLKGAP")
NIS_DMAINT = NORINTSTS.mask("DMAINT")
NIS_WBUFRDY = NORINTSTS.mask("WBUFRDY")
NIS_RBUFRDY = NORINTSTS.mask("RBUFRDY")
NIS_CARDINS = NORINTSTS.mask("CARDINS")
NIS_CARDREM = NORINTSTS.mask("CARDREM")
NIS_CARDINT = NORINTSTS.mask("CARDINT")
NIS_ERRINT = NORINTSTS.mask("ERRINT")

# ERRINTSTS bits (2.2.18)
EIS_CMDTOUT = ERRINTSTS.mask("CMDTOUT")
EIS_CMDCRC = ERRINTSTS.mask("CMDCRC")
EIS_CMDEND = ERRINTSTS.mask("CMDEND")
EIS_CMDIDX = ERRINTSTS.mask("CMDIDX")
EIS_DATTOUT = ERRINTSTS.mask("DATTOUT")
EIS_DATCRC = ERRINTSTS.mask("DATCRC")
EIS_DATEND = ERRINTSTS.mask("DATEND")
EIS_CURLIM = ERRINTSTS.mask("CURLIM")
EIS_ACMDERR = ERRINTSTS.mask("ACMDERR")
EIS_ADMAERR = ERRINTSTS.mask("ADMAERR")

# ADMAERR (2.2.30); ADMA Error State values
_ADMA_STATE: Field = ADMAERR.field("STATE")
ADMAERR_STATE_MASK = _ADMA_STATE.mask
ADMAERR_ST_STOP = _ADMA_STATE.value(0)
ADMAERR_ST_FDS = _ADMA_STATE.value(1)
ADMAERR_ST_TFR = _ADMA_STATE.value(3)
ADMAERR_LENMISMATCH = ADMAERR.mask("LENMISMATCH")

# ADMA descriptor attribute bits (1.13.3 / 1.13.4): guest memory, not a register
ADMA_VALID = 0x01
ADMA_END = 0x02
ADMA_INT = 0x04
ADMA_ACT_MASK = 0x30
ADMA_ACT_NOP = 0x00
ADMA_ACT_RSV = 0x10           #: ADMA2 reserved (acts as nop); ADMA1 "set length"
ADMA_ACT_SET = 0x10           #: ADMA1 set data length
ADMA_ACT_TRAN = 0x20
ADMA_ACT_LINK = 0x30

#: Bytes per descriptor: ADMA1, ADMA2 32-bit, ADMA2 64-bit (96-bit descriptors).
ADMA1_DESC_SIZE = 4
ADMA2_32_DESC_SIZE = 8
ADMA2_64_DESC_SIZE = 12


def adma2_desc32(addr: int, length: int, attr: int) -> bytes:
    """A 64-bit ADMA2 descriptor for a 32-bit address (1.13.4); ``length`` 0
    means 65536 bytes."""
    return struct.pack("<HHI", attr & 0xFFFF, length & 0xFFFF, addr & 0xFFFFFFFF)


def adma2_desc64(addr: int, length: int, attr: int) -> bytes:
    """A 96-bit ADMA2 descriptor for a 64-bit address (1.13.4)."""
    return struct.pack("<HHQ", attr & 0xFFFF, length & 0xFFFF, addr & 0xFFFFFFFFFFFFFFFF)


def adma1_desc(addr_or_length: int, attr: int) -> bytes:
    """A 32-bit ADMA1 descriptor: bits 31:12 carry the 4 KiB aligned address
    (tran/link) or, for ``ADMA_ACT_SET``, the data length."""
    if (attr & ADMA_ACT_MASK) == ADMA_ACT_SET:
        word = ((addr_or_length & 0xFFFF) << 12) | (attr & 0x3F)
    else:
        word = (addr_or_length & 0xFFFFF000) | (attr & 0x3F)
    return struct.pack("<I", word & 0xFFFFFFFF)


# BLKSIZE (2.2.2)
_SDMABUFBND: Field = BLKSIZE.field("SDMABUFBND")
BLKSIZE_SIZE_MASK = BLKSIZE.mask("BLKSIZE")
BLKSIZE_BOUNDARY_SHIFT = _SDMABUFBND.lsb


def blksize_value(block_size: int, boundary: int = 4096) -> int:
    """BLKSIZE for ``block_size`` bytes and an SDMA buffer boundary of
    ``boundary`` bytes (4 KiB .. 512 KiB, a power of two)."""
    code = max(0, boundary.bit_length() - 13)
    if 4096 << code != boundary or code > 7:
        raise ValueError(f"bad SDMA buffer boundary {boundary}")
    return _SDMABUFBND.value(code) | (block_size & BLKSIZE_SIZE_MASK)


def sdma_boundary(blksize: int) -> int:
    """SDMA buffer boundary in bytes encoded in a BLKSIZE value."""
    return 4096 << _SDMABUFBND.get(blksize)


# --------------------------------------------------------------------------
# Reset values (QEMU sdhci-pci on q35, measured on 7.2, 10.0 and 11.1)
# --------------------------------------------------------------------------

#: sdhci's default ``capareg`` property: 52 MHz timeout and base clocks,
#: 512-byte buffer, ADMA2, ADMA1, high speed, SDMA, 3.3V and 1.8V.
CAPAREG_DEFAULT = 0x057834B4
#: sdhci's default ``maxcurr`` property.
MAXCURR_DEFAULT = 0
#: sdhci-pci's default ``sd-spec-version`` property.
SD_SPEC_VERSION_DEFAULT = 2
#: Vendor version QEMU reports in HCVER[15:8].
HCVER_VENDOR = 0x24
#: sdhci's ``vendor`` property value for Freescale (QEMU ``SDHCI_VENDOR_FSL``, up
#: to 10.2; hw/ppc/e500.c sets it), and the interrupt status enables its reset
#: leaves from 10.0 (0x013f, 0x117f: the eSDHC's IRQSTATEN reset value).
VENDOR_FSL = 2
FSL_RESET_NORINTSTSEN = NORINTSTSEN.mask("CMDCMPL", "TRNSCMPL", "BLKGAP", "DMAINT", "WBUFRDY",
                                         "RBUFRDY", "CARDINT")
FSL_RESET_ERRINTSTSEN = ERRINTSTSEN.mask("CMDTOUT", "CMDCRC", "CMDEND", "CMDIDX", "DATTOUT",
                                         "DATCRC", "DATEND", "ACMDERR") \
    | ERRINTSTSEN.field("VENDORERR").put(0, 1)

#: PRNSTS with a card inserted and writable: inserted, stable, detect, write
#: enabled, DAT[3:0] and CMD lines high.
PRNSTS_CARD_PRESENT = (PRNSTS_CARDINSERTED | PRNSTS_CARDSTABLE | PRNSTS_CARDDETECT
                       | PRNSTS_WRITEPROTECT | PRNSTS_LINE_LEVELS)
#: PRNSTS with no card: stable and write-protect pin high, lines high.
PRNSTS_NO_CARD = PRNSTS_CARDSTABLE | PRNSTS_WRITEPROTECT | PRNSTS_LINE_LEVELS


def hcver(sd_spec_version: int = SD_SPEC_VERSION_DEFAULT) -> int:
    """HCVER for ``sd-spec-version`` 2 (spec 2.00) or 3 (spec 3.00)."""
    if sd_spec_version not in (2, 3):
        raise ValueError("only sd-spec-version 2 and 3 exist")
    return HCVER.field("VENDORVER").value(HCVER_VENDOR) | HCVER.field("SPECVER").value(
        sd_spec_version - 1)


def reset_values(sd_spec_version: int = SD_SPEC_VERSION_DEFAULT,
                 capareg: int = CAPAREG_DEFAULT, maxcurr: int = MAXCURR_DEFAULT, *,
                 card_inserted: bool = True, readonly: bool = False) -> dict[str, int]:
    """Register name -> value after power-on reset, as a guest reads it.

    Every register not named reads 0.  PRNSTS includes the line levels;
    WRITEPROTECT reads 1 unless the card (inserted or not) reports itself
    read-only (2.2.9).
    """
    values = {r.name: 0 for r in REGISTERS}
    prn = PRNSTS_CARD_PRESENT if card_inserted else PRNSTS_NO_CARD
    if readonly:
        prn &= ~PRNSTS_WRITEPROTECT
    values["PRNSTS"] = prn
    values["CAPAB"] = capareg & 0xFFFFFFFFFFFFFFFF
    values["MAXCURR"] = maxcurr & 0xFFFFFFFFFFFFFFFF
    values["HCVER"] = hcver(sd_spec_version)
    return values
