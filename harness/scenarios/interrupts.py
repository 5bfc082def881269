"""Interrupt status, status enable and signal enable, the INTx level, and
soft resets in the middle of a transfer (SD Host Controller 2.2.17-22,
2.2.11, 3.7)."""

from __future__ import annotations

from harness.driver.ops import set_medium
from harness.driver.results import Mode
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.scenarios.common import ready
from harness.scenarios.registry import Context, scenario
from harness.target import Target

#: One second of virtual time, in the nanoseconds clock_step takes.
SECOND_NS = 1_000_000_000


@scenario("irq-enable-vs-signal", "interrupts", needs_clock=True)
def _enables(t: Target, ctx: Context) -> None:
    """A status bit shows only when its status enable is set, and drives the
    line only when its signal enable is set too; W1C drops the line."""
    d = ready(t)
    for sts_en, sig_en in ((0, 0), (0xFFFF, 0), (0xFFFF, 0xFFFF), (0x0001, 0x0001),
                           (0xFFFE, 0x0001)):
        t.write(H.NORINTSTSEN.offset, 2, sts_en)
        t.write(H.NORINTSIGEN.offset, 2, sig_en)
        t.write(H.ERRINTSTSEN.offset, 2, sts_en)
        t.write(H.ERRINTSIGEN.offset, 2, sig_en)
        d.command(S.index("SEND_STATUS"), d.card.rca << 16)   # CMD13: command complete
        t.irq_level()
        t.read(H.NORINTSTS.offset, 4)
        t.write(H.NORINTSTS.offset, 2, 0xFFFF)
        t.write(H.FEERR.offset, 2, H.EIS_CMDTOUT)  # forced command timeout
        t.read(H.NORINTSTS.offset, 4)
        t.write(H.ERRINTSTS.offset, 2, 0xFFFF)
        t.read(H.SLOT_INT_STATUS.offset, 2)
    t.write(H.NORINTSIGEN.offset, 2, 0xFFFF)
    t.write(H.NORINTSTSEN.offset, 2, 0xFFFF)
    t.write(H.NORINTSIGEN.offset, 2, 0)  # signal off with status pending
    t.write(H.NORINTSIGEN.offset, 2, 0xFFFF)


@scenario("irq-during-transfers", "interrupts", needs_clock=True)
def _irq_transfers(t: Target, ctx: Context) -> None:
    """With every status signalled, the line through PIO, SDMA and ADMA2
    transfers (buffer ready, DMA, transfer complete)."""
    d = ready(t)
    t.write(H.NORINTSIGEN.offset, 2, 0xFFFF)
    t.write(H.ERRINTSIGEN.offset, 2, 0xFFFF)
    for mode in (Mode.PIO, Mode.SDMA, Mode.ADMA2):
        d.read_blocks(0, 3, mode=mode)
        d.write_blocks(3, bytes(range(256)) * 4, mode=mode)


@scenario("irq-pulse-in-one-access", "interrupts", needs_clock=True)
def _pulse(t: Target, ctx: Context) -> None:
    """A quadword write reaches the controller as two longwords, status
    enables then signal enables: the line drops and rises again within one
    access, a pulse the level after it does not show.  The line is left up
    by a CMD reset that clears Command Complete without re-evaluating it."""
    d = ready(t)
    t.write(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF)
    t.write(H.NORINTSIGEN.offset, 4, H.NIS_CMDCMPL)
    t.write(H.ARGUMENT.offset, 4, d.card.rca << 16)
    t.write(H.CMDREG.offset, 2, H.cmdreg(13, H.RSP_48))  # CMD13: Command Complete
    t.clock_step(1_000_000)
    t.write(H.FEERR.offset, 2, H.EIS_CMDTOUT)  # an error status, not signalled yet
    t.write(H.SWRST.offset, 1, H.SWRST_CMD)
    t.read(H.NORINTSTS.offset, 4)
    # Status enables unchanged (the line drops), then every error signalled
    # (it rises again).
    t.write(H.NORINTSTSEN.offset, 8, (0xFFFF_0000 | H.NIS_CMDCMPL) << 32 | 0xFFFF_FFFF)
    t.read(H.NORINTSTS.offset, 4)
    t.write(H.NORINTSTS.offset, 4, 0xFFFF_FFFF)
    t.write(H.NORINTSIGEN.offset, 4, 0)


