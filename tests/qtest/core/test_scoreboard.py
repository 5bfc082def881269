"""The scoreboard goes on past a difference: two golden models in lockstep,
the one playing QEMU with one rule broken on purpose.  For each kind of
difference (a register field, guest memory bytes, card image bytes, the
interrupt line) the difference is recorded once, the reference model takes
the other side's value for exactly what differed, and the run goes on:
what follows agrees, or differs again only where the broken rule strikes
again.  First-only keeps the old behaviour (the first difference raises)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.check.scoreboard import (
    DATA,
    IDENTITY,
    STATUS,
    Scoreboard,
    Stopped,
    findings,
    harm,
)
from harness.driver import HostDriver, Mode
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from tests.qtest.core.test_arena import Stray  # writes one wrong byte beside its buffer

DMA = 0x0100_0000


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(random.Random(3).randbytes(4 << 20))
    return p


def _pair(model: ModelTarget, broken: ModelTarget, limit: int = 16
          ) -> tuple[LockstepTarget, Scoreboard, HostDriver]:
    board = Scoreboard(limit, model.adopt)
    t = LockstepTarget(model, broken, scoreboard=board)
    return t, board, HostDriver(t, dma_base=DMA)


class OtherCid(ModelTarget):
    """The card's CID carries another product revision (an identity change)."""

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        card = self.card
        reset = card.reset

        def other_prv() -> None:  # a reset (CMD0) builds the CID anew
            reset()
            cid = bytearray(card._cid)  # type: ignore[attr-defined]
            cid[9] ^= 0x11  # PRV (PLS 5.2)
            card._cid = cid  # type: ignore[attr-defined]
        card.reset = other_prv  # type: ignore[method-assign]
        other_prv()


def test_register_field_difference_is_adopted_and_the_run_goes_on(image: Path) -> None:
    t, board, d = _pair(ModelTarget(image=image), OtherCid(image=image))
    d.init()
    d.deselect()
    d.send_cid()  # the same CID again (stand-by state): a repeat, no new finding
    d.select()
    data = random.Random(1).randbytes(4 * 512)
    d.write_blocks(8, data)
    assert d.read_blocks(8, 4).data == data  # the run went on, and agrees
    assert len(board.differences) == 1
    diff = board.differences[0]
    assert diff.first and diff.divergence.kind == "result"
    assert "RSPREG" in diff.signature and "CMD2 ALL_SEND_CID" in diff.signature
    assert diff.adopted and diff.adopted[0].startswith("RSPREG")
    assert diff.repeats >= 1  # CMD10 read the same value again
    assert harm(diff.signature) == IDENTITY


class ExtraStatus(ModelTarget):
    """Every read of NORINTSTS shows Block Gap Event set (a status change)."""

    def read(self, offset: int, size: int) -> int:
        v = super().read(offset, size)
        lo, hi = offset, offset + size
        if lo <= H.NORINTSTS.offset < hi:
            v |= H.NIS_BLKGAP << (8 * (H.NORINTSTS.offset - offset))
        return v


def test_status_field_difference_recorded_once_and_data_still_compared(image: Path) -> None:
    t, board, d = _pair(ModelTarget(image=image), ExtraStatus(image=image))
    d.init()
    data = random.Random(2).randbytes(2 * 512)
    d.write_blocks(3, data, mode=Mode.SDMA)
    assert d.read_blocks(3, 2, mode=Mode.SDMA).data == data
    sigs = [x.signature for x in board.differences]
    assert sigs and all("NORINTSTS" in s and "BLKGAP" in s for s in sigs), sigs
    assert all(harm(s) == STATUS for s in sigs)
    assert not board.stopped


