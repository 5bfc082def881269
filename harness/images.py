"""SD card images built from the recipes in ``images/recipes.toml``.

Every 512-byte block ``n`` of a patterned image holds :func:`pattern_block`
``(n)``, so any block's expected content is computable without reading the
image.  Large cards are sparse files: a 64 GiB SDXC image costs only its two
patterned ends on disk.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness import paths

RECIPES_FILE = Path(__file__).resolve().parent.parent / "images" / "recipes.toml"
BLOCK = 512
_MULT = 0x9E3779B97F4A7C15


class ImageError(Exception):
    pass


def pattern_block(n: int) -> bytes:
    """The content of block ``n`` in a patterned image: 64 little-endian
    64-bit words, word ``i`` = ``(n * 2**16 + i) * 0x9E3779B97F4A7C15 mod 2**64``."""
    base = n << 16
    return b"".join(
        (((base + i) * _MULT) & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little") for i in range(64)
    )


@dataclass(frozen=True)
class Recipe:
    name: str
    size: int
    format: str = "raw"
    pattern: str = "all"
    ends: int = 0
    kind: str = ""

    def expected(self, offset: int, length: int) -> bytes:
        """What the generated image holds at ``offset`` (whole blocks or not)."""
        out = bytearray()
        first, last = offset // BLOCK, (offset + length - 1) // BLOCK
        for n in range(first, last + 1):
            out += self._block(n)
        skip = offset - first * BLOCK
        return bytes(out[skip : skip + length])

    def _block(self, n: int) -> bytes:
        start = n * BLOCK
        if self.pattern == "all" or start < self.ends or start >= self.size - self.ends:
            return pattern_block(n)
        return bytes(BLOCK)


def recipes() -> dict[str, Recipe]:
    with open(RECIPES_FILE, "rb") as f:
        data = tomllib.load(f)
    return {name: Recipe(name=name, **fields) for name, fields in data.items()}


def recipe(name: str) -> Recipe:
    r = recipes()
    if name not in r:
        raise ImageError(f"no image recipe {name!r} (known: {', '.join(sorted(r))})")
    return r[name]


def _write_pattern(f: object, start_block: int, end_block: int) -> None:
    chunk = 2048
    for n in range(start_block, end_block, chunk):
        data = b"".join(pattern_block(k) for k in range(n, min(n + chunk, end_block)))
        f.write(data)  # type: ignore[attr-defined]


def ensure(name: str) -> Path:
    """Path of the generated image for recipe ``name``, building it if needed.

    The file is built under a temporary name and renamed, so a half-built
    image is never used; it is made read-only to keep checks honest.
    """
    r = recipe(name)
    if r.format != "raw":
        raise ImageError(f"recipe {name}: only raw images can be generated here")
    out = paths.images_dir() / f"{name}.img"
    if out.is_file() and out.stat().st_size == r.size:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.truncate(r.size)
        if r.pattern == "all":
            _write_pattern(f, 0, r.size // BLOCK)
        else:
            _write_pattern(f, 0, r.ends // BLOCK)
            f.seek(r.size - r.ends)
            _write_pattern(f, (r.size - r.ends) // BLOCK, r.size // BLOCK)
    tmp.chmod(0o444)
    tmp.replace(out)
    return out


def data_extents(path: Path) -> list[tuple[int, int]]:
    """The allocated ``(offset, length)`` extents of a sparse file."""
    out: list[tuple[int, int]] = []
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, end - start))
            pos = end
    return out
