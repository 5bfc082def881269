"""The sparse copy-on-write block store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model.blockstore import BlockStore


def test_no_file_reads_zero() -> None:
    bs = BlockStore(size=1 << 20)
    assert bs.read(0, 16) == bytes(16)
    assert bs.read((1 << 20) - 4, 8) == bytes(8)


def test_image_is_never_written(tmp_path: Path) -> None:
    img = tmp_path / "card.img"
    img.write_bytes(bytes(range(256)) * 8)
    bs = BlockStore(img)
    assert bs.size == 2048
    assert bs.read(1, 3) == bytes([1, 2, 3])
    assert bs.write(510, b"\xaa\xbb\xcc\xdd")
    assert bs.read(508, 8) == bytes([252, 253, 0xAA, 0xBB, 0xCC, 0xDD, 2, 3])
    assert img.read_bytes() == bytes(range(256)) * 8
    bs.close()


def test_write_past_end_is_refused_whole() -> None:
    bs = BlockStore(size=1024)
    assert not bs.write(1000, b"\x01" * 100)
    assert bs.read(1000, 24) == bytes(24)
    assert bs.written_blocks == 0


def test_fill_then_write_then_fill() -> None:
    bs = BlockStore(size=1 << 20)
    bs.write(4096, b"\x55" * 512)
    assert bs.fill(100, 10000, 0xFF)
    assert bs.read(99, 2) == b"\x00\xff"
    assert bs.read(10099, 2) == b"\xff\x00"
    assert bs.read(4096, 512) == b"\xff" * 512
    bs.write(2048, b"\x11")
    assert bs.read(2047, 3) == b"\xff\x11\xff"
    bs.fill(0, 1 << 20, 0x00)
    assert bs.read(2048, 1) == b"\x00"
    assert bs.written_blocks == 0
    assert bs.fill_ranges() == [(0, 2048, 0)]


def test_large_sparse_card_is_cheap() -> None:
    size = 64 << 30
    bs = BlockStore(size=size)
    for i in range(100):
        bs.write(i * (1 << 28), b"\x01" * 512)
    t = time.perf_counter()
    bs.fill(0, size, 0xFF)
    bs.fill(512, size - 1024, 0x00)
    assert time.perf_counter() - t < 0.5
    assert bs.read(0, 1) == b"\xff" and bs.read(512, 1) == b"\x00"
    assert bs.read(size - 512, 1) == b"\xff"
    assert len(bs.fill_ranges()) == 3


@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["write", "fill"]), st.integers(0, 63 * 512),
                  st.integers(1, 3 * 512), st.integers(0, 255)),
        max_size=12),
    reads=st.lists(st.tuples(st.integers(0, 64 * 512), st.integers(1, 4 * 512)), max_size=6),
)
@settings(max_examples=60, deadline=None)
def test_span_read_equals_block_by_block(tmp_path_factory: pytest.TempPathFactory,
                                         ops: list[tuple[str, int, int, int]],
                                         reads: list[tuple[int, int]]) -> None:
    """The one-pread span read gives what reading block by block gives."""
    img = tmp_path_factory.mktemp("bs") / "img"
    img.write_bytes(bytes((i * 7) & 0xFF for i in range(64 * 512)))
    store = BlockStore(img)
    for kind, off, n, v in ops:
        if kind == "write":
            store.write(off, bytes([v]) * n)
        else:
            store.fill(off, n, v)
    for off, n in reads:
        first, last = off // 512, (off + n - 1) // 512
        blocks = b"".join(store._block(b) for b in range(first, last + 1))
        want = blocks[off - first * 512:off - first * 512 + n]
        want = want[: max(0, store.size - off)]
        want += bytes(n - len(want))
        assert store.read(off, n) == want


def test_touched_names_every_written_erased_or_filled_extent() -> None:
    s = BlockStore(size=1 << 30)
    assert s.touched() == []
    s.write(512 * 10, b"x" * 1024)             # blocks 10, 11
    s.write(512 * 12 + 3, b"y")                # block 12: joins them
    s.fill(512 * 1000, 512 * 4 + 100, 0xFF)    # blocks 1000..1003 filled, 1004 written
    s.write((1 << 30) - 512, b"z" * 512)       # the last block, far away
    assert s.touched() == [(512 * 10, 512 * 3), (512 * 1000, 512 * 5),
                           ((1 << 30) - 512, 512)]


def test_byte_by_byte_reads_see_every_write_and_fill(tmp_path: Path) -> None:
    """A card with a 1-byte block length reads its store a byte at a time
    (the last block is kept): a write or fill in between is seen at once."""
    img = tmp_path / "card.img"
    img.write_bytes(bytes(range(256)) * 4)
    bs = BlockStore(img)
    assert [bs.read(i, 1) for i in (5, 6)] == [b"\x05", b"\x06"]
    assert bs.write(6, b"\xee")
    assert bs.read(6, 1) == b"\xee" and bs.read(5, 2) == b"\x05\xee"
    assert bs.fill(0, 512, 0x5A)
    assert bs.read(7, 1) == b"\x5a" and bs.read(512, 1) == b"\x00"
    bs.close()