def test_memory_bytes_are_adopted_once(image: Path) -> None:
    broken = Stray(image=image)
    t, board, d = _pair(ModelTarget(image=image), broken)
    d.init()
    stray = broken.stray = DMA + 0x10000 + 2 * 512 + 3  # just past the 2-block SDMA buffer
    d.read_blocks(0, 2, mode=Mode.SDMA)
    d.read_blocks(4, 2, mode=Mode.SDMA)
    t.compare_watched()
    kinds = [x.divergence.kind for x in board.differences]
    assert kinds.count("memory") == 1, [x.signature for x in board.differences]
    diff = next(x for x in board.differences if x.divergence.kind == "memory")
    assert diff.adopted[0].startswith("guest memory") and harm(diff.signature) == DATA
    # the model took the byte: the same range compares equal now
    assert t.model.mem_read(stray, 1) == t.qemu.mem_read(stray, 1)


def test_image_bytes_are_adopted(image: Path) -> None:
    model, broken = ModelTarget(image=image), ModelTarget(image=image)
    t, board, d = _pair(model, broken)
    d.init()
    d.write_blocks(16, bytes(range(256)) * 4)
    store = broken.card.store  # type: ignore[attr-defined]
    store.write(16 * 512 + 700, b"\xee\xee")  # the broken card lost two bytes
    t.image_read(16 * 512, 1024)
    t.image_read(16 * 512, 1024)  # adopted: the second read agrees
    assert len(board.differences) == 1
    diff = board.differences[0]
    assert diff.divergence.step.op == "image_read" and diff.signature.startswith("image |")
    assert harm(diff.signature) == DATA and diff.repeats == 0


def test_interrupt_line_is_adopted(image: Path) -> None:
    model, broken = ModelTarget(image=image), ModelTarget(image=image)
    t, board, d = _pair(model, broken)
    d.init()
    broken.sdhci.irq = True  # a line raised that no status explains
    broken.sdhci.irq_changes.append(True)
    t.read(H.HCVER.offset, 2)
    t.read(H.HCVER.offset, 2)  # adopted: the level now agrees
    (diff,) = board.differences
    assert diff.divergence.kind == "irq" and diff.adopted == ["interrupt line 1"]
    assert diff.signature.startswith("irq:model=/0,qemu=R/1")


def test_first_only_raises_at_the_first_difference(image: Path) -> None:
    t, board, d = _pair(ModelTarget(image=image), OtherCid(image=image), limit=1)
    with pytest.raises(Divergence) as ei:
        d.init()
    assert "RSPREG" in ei.value.summary() and not board.differences


def test_the_limit_stops_the_run_and_says_so(image: Path) -> None:
    t, board, d = _pair(ModelTarget(image=image), ExtraStatus(image=image), limit=2)
    with pytest.raises(Stopped):
        d.init()
        for block in range(8):
            d.write_blocks(block, bytes(512), mode=Mode.SDMA)
    assert len(board.differences) == 2 and "--max-differences 2" in board.stopped


def test_findings_group_across_runs_most_harmful_first(image: Path) -> None:
    runs = []
    for name, broken in (("a", OtherCid(image=image)), ("b", OtherCid(image=image)),
                         ("c", Stray(image=image))):
        t, board, d = _pair(ModelTarget(image=image), broken)
        d.init()
        if isinstance(broken, Stray):
            broken.stray = DMA + 0x10000 + 512
            d.read_blocks(0, 1, mode=Mode.SDMA)
        runs.append((name, board.differences))
    got = findings(runs)
    assert [f.harm for f in got] == [DATA, IDENTITY]
    assert len(got[1].runs) == 2 and got[1].first_in == 2
    assert got[1].example()[0] == "a"


def test_a_clean_pair_records_nothing(image: Path) -> None:
    t, board, d = _pair(ModelTarget(image=image), ModelTarget(image=image))
    d.init()
    d.write_blocks(1, bytes(1024), mode=Mode.ADMA2)
    d.read_blocks(1, 2, mode=Mode.ADMA2)
    t.compare_watched()
    assert board.differences == [] and not board.stopped
