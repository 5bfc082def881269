"""SD card images built from the recipes in ``recipes.toml`` beside this module
(``harness/images/recipes.toml``, package data).

Every 512-byte block ``n`` of a patterned image holds :func:`pattern_block`
``(n)``, so any block's expected content is computable without reading the
image.  Large cards are sparse files: a 64 GiB SDXC image costs only its two
patterned ends on disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from harness import paths
from harness.errors import SdqtestError

#: The image recipes, shipped as package data.
RECIPES_FILE = paths.package_data("images", "recipes.toml")
BLOCK = 512
_MULT = 0x9E3779B97F4A7C15


class ImageError(SdqtestError):
    """No such recipe, or the image cannot be made."""


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
    files: dict[str, str] = field(default_factory=dict)
    pattern_files: dict[str, int] = field(default_factory=dict)
    #: eMMC images: bytes per boot partition and of the RPMB partition.
    boot_partition_size: int = 0
    rpmb_partition_size: int = 0

    @property
    def user_size(self) -> int:
        """The card's user area: the image less the eMMC boot and RPMB partitions."""
        return self.size - 2 * self.boot_partition_size - self.rpmb_partition_size

    def partition_starts(self) -> dict[str, int]:
        """Where each eMMC partition starts in the image file.  QEMU's layout,
        found by writing through each partition and reading the file back:
        boot 1, boot 2, RPMB, then the user area, back to back."""
        b, r = self.boot_partition_size, self.rpmb_partition_size
        return {"boot1": 0, "boot2": b, "rpmb": 2 * b, "user": 2 * b + r}

    def emmc_props(self) -> dict[str, int]:
        """The ``-device emmc`` size properties this image is laid out for."""
        out: dict[str, int] = {}
        if self.boot_partition_size:
            out["boot-partition-size"] = self.boot_partition_size
        if self.rpmb_partition_size:
            out["rpmb-partition-size"] = self.rpmb_partition_size
        return out

    def file_contents(self) -> dict[str, bytes]:
        """The files a ``fat32`` recipe puts on the card, by path."""
        out = {k: v.encode() for k, v in self.files.items()}
        for k, n in self.pattern_files.items():
            out[k] = b"".join(pattern_block(i) for i in range((n + BLOCK - 1) // BLOCK))[:n]
        return out

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


#: The parsed recipes file, by its (path, mtime, size): every run of a check
#: looks its image's recipe up, and parsing the TOML each time was 8% of a
#: ``check --group data`` profile.
_parsed: dict[tuple[str, int, int], dict[str, Recipe]] = {}


def recipes() -> dict[str, Recipe]:
    """Every image recipe of :data:`RECIPES_FILE`, by name (parsed again
    only when the file changed)."""
    st = RECIPES_FILE.stat()
    key = (str(RECIPES_FILE), st.st_mtime_ns, st.st_size)
    cached = _parsed.get(key)
    if cached is None:
        with open(RECIPES_FILE, "rb") as f:
            data = tomllib.load(f)
        cached = {name: Recipe(name=name, **fields) for name, fields in data.items()}
        _parsed.clear()
        _parsed[key] = cached
    return dict(cached)


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


def _tool(cmd: str, package: str) -> str:
    path = shutil.which(cmd) or (f"/usr/sbin/{cmd}" if os.path.exists(f"/usr/sbin/{cmd}")
                                 else None)
    if path is None:
        raise ImageError(f"{cmd} not found: install Debian's {package} "
                         f"(apt-get install {package}; 'sdqtest qemu install' does it as root)")
    return path


def _run(argv: list[str], what: str, env: dict[str, str] | None = None) -> None:
    try:
        subprocess.run(argv, check=True, capture_output=True, timeout=300, env=env)
    except subprocess.CalledProcessError as e:
        raise ImageError(f"{what} failed: {e.stderr.decode(errors='replace').strip()}") from e


def _build_raw(r: Recipe, tmp: Path) -> None:
    with open(tmp, "wb") as f:
        f.truncate(r.size)
        if r.pattern == "all":
            _write_pattern(f, 0, r.size // BLOCK)
        elif r.pattern == "ends":
            _write_pattern(f, 0, r.ends // BLOCK)
            f.seek(r.size - r.ends)
            _write_pattern(f, (r.size - r.ends) // BLOCK, r.size // BLOCK)
    if r.pattern == "fat32":
        _build_fat32(r, tmp)


def _build_fat32(r: Recipe, img: Path) -> None:
    """mkfs.fat over the whole card, then the recipe's files with mcopy;
    fixed volume id and timestamps so the image is the same every time."""
    mkfs, mcopy, mmd = (_tool("mkfs.fat", "dosfstools"), _tool("mcopy", "mtools"),
                        _tool("mmd", "mtools"))
    _run([mkfs, "-F", "32", "-s", "1", "-S", "512", "-n", "SDQTEST", "-i", "5D0A7E57",
          "--invariant", str(img)], "mkfs.fat")
    stage = img.parent / f"{img.name}.files"
    shutil.rmtree(stage, ignore_errors=True)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1", SOURCE_DATE_EPOCH="1700000000")
    try:
        for rel, data in sorted(r.file_contents().items()):
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            os.utime(p, (1_700_000_000, 1_700_000_000))
        for d in sorted({str(Path(rel).parent) for rel in r.file_contents()} - {"."}):
            _run([mmd, "-i", str(img), f"::/{d}"], "mmd", env)
        for rel in sorted(r.file_contents()):
            _run([mcopy, "-m", "-i", str(img), str(stage / rel), f"::/{rel}"], "mcopy", env)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def ensure(name: str) -> Path:
    """Path of the generated image for recipe ``name``, building it if needed.

    The file is built under a temporary name and renamed, so a half-built
    image is never used; it is made read-only to keep checks honest.  A
    qcow2 recipe also leaves its raw twin (:func:`raw_twin`) for the model.
    """
    r = recipe(name)
    if r.format not in ("raw", "qcow2"):
        raise ImageError(f"recipe {name}: format {r.format!r} is not raw or qcow2")
    out = paths.images_dir() / f"{name}.{'img' if r.format == 'raw' else 'qcow2'}"
    raw = raw_twin(name) if r.format == "qcow2" else out
    if out.is_file() and raw.is_file() and raw.stat().st_size == r.size:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = raw.with_suffix(f".tmp{os.getpid()}")
    _build_raw(r, tmp)
    tmp.chmod(0o444)
    tmp.replace(raw)
    if r.format == "qcow2":
        qimg = _tool("qemu-img", "qemu-utils")
        tmpq = out.with_suffix(f".tmp{os.getpid()}")
        _run([qimg, "convert", "-f", "raw", "-O", "qcow2", str(raw), str(tmpq)], "qemu-img")
        tmpq.chmod(0o444)
        tmpq.replace(out)
    return out


def raw_twin(name: str) -> Path:
    """The raw image a recipe's content lives in (the image itself for raw)."""
    r = recipe(name)
    suffix = "img" if r.format == "raw" else "raw.img"
    return paths.images_dir() / f"{name}.{suffix}"


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


def guest_extents(path: Path, fmt: str) -> list[tuple[int, int]]:
    """``(offset, length)`` extents, in card (guest) offsets, where ``path``
    holds data: ``SEEK_DATA`` extents of a raw file, the data extents
    ``qemu-img map`` reports for a container (qcow2...)."""
    if fmt == "raw":
        return data_extents(path)
    qimg = _tool("qemu-img", "qemu-utils")
    try:
        text = subprocess.run([qimg, "map", "--output=json", "-U", "-f", fmt, str(path)],
                              check=True, capture_output=True, text=True, timeout=300).stdout
    except subprocess.CalledProcessError as e:
        raise ImageError(f"qemu-img map {path} failed: {e.stderr.strip()}") from e
    return [(int(e["start"]), int(e["length"])) for e in json.loads(text) if e.get("data")]


def merge_extents(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, with overlapping or touching extents joined."""
    out: list[tuple[int, int]] = []
    for off, length in sorted(s for s in spans if s[1] > 0):
        if out and off <= out[-1][0] + out[-1][1]:
            start = out[-1][0]
            out[-1] = (start, max(out[-1][1], off + length - start))
        else:
            out.append((off, length))
    return out
