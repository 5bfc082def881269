"""A sparse copy-on-write block store over an optional raw image file.

The image file is opened read-only and never written.  Blocks the model
writes are kept in memory; ranges erased to a byte pattern are kept as
block intervals, so erasing any range costs O(number of written blocks)
rather than O(size), and a 64 GiB card with no image costs nothing.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path

BLOCK = 512


class BlockStore:
    """Card contents: base layer (file or zeros) + fills + written blocks.

    Precedence, highest first: written blocks, fill intervals, base layer.
    """

    def __init__(self, image: str | Path | None = None, size: int | None = None,
                 block_size: int = BLOCK) -> None:
        self.block_size = block_size
        self._fd: int | None = None
        self.image = Path(image) if image is not None else None
        if self.image is not None:
            self._fd = os.open(self.image, os.O_RDONLY)
            file_size = os.fstat(self._fd).st_size
            self.size = file_size if size is None else size
            self._file_size = file_size
        else:
            self.size = 0 if size is None else size
            self._file_size = 0
        if self.size < 0:
            raise ValueError("block store size must not be negative")
        self._written: dict[int, bytearray] = {}
        #: The keys of :attr:`_written`, sorted: a span's written blocks by
        #: bisection (the image compare reads 1 MiB spans of a card that
        #: may hold thousands of written blocks).
        self._keys: list[int] = []
        # Disjoint, sorted fill intervals [start, end) in blocks, with a byte value.
        self._fill_starts: list[int] = []
        self._fills: list[tuple[int, int, int]] = []
        #: The last block read alone, as ``(block, bytes)``: a card with a
        #: 1-byte block length loads its block for every byte it sends
        #: (fuzz inputs do that); dropped by every write and fill.
        self._last: tuple[int, bytes] | None = None

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # -- queries -----------------------------------------------------------

    @property
    def written_blocks(self) -> int:
        """Blocks held in memory because they were written."""
        return len(self._written)

    def touched(self) -> list[tuple[int, int]]:
        """``(offset, length)`` byte extents of every block written, erased or
        filled, sorted and joined where they touch."""
        bs = self.block_size
        out: list[tuple[int, int]] = []
        spans = sorted([(b, b + 1) for b in self._written] + [(s, e) for s, e, _ in self._fills])
        for s, e in spans:
            if out and s * bs <= out[-1][0] + out[-1][1]:
                start = out[-1][0]
                out[-1] = (start, max(out[-1][1], e * bs - start))
            else:
                out.append((s * bs, (e - s) * bs))
        return out

    def fill_ranges(self) -> list[tuple[int, int, int]]:
        """``(first_block, end_block_exclusive, value)`` of every filled interval."""
        return list(self._fills)

    def _fill_value(self, block: int) -> int | None:
        i = bisect.bisect_right(self._fill_starts, block) - 1
        if i >= 0:
            s, e, v = self._fills[i]
            if s <= block < e:
                return v
        return None

    def _base_block(self, block: int) -> bytes:
        bs = self.block_size
        off = block * bs
        if self._fd is None or off >= self._file_size:
            return bytes(bs)
        data = os.pread(self._fd, bs, off)
        return data + bytes(bs - len(data))

    def _block(self, block: int) -> bytes:
        w = self._written.get(block)
        if w is not None:
            return bytes(w)
        v = self._fill_value(block)
        if v is not None:
            return bytes([v]) * self.block_size
        return self._base_block(block)

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``; bytes beyond the end read as zero.

        One ``pread`` for the whole span, then the filled intervals and the
        written blocks laid over it (written wins over filled over base, as
        :meth:`_block` says for a single block)."""
        if length <= 0:
            return b""
        bs = self.block_size
        first, last = offset // bs, (offset + length - 1) // bs
        if first == last and offset + length <= self.size:
            cached = self._last
            if cached is None or cached[0] != first:
                cached = self._last = (first, self._read_span(first, first, first * bs, bs))
            start = offset - first * bs
            return cached[1][start:start + length]
        return self._read_span(first, last, offset, length)

    def _read_span(self, first: int, last: int, offset: int, length: int) -> bytes:
        """:meth:`read` of blocks ``first`` to ``last``."""
        bs = self.block_size
        span = bytearray((last - first + 1) * bs)
        if self._fd is not None and first * bs < self._file_size:
            data = os.pread(self._fd, len(span), first * bs)
            span[:len(data)] = data
        i = max(0, bisect.bisect_right(self._fill_starts, first) - 1)
        for s, e, v in self._fills[i:]:
            if s > last:
                break
            lo, hi = max(s, first), min(e, last + 1)
            if lo < hi:
                span[(lo - first) * bs:(hi - first) * bs] = bytes([v]) * ((hi - lo) * bs)
        keys = self._keys
        for b in keys[bisect.bisect_left(keys, first):bisect.bisect_right(keys, last)]:
            span[(b - first) * bs:(b - first + 1) * bs] = self._written[b]
        start = offset - first * bs
        data = bytes(span[start:start + length])
        if offset + length > self.size:  # past the end: zeros, like an empty device
            keep = max(0, self.size - offset)
            data = data[:keep] + bytes(length - keep)
        return data

    # -- updates -----------------------------------------------------------

    def in_range(self, offset: int, length: int) -> bool:
        return offset >= 0 and length >= 0 and offset + length <= self.size

    def write(self, offset: int, data: bytes) -> bool:
        """Write ``data`` at ``offset``.  A request reaching past the end is
        refused whole and returns False, as QEMU's block layer does."""
        if not self.in_range(offset, len(data)):
            return False
        self._last = None
        bs = self.block_size
        pos = 0
        while pos < len(data):
            addr = offset + pos
            b, within = divmod(addr, bs)
            n = min(bs - within, len(data) - pos)
            blk = self._written.get(b)
            if blk is None:
                blk = bytearray(self._block(b))
                self._written[b] = blk
                bisect.insort(self._keys, b)
            blk[within:within + n] = data[pos:pos + n]
            pos += n
        return True

    def fill(self, offset: int, length: int, value: int) -> bool:
        """Set ``length`` bytes at ``offset`` to ``value``; O(written blocks)."""
        if not self.in_range(offset, length):
            return False
        self._last = None
        if length == 0:
            return True
        bs = self.block_size
        end = offset + length
        first_full = -(-offset // bs)
        end_full = end // bs
        if first_full >= end_full:
            return self.write(offset, bytes([value]) * length)
        if offset < first_full * bs:
            self.write(offset, bytes([value]) * (first_full * bs - offset))
        if end > end_full * bs:
            self.write(end_full * bs, bytes([value]) * (end - end_full * bs))
        keys = self._keys
        lo, hi = bisect.bisect_left(keys, first_full), bisect.bisect_left(keys, end_full)
        for b in keys[lo:hi]:
            del self._written[b]
        del keys[lo:hi]
        self._add_fill(first_full, end_full, value & 0xFF)
        return True

    def _add_fill(self, start: int, end: int, value: int) -> None:
        new: list[tuple[int, int, int]] = []
        for s, e, v in self._fills:
            if e <= start or s >= end:
                new.append((s, e, v))
                continue
            if s < start:
                new.append((s, start, v))
            if e > end:
                new.append((end, e, v))
        new.append((start, end, value))
        new.sort()
        merged: list[tuple[int, int, int]] = []
        for s, e, v in new:
            if merged and merged[-1][1] == s and merged[-1][2] == v:
                merged[-1] = (merged[-1][0], e, v)
            else:
                merged.append((s, e, v))
        self._fills = merged
        self._fill_starts = [s for s, _, _ in merged]
