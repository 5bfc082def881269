"""The card image a guest runs on: made by the harness, with known content, checked after.

Layout of the card (a sparse raw SDHC image; 4 GiB, or 8 GiB for a 2 GiB erase)::

    [0, fio_mib)                          fio's region (read, write, readwrite)
    pattern region, 1 MiB guards around   the guest writes the pattern here (pwrite)
    read region                           the host writes the pattern; the guest reads it
    erase region, 1 MiB guards around     prefilled at both ends and the middle; discarded

Guards hold the pattern under another seed: after the guest ran they must be intact,
and the image must hold data nowhere else than in these regions.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.errors import GuestError

BLOCK = 512
KIB = 1024
MIB = 1 << 20
GUARD = MIB
PATTERN_SEED = 0x5D
GUARD_SEED = 0x6A
#: 64 KiB units: the guest's dd moves the pattern in 64 KiB blocks.
UNIT = 64 * KIB


class CardError(GuestError):
    """The card image is not what the harness expects."""


def block(lba: int, seed: int) -> bytes:
    """The pattern of one 512-byte block: computable from its block number and a seed."""
    head = b"SDQT" + seed.to_bytes(4, "little") + lba.to_bytes(8, "little")
    x = (lba * 2654435761 + seed * 97) & 0xFFFFFFFF
    body = bytes(((x >> (8 * (i % 4))) + i) & 0xFF for i in range(BLOCK - len(head)))
    return head + body


def pattern(start_lba: int, nblocks: int, seed: int) -> bytes:
    """The pattern of ``nblocks`` blocks from ``start_lba``."""
    return b"".join(block(start_lba + i, seed) for i in range(nblocks))


@dataclass(frozen=True)
class CardLayout:
    """Where everything is on the card, in bytes."""

    card_bytes: int
    fio_bytes: int
    pattern_at: int
    pattern_bytes: int
    read_at: int
    read_bytes: int
    erase_at: int
    erase_bytes: int

    @staticmethod
    def make(erase_mib: int, fio_mib: int = 1024, pattern_kib: int = 1024) -> CardLayout:
        if pattern_kib <= 0 or pattern_kib * KIB % UNIT:
            raise CardError(f"pattern size {pattern_kib} KiB: a multiple of 64 KiB")
        if erase_mib <= 0 or fio_mib <= 0:
            raise CardError("erase and fio sizes must be positive")
        pattern_at = fio_mib * MIB + 64 * MIB
        read_at = pattern_at + pattern_kib * KIB + 2 * GUARD
        erase_at = max(2048 * MIB, -(-(read_at + pattern_kib * KIB + GUARD) // (64 * MIB))
                       * 64 * MIB)
        end = erase_at + erase_mib * MIB + GUARD
        card = 4 << 30
        while card < end:
            card *= 2
        if card > 32 << 30:
            raise CardError(f"a {erase_mib} MiB erase needs a card over 32 GiB (SDHC)")
        return CardLayout(card, fio_mib * MIB, pattern_at, pattern_kib * KIB, read_at,
                          pattern_kib * KIB, erase_at, erase_mib * MIB)

    def erase_samples(self) -> list[int]:
        """Offsets of the 1 MiB pieces prefilled inside the erase region."""
        mid = self.erase_at + (self.erase_bytes // 2 // MIB) * MIB
        return sorted({self.erase_at, mid, self.erase_at + self.erase_bytes - MIB})

    def guards(self) -> list[int]:
        """Offsets of the 1 MiB guards around the pattern and erase regions."""
        return [self.pattern_at - GUARD, self.pattern_at + self.pattern_bytes,
                self.erase_at - GUARD, self.erase_at + self.erase_bytes]

    def pattern_file(self) -> bytes:
        """What the guest writes (``/sdqtest/pattern.bin``): the pattern at its place."""
        return pattern(self.pattern_at // BLOCK, self.pattern_bytes // BLOCK, PATTERN_SEED)

    def read_content(self) -> bytes:
        return pattern(self.read_at // BLOCK, self.read_bytes // BLOCK, PATTERN_SEED)

    def written_regions(self) -> list[tuple[int, int]]:
        """Where data may be after a run: fio, pattern, read, erase, guards."""
        out = [(0, self.fio_bytes), (self.pattern_at, self.pattern_bytes),
               (self.read_at, self.read_bytes), (self.erase_at, self.erase_bytes)]
        out += [(g, GUARD) for g in self.guards()]
        return sorted(out)


def _write_at(f: BinaryIO, offset: int, data: bytes) -> None:
    f.seek(offset)
    f.write(data)


def make_raw(path: Path, lay: CardLayout) -> None:
    """A sparse raw card image with the guards, the read region and the erase samples."""
    with open(path, "wb") as f:
        f.truncate(lay.card_bytes)
        for g in lay.guards():
            _write_at(f, g, pattern(g // BLOCK, GUARD // BLOCK, GUARD_SEED))
        _write_at(f, lay.read_at, lay.read_content())
        for s in lay.erase_samples():
            _write_at(f, s, pattern(s // BLOCK, MIB // BLOCK, GUARD_SEED))


def make_image(directory: Path, lay: CardLayout, fmt: str) -> Path:
    """The card image in ``fmt`` (``raw`` or ``qcow2``, via ``qemu-img``)."""
    raw = directory / "guest-card.img"
    make_raw(raw, lay)
    if fmt == "raw":
        return raw
    if fmt != "qcow2":
        raise CardError(f"format {fmt!r}: raw or qcow2")
    qimg = directory / "guest-card.qcow2"
    _qemu_img(["convert", "-f", "raw", "-O", "qcow2", str(raw), str(qimg)])
    raw.unlink()
    return qimg


def qemu_img() -> str | None:
    """The ``qemu-img`` on PATH, or None."""
    return shutil.which("qemu-img")


def _qemu_img(args: list[str]) -> None:
    exe = qemu_img()
    if exe is None:
        raise CardError("qcow2 needs qemu-img (Debian: apt-get install qemu-utils)")
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=900, check=False)
    if p.returncode:
        raise CardError(f"qemu-img {args[0]} failed: {p.stderr.strip()[-200:]}")


def allocated(path: Path) -> int:
    """Bytes the image takes on disk (``st_blocks * 512``)."""
    return os.stat(path).st_blocks * 512


def data_extents(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(offset, length) of the allocated data of a raw file (SEEK_DATA/SEEK_HOLE)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        end = size if end is None else min(end, size)
        pos = start
        while pos < end:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                return
            if d >= end:
                return
            h = min(os.lseek(fd, d, os.SEEK_HOLE), end)
            yield d, h - d
            pos = h
    finally:
        os.close(fd)


def allocated_in(path: Path, start: int, length: int) -> int:
    """Allocated bytes of a raw file within [start, start+length)."""
    return sum(n for _, n in data_extents(path, start, start + length))


class RawView:
    """The card's content as raw bytes: the file itself, or a raw copy of a qcow2."""

    def __init__(self, image: Path, fmt: str) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if fmt == "raw":
            self.path = image
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="sdqtest-guest-view-",
                                                    dir=image.parent)
            self.path = Path(self._tmp.name) / "card.raw"
            _qemu_img(["convert", "-f", fmt, "-O", "raw", "-S", "4k", str(image),
                       str(self.path)])

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()

    def read(self, offset: int, length: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def all_equal(self, offset: int, length: int, byte: int) -> bool:
        """Whether every byte of the range is ``byte`` (read in 16 MiB pieces)."""
        chunk = 16 * MIB
        ref = bytes([byte]) * chunk
        with open(self.path, "rb") as f:
            f.seek(offset)
            left = length
            while left:
                n = min(chunk, left)
                if f.read(n) != ref[:n]:
                    return False
                left -= n
        return True


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class CardVerdict:
    """Host-side checks of the card after a guest run: each check and what it found."""

    checks: dict[str, bool]
    details: list[str]

    @property
    def ok(self) -> bool:
        return all(self.checks.values())


def check_integrity(view: RawView, lay: CardLayout, wrote_pattern: bool) -> CardVerdict:
    """The guest's pattern is where it wrote it, the guards are intact, and the
    image holds data nowhere outside the regions of the layout."""
    checks: dict[str, bool] = {}
    details: list[str] = []
    if wrote_pattern:
        got = view.read(lay.pattern_at, lay.pattern_bytes)
        checks["pattern present"] = got == lay.pattern_file()
        if not checks["pattern present"]:
            bad = next(i for i in range(0, len(got), BLOCK)
                       if got[i:i + BLOCK] != block((lay.pattern_at + i) // BLOCK, PATTERN_SEED))
            details.append(f"pattern differs first at block {(lay.pattern_at + bad) // BLOCK}")
    guards = [view.read(g, GUARD) == pattern(g // BLOCK, GUARD // BLOCK, GUARD_SEED)
              for g in lay.guards()[:2]]
    checks["pattern guards intact"] = all(guards)
    checks["read region intact"] = view.read(lay.read_at, lay.read_bytes) == lay.read_content()
    outside = [(a, b) for off, n in data_extents(view.path)
               for a, b in uncovered(off, off + n, lay.written_regions())
               if not view.all_equal(a, b - a, 0)]
    checks["nothing written outside the regions"] = not outside
    if outside:
        details.append(f"data outside the regions at bytes {outside[0][0]}..{outside[0][1]}")
    return CardVerdict(checks, details)


def uncovered(start: int, end: int, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of [start, end) outside every (offset, length) region."""
    parts = [(start, end)]
    for r0, rn in regions:
        r1 = r0 + rn
        parts = [p for a, b in parts for p in ((a, min(b, r0)), (max(a, r1), b)) if p[0] < p[1]]
    return parts


def check_erase(view: RawView, lay: CardLayout) -> tuple[str, CardVerdict]:
    """What the erase region reads as (``0xff``, ``0x00``, or ``not erased``), with
    the guards either side checked intact."""
    checks: dict[str, bool] = {}
    details: list[str] = []
    erased = "not erased"
    for byte in (0xFF, 0x00):
        if all(view.all_equal(s, MIB, byte) for s in lay.erase_samples()) and \
                view.all_equal(lay.erase_at, lay.erase_bytes, byte):
            erased = f"0x{byte:02x}"
            break
    checks["range erased"] = erased != "not erased"
    if erased == "not erased":
        kept = [s for s in lay.erase_samples()
                if view.read(s, MIB) == pattern(s // BLOCK, MIB // BLOCK, GUARD_SEED)]
        details.append(f"{len(kept)} of {len(lay.erase_samples())} prefilled pieces unchanged")
    checks["erase guards intact"] = all(
        view.read(g, GUARD) == pattern(g // BLOCK, GUARD // BLOCK, GUARD_SEED)
        for g in lay.guards()[2:])
    return erased, CardVerdict(checks, details)
