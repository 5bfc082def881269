"""Just enough ELF64 little-endian reading: sections, DT_NEEDED/RUNPATH, PT_INTERP, modinfo."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import GuestError

PT_INTERP = 3
PT_DYNAMIC = 2
DT_NEEDED = 1
DT_STRTAB = 5
DT_RPATH = 15
DT_RUNPATH = 29


class ElfError(GuestError):
    """Not an ELF64 little-endian file, or a malformed one."""


@dataclass
class ElfInfo:
    """What the guest assembler needs from one ELF file."""

    needed: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    interp: str | None = None


def _check(data: bytes, path: Path) -> None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path}: not an ELF64 little-endian file")


def _cstr(data: bytes, off: int) -> str:
    end = data.index(b"\0", off)
    return data[off:end].decode(errors="replace")


def dynamic_info(path: Path) -> ElfInfo:
    """DT_NEEDED, DT_RUNPATH (or DT_RPATH) and PT_INTERP of an executable or library."""
    data = path.read_bytes()
    _check(data, path)
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads: list[tuple[int, int, int]] = []  # vaddr, offset, filesz
    dyn: tuple[int, int] | None = None
    info = ElfInfo()
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_INTERP:
            info.interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
        elif p_type == PT_DYNAMIC:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        return info
    entries = []
    strtab_vaddr = None
    for off in range(dyn[0], dyn[0] + dyn[1], 16):
        tag, val = struct.unpack_from("<qQ", data, off)
        if tag == 0:
            break
        if tag == DT_STRTAB:
            strtab_vaddr = val
        entries.append((tag, val))
    if strtab_vaddr is None:
        raise ElfError(f"{path}: dynamic section without a string table")
    strtab = next((o + strtab_vaddr - v for v, o, n in loads if v <= strtab_vaddr < v + n), None)
    if strtab is None:
        raise ElfError(f"{path}: string table outside the loaded segments")
    for tag, val in entries:
        if tag == DT_NEEDED:
            info.needed.append(_cstr(data, strtab + val))
        elif tag in (DT_RUNPATH, DT_RPATH):
            info.runpath += [p for p in _cstr(data, strtab + val).split(":") if p]
    return info


def section(path: Path, name: str) -> bytes | None:
    """The contents of section ``name`` (e.g. ``.modinfo`` of a kernel module), or None."""
    data = path.read_bytes()
    _check(data, path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple[int, int, int]:
        sh_name, _type, _flags, _addr, sh_offset, sh_size = struct.unpack_from(
            "<IIQQQQ", data, shoff + i * shentsize)
        return sh_name, sh_offset, sh_size

    _, stroff, _ = header(shstrndx)
    for i in range(shnum):
        sh_name, off, size = header(i)
        if _cstr(data, stroff + sh_name) == name:
            return data[off:off + size]
    return None


def modinfo(path: Path) -> dict[str, list[str]]:
    """A kernel module's ``.modinfo`` fields (``depends``, ``alias``...), each a list."""
    raw = section(path, ".modinfo") or b""
    out: dict[str, list[str]] = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            k, v = item.decode(errors="replace").split("=", 1)
            out.setdefault(k, []).append(v)
    return out
