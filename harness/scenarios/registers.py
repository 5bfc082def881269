"""Register file: reset values, read/write masks, W1C, access sizes.

SD Host Controller Simplified Specification 2.2: every register's reset
value, which bits software can set, which clear on writing 1.  Each check is
a plain register poke; the lockstep target compares every answer.
"""

from __future__ import annotations

from harness.hwdefs import sdhci as H
from harness.scenarios.registry import Context, has_property, scenario
from harness.target import Target

#: Registers whose writes start or stop something; poked separately.
_ACTIVE = {"CMDREG", "BDATA", "SWRST", "FEAER", "FEERR", "NORINTSTS", "ERRINTSTS"}


def _dump(t: Target) -> None:
    for reg in H.REGISTERS:
        if reg.name == "BDATA":
            continue
        for off in range(reg.offset, reg.offset + reg.width, 4):
            t.read(off, min(4, reg.width))


for _v in (2, 3):

    @scenario(f"reset-values-v{_v}", "registers", sdhci={"sd-spec-version": _v},
              variant=f"on a version {_v}.00 controller (sd-spec-version {_v})")
    def _reset_values(t: Target, ctx: Context) -> None:
        """Every register after power-on and after SWRST_ALL."""
        _dump(t)
        t.write(H.SWRST.offset, 1, H.SWRST_ALL)
        _dump(t)

    @scenario(f"register-masks-v{_v}", "registers", sdhci={"sd-spec-version": _v},
              variant=f"on a version {_v}.00 controller (sd-spec-version {_v})")
    def _masks(t: Target, ctx: Context) -> None:
        """Write all-ones then zeros to each passive register; read back."""
        for reg in H.REGISTERS:
            if reg.name in _ACTIVE:
                continue
            for off in range(reg.offset, reg.offset + reg.width, 4):
                size = min(4, reg.width)
                t.write(off, size, (1 << (8 * size)) - 1)
                t.read(off, size)
                t.write(off, size, 0)
                t.read(off, size)
            t.write(H.SWRST.offset, 1, H.SWRST_ALL)


@scenario("vendor-fsl-reset-enables", "registers", sdhci={"vendor": 2},
          requires=(has_property("sdhci-pci", "vendor"),))
def _vendor_fsl(t: Target, ctx: Context) -> None:
    """The vendor property at 2, Freescale's (as QEMU's e500 boards set it):
    every register after power-on, after an enable is changed and after
    SWRST_ALL.  From QEMU 10.0 a reset leaves Normal and Error Interrupt
    Status Enable at 0x013f and 0x117f (the eSDHC's IRQSTATEN), before it at
    0 (ledger boundary sdhci.vendor-fsl-reset); from 11.0 the property is
    gone (sdhci.vendor-property-removed) and the scenario does not run."""
    _dump(t)
    t.write(H.NORINTSTSEN.offset, 2, 0)
    _dump(t)
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    _dump(t)


@scenario("w1c-interrupt-status", "registers")
def _w1c(t: Target, ctx: Context) -> None:
    """Force every error event (FEERR), then clear ERRINTSTS bit by bit with
    W1C; writing 0 clears nothing (2.2.18, 2.2.31)."""
    t.write(H.ERRINTSTSEN.offset, 2, 0xFFFF)
    t.write(H.NORINTSTSEN.offset, 2, 0xFFFF)
    t.write(H.FEERR.offset, 2, 0xFFFF)
    t.read(H.ERRINTSTS.offset, 2)
    t.read(H.NORINTSTS.offset, 2)
    t.write(H.ERRINTSTS.offset, 2, 0)
    t.read(H.ERRINTSTS.offset, 2)
    for bit in range(16):
        t.write(H.ERRINTSTS.offset, 2, 1 << bit)
        t.read(H.ERRINTSTS.offset, 2)
        t.read(H.NORINTSTS.offset, 2)
    t.write(H.FEAER.offset, 2, 0xFFFF)
    t.read(H.ACMD12ERRSTS.offset, 2)
    t.read(H.ERRINTSTS.offset, 2)


@scenario("status-enables-mask-pending", "registers")
def _enables_mask(t: Target, ctx: Context) -> None:
    """Status enables written while statuses are pending (2.2.19, 2.2.20: a
    disabled status is not set; ERRINT in NORINTSTS is the OR of
    ERRINTSTS, 2.2.17): errors forced with every enable on, then the error
    enables taken away a few bits at a time, by a word write of
    ERRINTSTSEN and by a longword write of both enables, until no error is
    left pending; both statuses read after each write, and the line."""
    for longword in (False, True):
        t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
        t.write(H.NORINTSIGEN.offset, 4, 0xFFFF_FFFF)
        t.write(H.FEERR.offset, 2, 0x00F3)
        for enabled in (0xFFF0, 0xFF00, 0x0000, 0xFFFF):
            if longword:
                t.write(H.NORINTSTSEN.offset, 4, enabled << 16 | 0xFFFF)
            else:
                t.write(H.ERRINTSTSEN.offset, 2, enabled)
            t.read(H.NORINTSTS.offset, 4)
            t.read(H.NORINTSTSEN.offset, 4)
            t.irq_level()
        t.write(H.SWRST.offset, 1, H.SWRST_ALL)


@scenario("access-sizes", "registers")
def _access_sizes(t: Target, ctx: Context) -> None:
    """Byte, word and long reads at every offset of the window, aligned or
    not, and byte writes into shared words (BLKSIZE/BLKCNT, TRNMOD/CMDREG
    without the command byte)."""
    for size in (1, 2, 4):
        for off in range(0, H.REGISTER_WINDOW - size + 1, 1):
            if H.BDATA.offset <= off < H.BDATA.offset + 4 or (
                off < H.BDATA.offset + 4 and off + size > H.BDATA.offset
            ):
                continue  # data port reads move data
            t.read(off, size)
    for off, value in ((H.BLKSIZE.offset, 0x12), (H.BLKSIZE.offset + 1, 0x72),
                       (H.BLKCNT.offset, 0x34), (H.BLKCNT.offset + 1, 0x01),
                       (H.TRNMOD.offset, 0x37), (H.TRNMOD.offset + 1, 0x00),
                       (H.ARGUMENT.offset + 2, 0xA5)):
        t.write(off, 1, value)
        t.read(H.BLKSIZE.offset, 4)
        t.read(H.ARGUMENT.offset, 4)
        t.read(H.TRNMOD.offset, 4)
    t.write(H.BLKSIZE.offset, 4, 0xFFFF_FFFF)
    t.read(H.BLKSIZE.offset, 4)
    t.write(H.HOSTCTL.offset, 4, 0xFFFF_FFFF)
    t.read(H.HOSTCTL.offset, 4)
    t.write(H.CLKCON.offset, 4, 0x000E_0001)
    t.read(H.CLKCON.offset, 4)
