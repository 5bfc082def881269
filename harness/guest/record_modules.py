"""Kernel modules for a recording guest: read from an extracted Debian image package.

Any architecture (the guest layer's ELF reader is 64-bit only: ``.modinfo``'s
``depends=`` is read from the module's bytes), plain or ``.ko.xz`` (decompressed
here: busybox's insmod hands the file to ``init_module`` as it is).
"""

from __future__ import annotations

import lzma
import re
from pathlib import Path

from harness.provision.install import InstallError


def module_index(root: Path) -> tuple[str, dict[str, Path]]:
    """The kernel version of an extracted image package and its modules by name
    (``sdhci_pci`` for ``sdhci-pci.ko`` or ``sdhci-pci.ko.xz``; ``lib`` or ``usr/lib``)."""
    mods = next((d for d in (root / "lib/modules", root / "usr/lib/modules") if d.is_dir()),
                None)
    if mods is None or not any(mods.iterdir()):
        raise InstallError(f"record: no lib/modules in {root}")
    version = sorted(p.name for p in mods.iterdir())[-1]
    index = {}
    for ko in (mods / version).rglob("*.ko*"):
        index[ko.name.split(".ko")[0].replace("-", "_")] = ko
    return version, index


def module_bytes(ko: Path) -> bytes:
    """A module's ELF (an ``.xz`` one decompressed: busybox's insmod passes the file
    to init_module as it is)."""
    data = ko.read_bytes()
    return lzma.decompress(data) if ko.name.endswith(".xz") else data


def module_closure(index: dict[str, Path], wanted: tuple[str, ...]
                   ) -> list[tuple[str, bytes]]:
    """``wanted`` modules with their ``.modinfo`` ``depends``, dependencies first, as
    ``(file name, ELF)``; a name not in ``index`` is built in (the 64-bit ELF reader
    does not take a 32-bit ARM module: ``depends=`` is read from the bytes)."""
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        key = name.replace("-", "_")
        ko = index.get(key)
        if ko is None or key in seen:
            return
        seen.add(key)
        data = module_bytes(ko)
        m = re.search(rb"\x00depends=([^\x00]*)\x00", b"\x00" + data)
        for dep in (m.group(1).decode().split(",") if m else []):
            if dep:
                visit(dep)
        order.append((ko.name.split(".ko")[0] + ".ko", data))

    for w in wanted:
        visit(w)
    return order
