"""Adopting QEMU's random RCA: only a new, non-zero address is adopted.

The fake QEMU is a second model whose card draws the RCAs a test chooses,
so CMD3's R6 answer differs from the model's in the RCA bits only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.driver import host as D
from harness.driver.host import HostDriver
from harness.machine import Machine
from harness.model.sdcard import SDCard
from harness.model.target import ModelTarget

SIZE = 16 << 20


def _pair(model_rcas: list[int], qemu_rcas: list[int]) -> tuple[ModelTarget, ModelTarget]:
    def target(rcas: list[int]) -> ModelTarget:
        t = ModelTarget(Machine(), size=SIZE)
        draws: Iterator[int] = iter(rcas)
        assert isinstance(t.card, SDCard) and not t.card.legacy
        t.card.rca_source = lambda: next(draws)
        return t
    return target(model_rcas), target(qemu_rcas)


def _stby(d: HostDriver) -> None:
    d.setup()
    d.cmd(D.GO_IDLE_STATE, 0)
    d.cmd(D.SEND_IF_COND, D.CMD8_VHS_27_36 | D.CMD8_CHECK_PATTERN)
    d.acmd(D.ACMD_SD_SEND_OP_COND, D.HOST_OCR_33V, rca=0)
    d.step(1_000_000_000)
    d.acmd(D.ACMD_SD_SEND_OP_COND, D.HOST_OCR_33V, rca=0)
    d.cmd(D.ALL_SEND_CID, 0)


def test_a_new_random_rca_is_adopted_and_recorded() -> None:
    model, qemu = _pair([0x1111, 0x2222], [0xBEEF, 0x4242])
    t = LockstepTarget(model, qemu)
    d = HostDriver(t, recover=False)
    _stby(d)
    assert d.cmd(D.SEND_RELATIVE_ADDR, 0).r1 >> 16 == 0xBEEF
    assert d.cmd(D.SEND_RELATIVE_ADDR, 0).r1 >> 16 == 0x4242  # CMD3 again in stand-by
    assert model.adoptions == [("RCA", 0xBEEF), ("RCA", 0x4242)]
    assert len(t.reconciled) == 2 and not model.refused


def test_rca_zero_is_a_divergence_not_an_adoption() -> None:
    model, qemu = _pair([0x1111], [0])
    t = LockstepTarget(model, qemu)
    d = HostDriver(t, recover=False)
    _stby(d)
    with pytest.raises(Divergence):
        d.cmd(D.SEND_RELATIVE_ADDR, 0)
    assert model.adoptions == [] and "RCA 0" in model.refused[0]


def test_the_previous_rca_again_is_a_divergence() -> None:
    model, qemu = _pair([0x1111, 0x2222], [0xBEEF, 0xBEEF])
    t = LockstepTarget(model, qemu)
    d = HostDriver(t, recover=False)
    _stby(d)
    d.cmd(D.SEND_RELATIVE_ADDR, 0)
    with pytest.raises(Divergence):
        d.cmd(D.SEND_RELATIVE_ADDR, 0)
    assert model.adoptions == [("RCA", 0xBEEF)]
    assert "previous RCA 0xbeef" in model.refused[0]


def test_rspreg3_after_a_refused_auto_cmd12_is_adopted_only_then() -> None:
    """QEMU copies an uninitialised buffer into RSPREG3 when the card does not
    answer Auto CMD12 (found by sdqtest fuzz on 7.2: a single-block write
    with Auto CMD12): the model adopts that value, and nothing else."""
    from harness.hwdefs import sdhci as H

    model = ModelTarget(Machine(), size=SIZE)
    assert not model.reconcile("read", (H.RSPREG3.offset, 4), 0, 0x300000E0)
    model.sdhci.trnmod = H.TRNMOD_ACMD12   # the card (idle) refuses CMD12
    model.sdhci.end_transfer()
    assert model.sdhci.rspreg3_undefined
    # Bytes outside RSPREG3 must still agree.
    assert not model.reconcile("read", (H.RSPREG2.offset + 2, 4), 0, 0x00E00001)
    assert model.reconcile("read", (H.RSPREG3.offset, 4), 0, 0x300000E0)
    assert model.read(H.RSPREG3.offset, 4) == 0x300000E0
    assert model.adoptions == [("RSPREG3", 0x300000E0)]
    assert not model.sdhci.rspreg3_undefined  # adopted once, then compared again
    assert not model.reconcile("read", (H.RSPREG3.offset, 4), 0x300000E0, 0x12)
