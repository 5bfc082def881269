"""The ARM PrimeCell MultiMedia Card Interface (PL180/PL181) registers, as data.

Names, offsets and fields are those of the *ARM PrimeCell MultiMedia Card
Interface (PL180) Technical Reference Manual* (ARM DDI 0172), chapter 3
"Programmer's Model" (3.2 summary, 3.3 register descriptions); the Linux
driver (``drivers/mmc/host/mmci.h``) names them the same way (``MMCIPOWER``,
``MCI_CMDRESPEND`` ...).

The board (:data:`harness.hwdefs.boards.BOARDS` ``vexpress-a9``) puts the
MMCI at 0x10005000 and its card-detect and write-protect signals on the
Versatile Express system registers at 0x10000000 (``SYS_MCI``, 0x48: the
*Motherboard Express uATX TRM* (ARM DUI 0447) 4.3 "System register
descriptions"; QEMU ``hw/misc/arm_sysctl.c``).  A Target of that board sees
one window from the system registers' base: :data:`SYSREG_WINDOW` at offset
0, :data:`MMCI_WINDOW` at 0x5000; :func:`mmci` and :func:`sysreg` place a
register's own offset in it.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = [
    "CLEARABLE", "FIFO_DEPTH", "FIFO_END", "FIFO_START", "ID_BYTES", "MCIARGUMENT",
    "MCICLEAR", "MCICLOCK", "MCICOMMAND", "MCIDATACNT", "MCIDATACTRL", "MCIDATALENGTH",
    "MCIDATATIMER", "MCIFIFOCNT", "MCIMASK0", "MCIMASK1", "MCIPOWER", "MCIRESPCMD",
    "MCIFIFO", "MCIRESPONSE", "MCISELECT", "MCISTATUS", "MMCI_REGISTERS", "MMCI_WINDOW",
    "PERIPH_ID", "PERIPH_ID_REGISTERS", "RX_FIFO_BITS", "SYSREG_WINDOW", "SYS_ID", "SYS_MCI",
    "TX_FIFO_BITS", "mmci", "sysreg",
]

RO, RW, WO = Access.RO, Access.RW, Access.WO

#: Window offsets of the two devices (the system registers first: the board base).
SYSREG_WINDOW = range(0x0000, 0x1000)
MMCI_WINDOW = range(0x5000, 0x6000)
#: TRM chapter 2, "Data FIFO": 16 words of 32 bits, one FIFO for both directions.
FIFO_DEPTH = 16
#: TRM 3.3.16: MCIFIFO answers at every word of 0x080..0x0BC.
FIFO_START, FIFO_END = 0x080, 0x0C0


def mmci(reg: Register | int) -> int:
    """Window offset of MMCI register ``reg`` (or of an MMCI offset)."""
    return MMCI_WINDOW.start + (reg if isinstance(reg, int) else reg.offset)


def sysreg(reg: Register) -> int:
    """Window offset of system register ``reg``."""
    return SYSREG_WINDOW.start + reg.offset


MCIPOWER = Register("MCIPower", 0x000, 1, (
    Field("Ctrl", 0, 2, RW, "00 power-off, 10 power-up, 11 power-on"),
    Field("Voltage", 2, 4, RW, "Output voltage"),
    Field("OpenDrain", 6, 1, RW, "MCICMD output control"),
    Field("Rod", 7, 1, RW, "Rod control"),
), "Power control register (TRM 3.3.1)")
MCICLOCK = Register("MCIClock", 0x004, 2, (
    Field("ClkDiv", 0, 8, RW, "MCICLK = MCLK / (2 x (ClkDiv + 1))"),
    Field("Enable", 8, 1, RW, "Enable MCICLK"),
    Field("PwrSave", 9, 1, RW, "Disable MCICLK while the bus is idle"),
    Field("Bypass", 10, 1, RW, "MCLK drives MCICLK directly"),
    Field("WideBus", 11, 1, RW, "4-bit bus (Linux MCI_4BIT_BUS)"),
), "Clock control register (TRM 3.3.2)")
MCIARGUMENT = Register("MCIArgument", 0x008, 4, (
    Field("CmdArg", 0, 32, RW, "Command argument"),
), "Argument register (TRM 3.3.3)")
MCICOMMAND = Register("MCICommand", 0x00C, 2, (
    Field("CmdIndex", 0, 6, RW, "Command index"),
    Field("Response", 6, 1, RW, "Wait for a response"),
    Field("LongRsp", 7, 1, RW, "136-bit response"),
    Field("Interrupt", 8, 1, RW, "Disable the command timer, wait for an interrupt request"),
    Field("Pending", 9, 1, RW, "Wait for CmdPend before sending"),
    Field("Enable", 10, 1, RW, "Command path state machine enabled"),
), "Command register (TRM 3.3.4)")
MCIRESPCMD = Register("MCIRespCmd", 0x010, 1, (
    Field("RespCmd", 0, 6, RO, "Command index of the last response received"),
), "Command response register (TRM 3.3.5)")
#: MCIResponse0..3 (TRM 3.3.6): a short response's card status in Response0; a
#: long response's bits [127:96] in Response0 .. [31:1] in Response3 (bit 0 0).
MCIRESPONSE = tuple(Register(f"MCIResponse{i}", 0x014 + 4 * i, 4, (
    Field("Status", 0, 32, RO, "Card status / response bits"),
), f"Response register {i} (TRM 3.3.6)") for i in range(4))
MCIDATATIMER = Register("MCIDataTimer", 0x024, 4, (
    Field("DataTime", 0, 32, RW, "Data timeout period, in card bus clocks"),
), "Data timer register (TRM 3.3.7)")
MCIDATALENGTH = Register("MCIDataLength", 0x028, 2, (
    Field("DataLength", 0, 16, RW, "Number of data bytes to transfer"),
), "Data length register (TRM 3.3.8)")
MCIDATACTRL = Register("MCIDataCtrl", 0x02C, 1, (
    Field("Enable", 0, 1, RW, "Data transfer enabled"),
    Field("Direction", 1, 1, RW, "0 controller to card, 1 card to controller"),
    Field("Mode", 2, 1, RW, "0 block transfer, 1 stream"),
    Field("DMAEnable", 3, 1, RW, "DMA enabled"),
    Field("BlockSize", 4, 4, RW, "Block length 2^BlockSize bytes"),
), "Data control register (TRM 3.3.9)")
MCIDATACNT = Register("MCIDataCnt", 0x030, 2, (
    Field("DataCount", 0, 16, RO, "Data bytes still to transfer"),
), "Data counter register (TRM 3.3.10)")
_STATUS = (
    ("CmdCrcFail", "Command response received, CRC check failed"),
    ("DataCrcFail", "Data block sent/received, CRC check failed"),
    ("CmdTimeOut", "Command response timeout"),
    ("DataTimeOut", "Data timeout"),
    ("TxUnderrun", "Transmit FIFO underrun"),
    ("RxOverrun", "Receive FIFO overrun"),
    ("CmdRespEnd", "Command response received, CRC check passed"),
    ("CmdSent", "Command sent (no response required)"),
    ("DataEnd", "Data end (data counter is zero)"),
    ("StartBitErr", "Start bit not detected on all data signals in wide bus mode"),
    ("DataBlockEnd", "Data block sent/received, CRC check passed"),
    ("CmdActive", "Command transfer in progress"),
    ("TxActive", "Data transmit in progress"),
    ("RxActive", "Data receive in progress"),
    ("TxFifoHalfEmpty", "Transmit FIFO half empty"),
    ("RxFifoHalfFull", "Receive FIFO half full"),
    ("TxFifoFull", "Transmit FIFO full"),
    ("RxFifoFull", "Receive FIFO full"),
    ("TxFifoEmpty", "Transmit FIFO empty"),
    ("RxFifoEmpty", "Receive FIFO empty"),
    ("TxDataAvlbl", "Data available in transmit FIFO"),
    ("RxDataAvlbl", "Data available in receive FIFO"),
)
MCISTATUS = Register("MCIStatus", 0x034, 4, tuple(
    Field(n, i, 1, RO, d) for i, (n, d) in enumerate(_STATUS)), "Status register (TRM 3.3.11)")
#: The static flags MCIClear clears (TRM 3.3.12): bits 0..10 of MCIStatus.
CLEARABLE = tuple(n for n, _d in _STATUS[:11])
MCICLEAR = Register("MCIClear", 0x038, 2, tuple(
    Field(f"{n}Clr", i, 1, WO, f"Clear {n}") for i, n in enumerate(CLEARABLE)),
    "Clear register (TRM 3.3.12)")
MCIMASK0 = Register("MCIMask0", 0x03C, 4, tuple(
    Field(f"{n}Mask", i, 1, RW, f"{n} raises MCIINTR0") for i, (n, _d) in enumerate(_STATUS)),
    "Interrupt mask register 0 (TRM 3.3.13)")
MCIMASK1 = Register("MCIMask1", 0x040, 4, tuple(
    Field(f"{n}Mask", i, 1, RW, f"{n} raises MCIINTR1") for i, (n, _d) in enumerate(_STATUS)),
    "Interrupt mask register 1 (TRM 3.3.13)")
MCISELECT = Register("MCISelect", 0x044, 1, (
    Field("SDCard", 0, 4, RW, "Card select (multimedia card stack)"),
), "Secure digital memory card select register (TRM 3.3.14)")
MCIFIFOCNT = Register("MCIFifoCnt", 0x048, 2, (
    Field("DataCount", 0, 15, RO, "Words still to be written to or read from the FIFO"),
), "FIFO counter register (TRM 3.3.15)")
#: MCIPeriphID0..3 and MCIPCellID0..3 at 0xFE0..0xFFC, one byte each (TRM 3.3.17-18):
#: part number 0x181, designer 0x41 (ARM), revision 0; the PrimeCell ID 0xB105F00D.
PERIPH_ID = 0xFE0
ID_BYTES = (0x81, 0x11, 0x04, 0x00, 0x0D, 0xF0, 0x05, 0xB1)
#: The eight identification registers, one byte each in a word (TRM 3.3.17-18).
PERIPH_ID_REGISTERS: tuple[Register, ...] = tuple(
    Register(f"MCI{kind}ID{i}", PERIPH_ID + 4 * (4 * (kind == "PCell") + i), 1, (
        Field(f"{kind}ID{i}", 0, 8, RO, f"{kind} identification byte {i}"),),
        f"{kind} identification register {i} (TRM 3.3.{17 + (kind == 'PCell')})")
    for kind in ("Periph", "PCell") for i in range(4))
#: TRM 3.3.16: the data FIFO, one 32-bit word, at every word of FIFO_START..FIFO_END.
MCIFIFO = Register("MCIFIFO", FIFO_START, 4, (
    Field("Data", 0, 32, RW, "Read: from the FIFO; write: into the FIFO"),
), "Data FIFO register (TRM 3.3.16)")

#: The MCIStatus bits that follow the FIFO while the data path sends
#: (TX) or receives (RX) (TRM 3.3.11).
TX_FIFO_BITS = MCISTATUS.mask("TxActive", "TxFifoHalfEmpty", "TxFifoFull", "TxFifoEmpty",
                              "TxDataAvlbl")
RX_FIFO_BITS = MCISTATUS.mask("RxActive", "RxFifoHalfFull", "RxFifoFull", "RxFifoEmpty",
                              "RxDataAvlbl")

#: Every MMCI register by offset (the FIFO aside), for reports.
MMCI_REGISTERS: tuple[Register, ...] = (
    MCIPOWER, MCICLOCK, MCIARGUMENT, MCICOMMAND, MCIRESPCMD, *MCIRESPONSE, MCIDATATIMER,
    MCIDATALENGTH, MCIDATACTRL, MCIDATACNT, MCISTATUS, MCICLEAR, MCIMASK0, MCIMASK1,
    MCISELECT, MCIFIFOCNT)

#: Versatile Express system registers (Motherboard Express uATX TRM 4.3):
#: SYS_ID, and SYS_MCI whose bit 0 is the card-detect and bit 1 the
#: write-protect signal of the MMCI socket.
SYS_ID = Register("SYS_ID", 0x000, 4, (
    Field("REV", 28, 4, RO, "Board revision"),
    Field("HBI", 16, 12, RO, "HBI board number"),
    Field("BUILD", 12, 4, RO, "Build variant"),
    Field("ARCH", 8, 4, RO, "Bus architecture"),
    Field("FPGA", 0, 8, RO, "FPGA build"),
), "System identification register")
SYS_MCI = Register("SYS_MCI", 0x048, 4, (
    Field("CARDIN", 0, 1, RO, "A card is in the MMC socket"),
    Field("WPROT", 1, 1, RO, "The card's write-protect switch is on"),
), "MCI status register")
