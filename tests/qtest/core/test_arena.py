"""The DMA arena: every byte of guest memory a transfer could touch is
compared between the two sides, after each transfer, also a failed one,
and at the end.  Two golden models in lockstep, one of which (playing QEMU)
writes one stray byte while a transfer runs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.driver import Adma2Desc, AdmaOptions, HostDriver, Mode
from harness.driver.arena import GUARD, DmaArena, pattern
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget

DMA = 0x0100_0000
DATA = DMA + 0x10000
DATA_PRESENT = 1 << 5  # CMDREG Data Present Select (SDHC 2.2.7)


class Stray(ModelTarget):
    """A model that writes one byte at ``stray`` when a data command issues."""

    stray: int | None = None

    def write(self, offset: int, size: int, value: int) -> None:
        super().write(offset, size, value)
        if offset == H.CMDREG.offset and value & DATA_PRESENT and self.stray is not None:
            self.memory.write(self.stray, bytes([pattern(self.stray, 1)[0] ^ 0xFF]))
            self.stray = None


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(random.Random(7).randbytes(4 << 20))
    return p


@pytest.fixture
def pair(image: Path) -> Iterator[tuple[LockstepTarget, Stray, HostDriver]]:
    qemu = Stray(image=image)
    t = LockstepTarget(ModelTarget(image=image), qemu)
    d = HostDriver(t, dma_base=DMA)
    d.init()
    yield t, qemu, d
    t.close()


def _memory_divergence(ei: pytest.ExceptionInfo[Divergence]) -> str:
    d = ei.value
    assert d.kind == "memory" and d.step.op == "mem_read"
    return "\n".join(d.fields)


def test_stray_byte_after_an_sdma_buffer_diverges_naming_the_guard(
        pair: tuple[LockstepTarget, Stray, HostDriver]) -> None:
    t, qemu, d = pair
    qemu.stray = DATA + 512  # the first byte after a one-block buffer
    with pytest.raises(Divergence) as ei:
        d.read_blocks(3, 1, mode=Mode.SDMA)
    text = _memory_divergence(ei)
    assert f"first differing byte at {DATA + 512:#x}" in text
    assert "guard zone, byte +0x0 past the end of the last transfer's SDMA buffer" in text
    assert "1 bytes differ" in text


def test_stray_byte_in_an_adma_gap_diverges(
        pair: tuple[LockstepTarget, Stray, HostDriver]) -> None:
    t, qemu, d = pair
    qemu.stray = DATA + 512 + 5  # inside the 16-byte gap after segment 1
    with pytest.raises(Divergence) as ei:
        d.read_blocks(3, 2, mode=Mode.ADMA2, adma=AdmaOptions(max_segment=512, segment_gap=16))
    text = _memory_divergence(ei)
    assert "byte +0x5 past the end of the last transfer's ADMA2 data segment 1/2" in text


def test_stray_byte_in_a_descriptor_table_diverges(
        pair: tuple[LockstepTarget, Stray, HostDriver]) -> None:
    t, qemu, d = pair
    qemu.stray = DMA + 3
    with pytest.raises(Divergence) as ei:
        d.read_blocks(3, 1, mode=Mode.ADMA2)
    assert "the last transfer's ADMA2 descriptor table 1/1" in _memory_divergence(ei)


def test_a_failed_transfer_is_compared_too(
        pair: tuple[LockstepTarget, Stray, HostDriver]) -> None:
    """An ADMA error (invalid descriptor): the driver reads nothing back,
    the arena is compared all the same."""
    t, qemu, d = pair
    buf = DMA + 0x20000
    qemu.stray = buf - 1
    bad = [Adma2Desc.tran(buf, 1024), Adma2Desc.nop(valid=False)]
    with pytest.raises(Divergence) as ei:
        d.read_blocks(0, 4, mode=Mode.ADMA2, buffer=buf,
                      adma=AdmaOptions(descriptors=bad, segments=[(buf, 1024)]))
    text = _memory_divergence(ei)
    assert "guard zone, 0x1 bytes before the last transfer's ADMA2 data segment 1/1" in text
    # The command failed: the divergence came after its error handling.
    assert any(s.op == "write" and s.args[0] == H.SWRST.offset for s in ei.value.history)


def test_agreeing_sides_pass_and_the_end_compares_again(
        pair: tuple[LockstepTarget, Stray, HostDriver]) -> None:
    t, qemu, d = pair
    for mode in (Mode.PIO, Mode.SDMA, Mode.ADMA2):
        d.read_blocks(2, 3, mode=mode)
        d.write_blocks(9, bytes(range(256)) * 4, mode=mode)
    t.compare_watched()
    # A byte changed outside any transfer is found by the final comparison.
    qemu.memory.write(DATA + 0x200 + GUARD - 1, b"\x00")
    with pytest.raises(Divergence) as ei:
        t.compare_watched()
    assert f"{DATA + 0x200 + GUARD - 1:#x}" in _memory_divergence(ei)


def test_arena_regions_merge_and_are_filled_once(image: Path) -> None:
    t = ModelTarget(image=image)
    lock = LockstepTarget(ModelTarget(image=image), t)
    a = DmaArena(lock)
    a.place(0x10000, 0x100, "buffer")
    a.place(0x10000 + 0x100 + 2 * GUARD, 0x100, "next buffer")  # guards touch: one region
    a.place(0x80000, 0x10, "far buffer")
    assert a.regions == [(0x10000 - GUARD, 0x10200 + 3 * GUARD), (0x80000 - GUARD,
                                                                   0x80010 + GUARD)]
    start, end = a.regions[0]
    assert t.mem_read(start, end - start) == pattern(start, end - start)
    writes = [s for s in lock.history() if s.op == "mem_write"]
    assert sum(len(s.args[1]) for s in writes) == sum(e - s for s, e in a.regions)
    lock.close()
