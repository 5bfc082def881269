"""Checks of what the user gave, before any QEMU starts.

Each problem is one line that names it and the fix.  Where QEMU would
refuse the same input, the message says so: the rules are the model's,
which mirror QEMU's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.check.runner import UserImage
from harness.errors import UsageError
from harness.model.compat import UnknownMachineError, resolve_machine
from harness.model.sdcard import check_image_size
from harness.qemu.builds import QemuBuild


class InputError(UsageError):
    """A bad input, with the fix in its message."""


def check_build(build: QemuBuild) -> None:
    if not build.has_sdhci_pci:
        raise InputError(
            f"QEMU {build.name} ({build.binary}) has no sdhci-pci/sd-card device; "
            "use a build configured with CONFIG_SDHCI_PCI (QEMU's default devices), "
            "or --board for an ARM build's boards")


def check_machine(build: QemuBuild, machine: str) -> None:
    if build.offers(machine):
        return
    try:
        resolve_machine(machine, build.profile)
    except UnknownMachineError as e:
        q35 = build.versioned_machines("q35")
        offer = f"q35, pc, pc-q35-{q35[0][7:]}..{q35[-1][7:]}" if q35 else "see qemu list"
        raise InputError(f"QEMU {build.name} has no machine type {machine!r} ({e}); "
                         f"it offers {offer}") from e


def image_format(path: Path) -> str:
    """``qemu-img info``'s format, or raw when qemu-img is not there."""
    qimg = shutil.which("qemu-img")
    if qimg is None:
        return "raw"
    out = subprocess.run([qimg, "info", "-U", "--output=json", str(path)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode:
        raise InputError(f"qemu-img cannot read {path}: {out.stderr.strip()}")
    return str(json.loads(out.stdout).get("format", "raw"))


def user_image(path_text: str, builds: list[QemuBuild]) -> UserImage:
    """Validate a user's card image and prepare what the model reads."""
    path = Path(path_text).expanduser()
    if not path.exists():
        raise InputError(f"card image {path} does not exist; give the path of a raw or "
                         "qcow2 image")
    if not path.is_file():
        raise InputError(f"card image {path} is not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(f"card image {path} is not readable by this user; fix its "
                         "permissions or run as its owner (sdqtest never writes it)")
    fmt = image_format(path)
    raw = path
    if fmt != "raw":
        qimg = shutil.which("qemu-img")
        if qimg is None:
            raise InputError(f"{path} is {fmt}: install qemu-utils to let the model read it")
        tmp = Path(tempfile.mkdtemp(prefix="sdqtest-image-")) / "card.raw"
        subprocess.run([qimg, "convert", "-U", "-O", "raw", str(path), str(tmp)],
                       check=True, capture_output=True, timeout=3600)
        raw = tmp
    size = raw.stat().st_size
    for b in builds:
        try:
            check_image_size(size, b.profile)
        except ValueError as e:
            raise InputError(f"{path}: {e} (QEMU {b.name}); resize it with "
                             f"'qemu-img resize {path} <size>' on a copy") from e
    return UserImage(path.resolve(), fmt, raw.resolve())