for _what, _bits in (("dat", H.SWRST_DAT), ("cmd", H.SWRST_CMD), ("all", H.SWRST_ALL)):

    @scenario(f"reset-{_what}-mid-transfer", "interrupts", needs_clock=True,
              params={"bits": _bits}, variant=f"here Software Reset For {_what.upper()}")
    def _reset_mid(t: Target, ctx: Context) -> None:
        """Start a multi-block PIO read, read half a block, soft-reset, then
        look at the registers and do a clean read (2.2.11)."""
        d = ready(t)
        bits = int(ctx.params["bits"])
        t.write(H.BLKSIZE.offset, 2, 512)
        t.write(H.BLKCNT.offset, 2, 4)
        t.write(H.ARGUMENT.offset, 4, d.address(0))
        t.write(H.TRNMOD.offset, 2, H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
        t.write(H.CMDREG.offset, 2, H.cmdreg(18, H.RSP_48, crc=True, idx=True, data=True))
        for _ in range(64):
            t.read(H.BDATA.offset, 4)
        t.write(H.SWRST.offset, 1, bits)
        for reg in (H.PRNSTS, H.NORINTSTS, H.ERRINTSTS, H.BLKCNT, H.TRNMOD, H.HOSTCTL,
                    H.CLKCON):
            t.read(reg.offset, reg.width if reg.width <= 4 else 4)
        if bits == H.SWRST_ALL:
            d.setup()
            d.init_card()
        else:
            d.stop_transmission()
            d.reset(H.SWRST_CMD | H.SWRST_DAT)
        d.read_blocks(1, 2)


@scenario("irq-card-change", "interrupts", needs_clock=True)
def _card_change(t: Target, ctx: Context) -> None:
    """The management layer ejects and re-inserts the medium (QMP ``eject``,
    ``blockdev-change-medium``): Card Removal, then Card Insertion (SDHC
    2.2.17 bits 6 and 7) with Present State following.  An insertion while
    Card Removal is still pending is held back and reported one second
    after the guest acknowledged the removal (QEMU's insertion timer,
    ``INSERTION_DELAY_NS``).  Afterwards the card is set up again and read."""
    d = ready(t)
    t.write(H.NORINTSTSEN.offset, 2, 0xFFFF)
    t.write(H.NORINTSIGEN.offset, 2, H.NIS_CARDINS | H.NIS_CARDREM)
    t.write(H.NORINTSTS.offset, 2, 0xFFFF)
    set_medium(t, False)
    ctx.expect(bool(t.read(H.NORINTSTS.offset, 2) & H.NIS_CARDREM), "no Card Removal")
    t.irq_level()
    t.read(H.PRNSTS.offset, 4)
    set_medium(t, True)  # removal not acknowledged: the insertion waits
    t.read(H.NORINTSTS.offset, 2)
    t.clock_step(SECOND_NS + SECOND_NS // 10)
    t.read(H.NORINTSTS.offset, 2)
    t.write(H.NORINTSTS.offset, 2, H.NIS_CARDREM)
    t.irq_level()
    t.clock_step(SECOND_NS // 2)
    t.read(H.NORINTSTS.offset, 2)
    t.clock_step(SECOND_NS // 2 + SECOND_NS // 10)
    ctx.expect(bool(t.read(H.NORINTSTS.offset, 2) & H.NIS_CARDINS),
               "no Card Insertion a second after the removal was acknowledged")
    t.read(H.PRNSTS.offset, 4)
    t.irq_level()
    t.write(H.NORINTSTS.offset, 2, 0xFFFF)
    set_medium(t, False)  # acknowledged at once: the insertion is immediate
    t.write(H.NORINTSTS.offset, 2, H.NIS_CARDREM)
    set_medium(t, True)
    t.read(H.NORINTSTS.offset, 4)
    t.read(H.PRNSTS.offset, 4)
    t.irq_level()
    t.write(H.NORINTSTS.offset, 2, 0xFFFF)
    d.setup()
    d.init_card()
    d.read_blocks(0, 2, mode=Mode.SDMA)
