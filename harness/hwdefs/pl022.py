"""The ARM PrimeCell SSP (PL022) and the PL061 GPIO registers an SPI driver uses, as data.

Names and fields are those of the *ARM PrimeCell Synchronous Serial Port
(PL022) Technical Reference Manual* (DDI 0194, chapter 3 "Programmers
Model") and the *PrimeCell GPIO (PL061) TRM* (DDI 0190, chapter 3).

The SPI board (:data:`harness.hwdefs.boards.BOARDS` ``lm3s6965evb``) drives
its SD card through two devices: the card's active-low chip select is GPIO
port D pin 0 and the card sits on the SSP's bus (``hw/arm/stellaris.c``:
``pl061_luminary`` port D at 0x40007000, ``pl022`` at 0x40008000).  A Target
of that board sees one window from GPIO D's base (:data:`GPIO_WINDOW` at
offset 0, :data:`SSP_WINDOW` at offset 0x1000); the offsets below are those
inside each device, :func:`ssp` and :func:`gpio` place them in the window.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["CS_PIN", "GPIODATA", "GPIODIR", "GPIO_WINDOW", "SSPCPSR", "SSPCR0", "SSPCR1",
           "SSPDMACR", "SSPDR", "SSPICR", "SSPIMSC", "SSPMIS", "SSPRIS", "SSPSR",
           "SSP_FIFO_DEPTH", "SSP_ID_BYTES", "SSP_ID_REGISTERS", "SSP_PERIPH_ID",
           "SSP_REGISTERS", "SSP_WINDOW", "gpio", "ssp"]

RO, RW, WO = Access.RO, Access.RW, Access.WO

#: Window offsets of the two devices (GPIO port D first: the board base).
GPIO_WINDOW = range(0x0000, 0x1000)
SSP_WINDOW = range(0x1000, 0x2000)
#: PL022 TRM 2.3: the transmit and receive FIFOs are 8 entries deep.
SSP_FIFO_DEPTH = 8
#: GPIO port D pin driving the card's chip select (stellaris.c ``gpio_out[GPIO_D][0]``).
CS_PIN = 0


def ssp(reg: Register) -> int:
    """Window offset of SSP register ``reg``."""
    return SSP_WINDOW.start + reg.offset


def gpio(reg: Register) -> int:
    """Window offset of GPIO register ``reg``."""
    return GPIO_WINDOW.start + reg.offset


SSPCR0 = Register("SSPCR0", 0x000, 2, (
    Field("DSS", 0, 4, RW, "Data size select: frame of DSS+1 bits (3..15)"),
    Field("FRF", 4, 2, RW, "Frame format: 0 Motorola SPI, 1 TI, 2 National Microwire"),
    Field("SPO", 6, 1, RW, "SSPCLKOUT polarity (Motorola SPI)"),
    Field("SPH", 7, 1, RW, "SSPCLKOUT phase (Motorola SPI)"),
    Field("SCR", 8, 8, RW, "Serial clock rate"),
), "Control register 0")
SSPCR1 = Register("SSPCR1", 0x004, 1, (
    Field("LBM", 0, 1, RW, "Loop back mode: the shift register output feeds its input"),
    Field("SSE", 1, 1, RW, "Synchronous serial port enable"),
    Field("MS", 2, 1, RW, "Master (0) or slave (1)"),
    Field("SOD", 3, 1, RW, "Slave-mode output disable"),
), "Control register 1")
SSPDR = Register("SSPDR", 0x008, 2, (
    Field("DATA", 0, 16, RW, "Write: into the transmit FIFO; read: from the receive FIFO"),
), "Data register")
SSPSR = Register("SSPSR", 0x00C, 1, (
    Field("TFE", 0, 1, RO, "Transmit FIFO empty"),
    Field("TNF", 1, 1, RO, "Transmit FIFO not full"),
    Field("RNE", 2, 1, RO, "Receive FIFO not empty"),
    Field("RFF", 3, 1, RO, "Receive FIFO full"),
    Field("BSY", 4, 1, RO, "Busy: transmitting or receiving a frame, or TX FIFO not empty"),
), "Status register")
SSPCPSR = Register("SSPCPSR", 0x010, 1, (
    Field("CPSDVSR", 0, 8, RW, "Clock prescale divisor (even, 2..254)"),
), "Clock prescale register")
_INTS = (
    ("ROR", "Receive overrun"), ("RT", "Receive timeout"),
    ("RX", "Receive FIFO half full or more"), ("TX", "Transmit FIFO half empty or less"),
)
SSPIMSC = Register("SSPIMSC", 0x014, 1, tuple(
    Field(f"{n}IM", i, 1, RW, f"{d} interrupt mask (1: enabled)")
    for i, (n, d) in enumerate(_INTS)), "Interrupt mask set or clear register")
SSPRIS = Register("SSPRIS", 0x018, 1, tuple(
    Field(f"{n}RIS", i, 1, RO, f"{d}, raw") for i, (n, d) in enumerate(_INTS)),
    "Raw interrupt status register")
SSPMIS = Register("SSPMIS", 0x01C, 1, tuple(
    Field(f"{n}MIS", i, 1, RO, f"{d}, masked") for i, (n, d) in enumerate(_INTS)),
    "Masked interrupt status register")
SSPICR = Register("SSPICR", 0x020, 1, (
    Field("RORIC", 0, 1, WO, "Clear the receive overrun interrupt"),
    Field("RTIC", 1, 1, WO, "Clear the receive timeout interrupt"),
), "Interrupt clear register")
SSPDMACR = Register("SSPDMACR", 0x024, 1, (
    Field("RXDMAE", 0, 1, RW, "Receive DMA enable"),
    Field("TXDMAE", 1, 1, RW, "Transmit DMA enable"),
), "DMA control register")
#: SSPPeriphID0..3 and SSPPCellID0..3 at 0xFE0..0xFFC, one byte each (TRM 3.3.10-11).
SSP_PERIPH_ID = 0xFE0
SSP_ID_BYTES = (0x22, 0x10, 0x04, 0x00, 0x0D, 0xF0, 0x05, 0xB1)
#: The eight identification registers, one byte each in a word (TRM 3.3.10-11).
SSP_ID_REGISTERS: tuple[Register, ...] = tuple(
    Register(f"SSP{kind}ID{i}", SSP_PERIPH_ID + 4 * (4 * (kind == "PCell") + i), 1, (
        Field(f"{kind}ID{i}", 0, 8, RO, f"{kind} identification byte {i}"),),
        f"{kind} identification register {i} (TRM 3.3.{10 + (kind == 'PCell')})")
    for kind in ("Periph", "PCell") for i in range(4))
#: Every SSP register but the identification ones, in offset order.
SSP_REGISTERS: tuple[Register, ...] = (SSPCR0, SSPCR1, SSPDR, SSPSR, SSPCPSR, SSPIMSC, SSPRIS,
                                       SSPMIS, SSPICR, SSPDMACR)

#: PL061 TRM 3.3.1: GPIODATA is 256 words at 0x000..0x3FC; address bits [9:2]
#: mask which pins an access reads or writes (0x3FC: all eight).
GPIODATA = Register("GPIODATA", 0x3FC, 1, tuple(
    Field(f"PIN{i}", i, 1, RW, f"Pin {i}") for i in range(8)), "Data register (all pins)")
GPIODIR = Register("GPIODIR", 0x400, 1, tuple(
    Field(f"DIR{i}", i, 1, RW, f"Pin {i}: 1 output") for i in range(8)), "Direction register")
