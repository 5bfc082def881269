"""What the BCM2835 SDHOST board does, as facts a test checks on any Target: the
model (``test_sdhost_model.py``) and QEMU (``test_sdhost_qemu.py``) are each
held to the same statements, taken from QEMU's ``hw/sd/bcm2835_sdhost.c`` and
``hw/gpio/bcm2835_gpio.c`` as documented behaviour (ledger ``sdhost.*``), the
Linux driver's register layout and the SD specification, never from a
build's answers."""

from __future__ import annotations

from harness.driver.sdhost import SdhostHost
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import sd as S
from harness.target import Target

_FAIL, _NEW = B.SDCMD.mask("FAIL_FLAG"), B.SDCMD.mask("NEW_FLAG")
_TIMEOUT = B.SDHSTS.mask("CMD_TIME_OUT")
_BUSY = B.SDHSTS.mask("BUSY_IRPT")


def reset_values(t: Target) -> None:
    """bcm2835_sdhost_reset: SDEDM 0xc60f (FSM 0xf, thresholds 3), SDCMD 0; a
    fresh machine's SDHSTS 0; every pin an input (bcm2835_gpio_reset)."""
    assert t.read(B.host(B.SDEDM), 4) == B.SDEDM_RESET
    assert t.read(B.host(B.SDCMD), 4) == 0
    assert t.read(B.host(B.SDHSTS), 4) == 0
    assert [t.read(B.gpio(r), 4) for r in B.GPFSEL] == [0] * 6
    assert not t.irq_level()


def routing(t: Target) -> None:
    """The card is on the SDHCI at reset: CMD8 fails with FAIL_FLAG and
    CMD_TIME_OUT; with pins 48-53 ALT0 it answers R7 (PLS 4.3.13); back to
    input it is gone again (bcm2835-gpio.routing-input-and-alt0)."""
    h = SdhostHost(t)
    h.reset()
    r = h.command(8, 0x1AA)
    assert r.failed and r.hsts & _TIMEOUT
    h.route()
    assert t.read(B.gpio(B.GPFSEL[5]), 4) == 0x924  # ALT0 on pins 50-53, 12 bits only
    r = h.command(8, 0x1AA)
    assert not r.failed and r.r1 == 0x1AA
    h.route(B.ALT3)  # not the SDHCI's function in QEMU: the card stays
    assert not h.command(8, 0x1AA).failed
    h.route(B.FSEL_INPUT)
    assert h.command(8, 0x1AA).failed


def fifo_depth(t: Target) -> None:
    """16 FIFO words (Linux SDDATA_FIFO_WORDS): a 17th is dropped, an empty
    FIFO reads 0; SDEDM bits 8:4 count them after each data path run."""
    for i in range(17):
        t.write(B.host(B.SDDATA), 4, 0xA0 + i)
    assert B.SDEDM.field("FIFO_LEVEL").get(t.read(B.host(B.SDEDM), 4)) == 16
    assert [t.read(B.host(B.SDDATA), 4) for _ in range(17)] == [0xA0 + i for i in range(16)] + [0]


def registers(t: Target) -> None:
    """sdhost.config-reads-0: SDARG, SDTOUT, SDCDIV, SDHCFG read 0; SDHBCT and
    SDVDD read back; SDEDM FSM 0xf written reads 0, 5 reads 5
    (sdhost.edm-fsm-written)."""
    for reg in (B.SDARG, B.SDTOUT, B.SDCDIV, B.SDHCFG):
        t.write(B.host(reg), 4, 0x12)
        assert t.read(B.host(reg), 4) == 0, reg.name
    for reg in (B.SDHBCT, B.SDVDD):
        t.write(B.host(reg), 4, 0x200)
        assert t.read(B.host(reg), 4) == 0x200, reg.name
    t.write(B.host(B.SDEDM), 4, 0xC60F)
    assert t.read(B.host(B.SDEDM), 4) == 0xC600
    t.write(B.host(B.SDEDM), 4, 0xC605)
    assert t.read(B.host(B.SDEDM), 4) == 0xC605


def busy_interrupt(t: Target) -> None:
    """A BUSYWAIT command with SDHCFG.BUSY_IRPT_EN raises the line at once
    (sdhost.busy-irpt-at-once); 1 written to BUSY_IRPT lowers it; without the
    enable no interrupt."""
    h = SdhostHost(t)
    h.init(wide=False)
    t.write(B.host(B.SDHCFG), 4, B.SDHCFG.mask("BUSY_IRPT_EN"))
    h.send(13, h.rca << 16, "r1b")
    assert t.irq_level() and t.read(B.host(B.SDHSTS), 4) & _BUSY
    t.write(B.host(B.SDHSTS), 4, _BUSY)
    assert not t.irq_level()
    t.write(B.host(B.SDHCFG), 4, 0)
    h.send(13, h.rca << 16, "r1b")
    assert not t.irq_level()


def data_by_pio(t: Target) -> None:
    """CMD24 then CMD17 through SDDATA: the block reads back as written and the
    card image holds it; the card ends in transfer state (PLS 4.3.3)."""
    h = SdhostHost(t)
    h.init()
    data = bytes((i * 7 + 3) & 0xFF for i in range(512))
    assert not h.write(24, 9 * 512, data).failed
    assert h.read(17, 9 * 512).data == data
    assert t.image_read(9 * 512, 512) == data
    assert (h.status().r1 >> 9) & 0xF == S.CardState.TRAN
    assert not t.read(B.host(B.SDCMD), 4) & (_FAIL | _NEW)


FACTS = (reset_values, routing, fifo_depth, registers, busy_interrupt, data_by_pio)
