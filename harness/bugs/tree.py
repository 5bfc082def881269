"""Changes to a QEMU source tree that are undone: added files removed,
changed files given back their bytes and mode.

Restored files get a new modification time (not their old one), so that a
build directory ninja has just built from the changed tree sees them as
changed again and rebuilds what the change touched: after the restore and
one more build, tree and build directory are both as they were.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.errors import UsageError

#: The line of tests/qtest/meson.build before which tests are added: the
#: per-target lists (``qtests_x86_64``) are complete there, not yet used.
MESON_ANCHOR = "qtest_executables = {}"


class TreeEdits:
    """Every file of ``root`` changed through this object, to :meth:`restore`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._saved: dict[Path, tuple[bytes, int] | None] = {}

    def _save(self, rel: Path) -> Path:
        path = self.root / rel
        if rel not in self._saved:
            self._saved[rel] = (path.read_bytes(), path.stat().st_mode) if path.exists() \
                else None
        return path

    def write(self, rel: Path, data: bytes) -> None:
        _replace(self._save(rel), data)

    def add_qtests(self, names: list[str]) -> None:
        """Build ``names`` (``NAME-test``, with ``NAME-test.c`` written
        beside) with the x86_64 qtests of tests/qtest/meson.build."""
        rel = Path("tests/qtest/meson.build")
        text = (self.root / rel).read_text()
        if MESON_ANCHOR not in text:
            raise UsageError(f"{self.root / rel} has no line '{MESON_ANCHOR}': cannot add "
                             "tests to this tree's qtests")
        add = ("# added by sdqtest bugs --verify (removed afterwards)\n"
               f"qtests_x86_64 += {names!r}\n\n")
        self.write(rel, text.replace(MESON_ANCHOR, add + MESON_ANCHOR, 1).encode())

    def apply_patch(self, patch: Path) -> str | None:
        """``git apply`` ``patch`` (the tree need not be a git repository);
        None when it applied, else git's complaint."""
        files = subprocess.run(["git", "apply", "--numstat", str(patch)], cwd=self.root,
                               capture_output=True, text=True, timeout=60, check=False)
        if files.returncode != 0:
            return files.stderr.strip() or "git apply --numstat failed"
        for line in files.stdout.splitlines():
            self._save(Path(line.split("\t")[-1]))
        done = subprocess.run(["git", "apply", str(patch)], cwd=self.root,
                              capture_output=True, text=True, timeout=60, check=False)
        return None if done.returncode == 0 else (done.stderr.strip() or "git apply failed")

    def restore(self) -> list[str]:
        """Put every saved file back (or remove it); the paths restored."""
        out = []
        for rel, saved in reversed(list(self._saved.items())):
            path = self.root / rel
            if saved is None:
                path.unlink(missing_ok=True)
            else:
                data, mode = saved
                _replace(path, data)
                os.chmod(path, mode & 0o7777)
            out.append(str(rel))
        self._saved.clear()
        return out


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` as a new file (rename over it): a hard-linked copy of
    the tree elsewhere (``bugs-src/``) is never written through."""
    tmp = path.with_name(f".{path.name}.sdqtest-tmp")
    tmp.write_bytes(data)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def git_status(root: Path) -> str | None:
    """``git status --porcelain`` of ``root`` (None: not a git work tree)."""
    r = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True,
                       text=True, timeout=120, check=False)
    return r.stdout if r.returncode == 0 else None
