"""Where sdqtest keeps what it generates (QEMU builds, images, reports) and
where it finds the data it ships (:func:`package_data`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from harness.errors import SdqtestError


def cache_dir() -> Path:
    """``$SDQTEST_CACHE``, else ``$XDG_CACHE_HOME/sdqtest``, else ``~/.cache/sdqtest``."""
    env = os.environ.get("SDQTEST_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "sdqtest").resolve()


def package_data(*parts: str) -> Path:
    """The data file or folder ``harness/PARTS...`` shipped in the package
    (``images/recipes.toml``, ``bugs/data``, ...), found through
    :mod:`importlib.resources`, so the same code reads it from a checkout, an
    editable install or an installed wheel (and imports no subpackage).

    A file system path: the C tests are compiled from it and QEMU reads files by
    name, so the package must be installed as files (a wheel is; a zip is not).
    """
    found = resources.files("harness").joinpath(*parts)
    if not isinstance(found, Path):
        raise SdqtestError(f"sdqtest's package data {'/'.join(parts)} is not on the file "
                           f"system ({found!r}): install sdqtest unzipped (pip install)")
    return found


def qemu_dir() -> Path:
    """Root of the side-by-side QEMU builds: one folder per build name."""
    return cache_dir() / "qemu"


def images_dir() -> Path:
    """Generated SD card images (from the recipes in ``harness/images/recipes.toml``)."""
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
