"""Where sdqtest keeps what it generates: QEMU builds, images, reports."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
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


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder/.lock`` exclusively: one process at a time fills a cache
    folder (parallel pytest workers, two sdqtest commands)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
