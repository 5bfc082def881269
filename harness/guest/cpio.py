"""Writing a cpio archive in the ``newc`` format the Linux kernel unpacks as initramfs."""

from __future__ import annotations

import gzip
import stat
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class CpioEntry:
    """One archive member: a directory, a regular file or a symlink (``target``)."""

    path: str  #: without a leading slash: ``bin/busybox``
    mode: int  #: full st_mode (type and permission bits)
    data: bytes = b""


def directory(path: str) -> CpioEntry:
    return CpioEntry(path, stat.S_IFDIR | 0o755)


def file(path: str, data: bytes, executable: bool = False) -> CpioEntry:
    return CpioEntry(path, stat.S_IFREG | (0o755 if executable else 0o644), data)


def symlink(path: str, target: str) -> CpioEntry:
    return CpioEntry(path, stat.S_IFLNK | 0o777, target.encode())


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _member(ino: int, e: CpioEntry) -> bytes:
    name = e.path.lstrip("/").encode() + b"\0"
    nlink = 2 if stat.S_ISDIR(e.mode) else 1
    fields = (ino, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, 0, 0, len(name), 0)
    head = b"070701" + b"".join(f"{v:08X}".encode() for v in fields)
    return head + name + _pad(len(head) + len(name)) + e.data + _pad(len(e.data))


def archive(entries: Iterable[CpioEntry]) -> bytes:
    """The uncompressed newc archive, with its ``TRAILER!!!``."""
    parts = [_member(i + 1, e) for i, e in enumerate(entries)]
    parts.append(_member(0, CpioEntry("TRAILER!!!", 0)))
    return b"".join(parts)


def gz_archive(entries: Iterable[CpioEntry]) -> bytes:
    """The archive gzip-compressed (Debian kernels unpack gzip initramfs)."""
    return gzip.compress(archive(entries), compresslevel=6, mtime=0)


def read_archive(data: bytes) -> list[CpioEntry]:
    """Members of an (uncompressed or gzip) newc archive, for tests and checks."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out: list[CpioEntry] = []
    pos = 0
    while pos < len(data):
        if data[pos:pos + 6] != b"070701":
            if not data[pos:].strip(b"\0"):
                break  # padding between concatenated archives
            raise ValueError(f"not a newc member at offset {pos}")
        fields = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name_at = pos + 110
        name = data[name_at:name_at + namesize - 1].decode()
        pos = name_at + namesize
        pos += -pos % 4
        body = data[pos:pos + size]
        pos += size
        pos += -pos % 4
        if name != "TRAILER!!!":
            out.append(CpioEntry(name, mode, body))
    return out
