"""SiFive's SPI controller itself (sifive_u's SPI2): two scenarios of the ``spi`` group.

Run on the boards whose SSI controller is SiFive's only (``params`` ``variant``
``sifive-spi``: ``sdqtest check --board sifive_u``), beside the group's card
scenarios, which run there through :class:`harness.driver.sifive_spi.SifiveSpiPort`.
Facts the FU540-C000 Manual ("Serial Peripheral Interface") states whatever
the QEMU release are noted with :meth:`Context.expect`; where QEMU departs
the model says how (ledger ``sifive-spi.*``).
"""

from __future__ import annotations

from harness.driver.spi import SpiHost
from harness.hwdefs import sd_spi as T
from harness.hwdefs import sifive_spi as S
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "spi"
_PARAMS = {"variant": "sifive-spi"}
_EMPTY = S.RXDATA.field("empty").mask
_RXWM, _TXWM = S.IP.mask("rxwm"), S.IP.mask("txwm")
#: Every register and reserved offset, and a few past the last register.
_OFFSETS = (*range(0, S.IP.offset + 4, 4), 0x78, 0x7C, 0x100, S.WINDOW - 4)
#: Writes QEMU refuses (ledger sifive-spi.*): a chip select, mode or watermark
#: out of range, the read-only registers, the flash interface, reserved offsets.
_REFUSED = ((S.CSID, 1), (S.CSDEF, 2), (S.CSMODE, 4), (S.TXMARK, 8), (S.RXMARK, 8),
            (S.RXDATA, 0x5A), (S.IP, 3), (S.FCTRL, 1), (S.FFMT, 0x0301_0007))


def _read_all(t: Target) -> list[int]:
    return [t.read(off, 4) for off in _OFFSETS]


@scenario("spi-sifive-registers", GROUP, params=_PARAMS)
def spi_sifive_registers(t: Target, ctx: Context) -> None:
    """Reset values, every register written and read back, refused writes,
    reserved offsets, 8/16/64-bit accesses (QEMU takes 32-bit ones only)."""
    regs = dict(zip(_OFFSETS, _read_all(t), strict=True))
    ctx.expect(S.SCKDIV.field("div").get(regs[S.SCKDIV.offset]) == 3,
               "sckdiv.div does not reset to 3 (FU540-C000 Manual, sckdiv)")
    ctx.expect(regs[S.CSDEF.offset] & 1 == 1, "csdef bit 0 does not reset to 1 (inactive high)")
    ctx.expect(regs[S.RXDATA.offset] == _EMPTY, "rxdata after reset: not empty")
    for reg in (S.SCKDIV, S.SCKMODE, S.DELAY0, S.DELAY1, S.FMT, S.IE):
        t.write(reg.offset, 4, 0xFFFF_FFFF)
        t.read(reg.offset, 4)
        t.write(reg.offset, 4, 0)
    for reg, value in _REFUSED:
        t.write(reg.offset, 4, value)
        t.read(reg.offset, 4)
    for off in S.RESERVED + (0x78, 0x200):
        t.write(off, 4, 0xA5A5_A5A5)
    _read_all(t)
    for size in (1, 2):
        t.write(S.SCKDIV.offset, size, 0x55)
        t.read(S.SCKDIV.offset, size)
        t.read(S.SCKDIV.offset + size, size)
    t.read(S.SCKDIV.offset, 8)
    t.write(S.DELAY0.offset, 8, 0x0000_0007_0002_0003)
    for reg, value in ((S.TXMARK, 7), (S.RXMARK, 7), (S.CSMODE, 1), (S.CSMODE, 3),
                       (S.CSMODE, 0), (S.CSDEF, 0), (S.CSDEF, 1), (S.CSID, 0)):
        t.write(reg.offset, 4, value)
        t.read(reg.offset, 4)
    t.read(S.DELAY0.offset, 4)
    t.read(S.DELAY1.offset, 4)


def _cmd0(h: SpiHost) -> list[int]:
    """CMD0 and three fillers: the bytes that came back."""
    return h.xfer_all(T.command_frame(0, 0) + b"\xff\xff\xff")


@scenario("spi-sifive-fifo", GROUP, params=_PARAMS)
def spi_sifive_fifo(t: Target, ctx: Context) -> None:
    """The 8-entry receive FIFO (filled, overfilled, drained), the watermark
    interrupts, ``fmt.dir`` (transmit only), and the chip select modes with
    ``csdef`` bit 0 clear and set."""
    h = SpiHost(t)
    h.setup()
    t.write(S.RXMARK.offset, 4, 3)
    t.write(S.IE.offset, 4, S.IE.mask("rxwm"))
    for i in range(10):  # AUTO mode: QEMU keeps the card deselected (sifive-spi.cs-mode-level)
        t.write(S.TXDATA.offset, 4, 0x30 + i)
        t.read(S.IP.offset, 4)
    got = [t.read(S.RXDATA.offset, 4) for _ in range(10)]
    ctx.expect(got[9] == _EMPTY, "rxdata: not empty after more reads than the FIFO holds")
    t.write(S.IE.offset, 4, S.IE.mask("txwm"))
    for mark in (0, 1, 7, 0):
        t.write(S.TXMARK.offset, 4, mark)
        t.read(S.IP.offset, 4)
    t.write(S.IE.offset, 4, 0)
    t.write(S.FMT.offset, 4, S.FMT.field("len").value(8) | S.FMT.mask("dir"))
    h.select()
    h.fill(4)  # transmit only: nothing received
    ctx.expect(t.read(S.RXDATA.offset, 4) == _EMPTY,
               "fmt.dir set (Tx): a byte reached the receive FIFO")
    t.write(S.FMT.offset, 4, S.FMT.field("len").value(8))
    h.deselect()
    t.write(S.CSDEF.offset, 4, 0)  # the line keeps its level (sifive-spi.cs-mode-level)
    h.select()
    _cmd0(h)
    t.write(S.CSDEF.offset, 4, 1)
    t.write(S.CSMODE.offset, 4, S.CSMODE_OFF)
    _cmd0(h)
    t.write(S.CSID.offset, 4, 0)
    h.deselect()
    _cmd0(h)
    h.select()
    h.command(0)
    h.command(13, rlen=T.R2_LEN)
