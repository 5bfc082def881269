"""Where sdqtest keeps what it generates: QEMU builds, images, reports."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SDQTEST_CACHE``, else ``$XDG_CACHE_HOME/sdqtest``, else ``~/.cache/sdqtest``."""
    env = os.environ.get("SDQTEST_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "sdqtest").resolve()


def qemu_dir() -> Path:
    """Root of the side-by-side QEMU builds: one folder per build name."""
    return cache_dir() / "qemu"


def images_dir() -> Path:
    """Generated SD card images (from the recipes in ``images/``)."""
    return cache_dir() / "images"
