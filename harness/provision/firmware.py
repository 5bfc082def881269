"""BIOS and option ROM files: where this host has them, and whether a QEMU
binary finds the ones a machine loads.

A QEMU run from a build directory looks for firmware in its data
directories (``-L help`` lists them: ``qemu-bundle/<prefix>/share/qemu``
from 7.0, ``pc-bios`` before).  Debian's ``+ds`` trees ship no blobs and a
build of the binary alone installs none, so a PC machine's
``kvmvapic.bin`` may be missing; QEMU then refuses to start the machine.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.provision.install import installed_builds

#: Where Debian's packages put firmware (seabios, ipxe-qemu, qemu-system-data).
HOST_DIRS: tuple[Path, ...] = (Path("/usr/share/seabios"), Path("/usr/lib/ipxe/qemu"),
                               Path("/usr/share/qemu"))
#: What a PC machine loads (q35 and pc: SeaBIOS, the vapic ROM, -kernel's loader).
PC_FIRMWARE: tuple[str, ...] = ("bios-256k.bin", "kvmvapic.bin", "linuxboot_dma.bin")


def fallback_dirs() -> list[Path]:
    """Directories holding firmware a build may lack: the host's packages',
    then the installed Debian builds' own (newest first)."""
    dirs = [d for d in HOST_DIRS if d.is_dir()]
    dirs += [b.root / "usr" / "share" / "qemu" for b in reversed(installed_builds())]
    return [d for d in dirs if d.is_dir()]


def data_dirs(binary: Path | str, timeout: float = 30.0) -> list[Path]:
    """The data directories ``binary`` searches (``-L help``); [] if it
    cannot say."""
    try:
        out = subprocess.run([str(binary), "-L", "help"], capture_output=True, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [Path(line.strip()) for line in out.splitlines() if line.strip().startswith("/")]


def search_args(binary: Path | str, needed: Sequence[str] = PC_FIRMWARE) -> list[str]:
    """``-L`` options that let ``binary`` find every file of ``needed``: none
    when its own data directories have them; else its own directories first
    (QEMU searches ``-L`` directories before its defaults), then the first
    :func:`fallback_dirs` entry holding what it lacks."""
    own = data_dirs(binary)
    lacking = [n for n in needed if not any((d / n).is_file() for d in own)]
    if not lacking:
        return []
    extra = next((d for d in fallback_dirs() if all((d / n).is_file() for n in lacking)), None)
    if extra is None:
        return []
    return [a for d in [*own, extra] for a in ("-L", str(d))]
