"""The model's shortcuts for a caller running ahead of QEMU
(``ModelTarget.read_run``, ``reader``, ``irq_state``): each gives what the
plain Target calls give, one by one, on a twin model driven the same way.
The reference is the plain ``read``/``irq_events``/``irq_level`` path, and
the block boundary comes from the Host Controller spec (2.2.8: the Buffer
Data Port's last bytes of a block end the access)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.driver import HostDriver
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget

BLOCK = 512


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[ModelTarget, ModelTarget]]:
    img = tmp_path / "card.img"
    img.write_bytes(random.Random(7).randbytes(1 << 20))
    a, b = ModelTarget(image=img), ModelTarget(image=img)
    for t in (a, b):
        HostDriver(t).init()
    yield a, b
    a.close()
    b.close()


def _start_pio_read(t: ModelTarget, blocks: int) -> None:
    """CMD18 READ_MULTIPLE_BLOCK through the registers, PIO (no DMA)."""
    t.write(H.BLKSIZE.offset, 2, BLOCK)
    t.write(H.BLKCNT.offset, 2, blocks)
    t.write(H.ARGUMENT.offset, 4, 0)
    t.write(H.TRNMOD.offset, 2, H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    t.write(H.CMDREG.offset, 2, H.cmdreg(18, H.RSP_48, crc=True, idx=True, data=True))


def _registers(t: ModelTarget) -> list[int]:
    return [t.read(off, 4) for off in range(0, H.BDATA.offset, 4)] + \
        [t.read(off, 4) for off in range(H.BDATA.offset + 4, 0x60, 4)]


def test_a_run_reads_what_reads_one_by_one_read(twins: tuple[ModelTarget, ModelTarget]) -> None:
    a, b = twins
    for t in twins:
        _start_pio_read(t, 3)
    assert a.read(H.PRNSTS.offset, 4) & H.PRNSTS_BUFRDRDY
    got: list[int] = []
    runs = []
    while len(got) < 3 * BLOCK // 4:
        run = a.read_run(H.BDATA.offset, 4, 1000)
        runs.append(len(run))
        got += run or [a.read(H.BDATA.offset, 4)]
    want = [b.read(H.BDATA.offset, 4) for _ in range(3 * BLOCK // 4)]
    assert got == want
    # each block's run stops before its last dword, which ends the block (2.2.8)
    assert [n for n in runs if n] == [BLOCK // 4 - 1] * 3
    assert _registers(a) == _registers(b)
    assert a.irq_state() == (tuple(b.irq_events()), b.irq_level())


def test_no_run_where_a_read_would_do_more(twins: tuple[ModelTarget, ModelTarget]) -> None:
    a, _ = twins
    assert a.read_run(H.BDATA.offset, 4, 10) == []  # no buffer ready
    _start_pio_read(a, 1)
    assert a.read_run(H.BDATA.offset, 2, 10) == []  # not a dword
    assert a.read_run(H.NORINTSTS.offset, 4, 10) == []  # not the data port
    a.read(H.BDATA.offset, 1)  # the index now off the dword
    assert a.read_run(H.BDATA.offset, 4, 10) == []


def test_reader_and_irq_state_follow_a_replaced_read(twins: tuple[ModelTarget, ModelTarget],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = twins
    assert a.reader(H.NORINTSTS.offset, 4) == a.sdhci.read
    monkeypatch.setattr(ModelTarget, "read", lambda self, off, size: 0x5A)
    assert a.reader(H.NORINTSTS.offset, 4)(H.NORINTSTS.offset, 4) == 0x5A
    _start_pio_read(a, 1)
    assert a.read_run(H.BDATA.offset, 4, 10) == []
    monkeypatch.setattr(ModelTarget, "irq_level", lambda self: True)
    assert a.irq_state()[1] is True
