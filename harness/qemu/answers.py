"""QEMU's answers kept by the binary's contents: ask once per build.

What a build answers about itself does not change while the build does not:
its probe (``query-version``, ``query-machines``, ``device-list-properties``),
the value each property realises on each machine type (the compat matrix),
whether a device configuration starts or is refused (the realize cases).
Each answer is kept in the sdqtest cache under a key made of the binary's
SHA-256 (worked out once per path, size, mtime and inode: the size/mtime
shortcut) and of the module files QEMU may load from beside it (their
names, sizes and mtimes: the qtest accelerator is one), so that a rebuilt
binary or a changed module is asked again.  Only clean answers are kept:
a QEMU that hung or died is asked again next time.

``SDQTEST_FRESH=1`` in the environment asks QEMU every time (nothing is
read from the cache; answers are still written).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness import paths

#: Version of the files' shape: another is asked again.
FORMAT = 1

T = TypeVar("T")


def folder() -> Path:
    return paths.cache_dir() / "qemu-answers"


def fresh() -> bool:
    """``$SDQTEST_FRESH`` is set: ask QEMU, whatever is cached."""
    return os.environ.get("SDQTEST_FRESH", "") not in ("", "0")


def _module_files(binary: Path) -> list[Path]:
    """Files QEMU may load as modules: a build tree's beside the binary, an
    installed build's in its bundle (``qemu-bundle/usr/lib/*/qemu``)."""
    d = binary.parent
    out = sorted(d.glob("*.so")) + sorted(d.glob("qemu-bundle/usr/lib/*/qemu/*.so"))
    return out + sorted(d.glob("qemu-bundle/usr/lib/qemu/*.so"))


@functools.lru_cache(maxsize=64)
def _digest_of(path: str, size: int, mtime_ns: int, ino: int) -> str:
    """SHA-256 of the file's contents, kept on disk under its stat (the
    shortcut: the same path, size, mtime and inode are the same contents)."""
    memo = folder() / "digests.json"
    key = f"{path}:{size}:{mtime_ns}:{ino}"
    with contextlib.suppress(OSError, ValueError):
        got = json.loads(memo.read_text()).get(key)
        if isinstance(got, str):
            return got
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(memo.read_text()) if memo.exists() else {}
        known[key] = digest
        _write(memo, known)
    return digest


def file_digest(path: str | Path) -> str:
    """SHA-256 (hex) of the file's contents, hashed once per path, size,
    mtime and inode (:func:`_digest_of`)."""
    p = Path(path).absolute()
    st = p.stat()
    return _digest_of(str(p), st.st_size, st.st_mtime_ns, st.st_ino)


def build_id(binary: str | Path) -> str:
    """The key of ``binary``'s answers: its contents and its modules' stat."""
    p = Path(binary).absolute()
    h = hashlib.sha256(file_digest(p).encode())
    for m in _module_files(p):
        with contextlib.suppress(OSError):
            ms = m.stat()
            h.update(f"\0{m.name}:{ms.st_size}:{ms.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _write(path: Path, data: Any) -> None:
    """Write ``data`` as JSON whole, then rename (readers never see half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".answer-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file(binary: str | Path, kind: str, key: str) -> Path:
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    return folder() / build_id(binary) / f"{kind}-{name}.json"


def cached(binary: str | Path, kind: str, key: str, ask: Callable[[], T],
           keep: Callable[[T], bool] = lambda _: True) -> T:
    """``ask()``'s answer for ``key`` (of ``kind``) on ``binary``: from the
    cache, else asked and kept when ``keep(answer)`` (JSON-able answers only)."""
    try:
        path = _file(binary, kind, key)
    except OSError:
        return ask()
    if not fresh():
        with contextlib.suppress(OSError, ValueError, KeyError):
            data = json.loads(path.read_text())
            if data["format"] == FORMAT and data["key"] == key:
                return data["answer"]  # type: ignore[no-any-return]
    answer = ask()
    if keep(answer):
        with contextlib.suppress(OSError, TypeError, ValueError):
            _write(path, {"format": FORMAT, "key": key, "answer": answer})
    return answer
