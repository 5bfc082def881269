"""harness.bugs.tree: what --verify changes in a QEMU tree is undone byte for byte."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.bugs.tree import MESON_ANCHOR, TreeEdits, git_status
from harness.errors import UsageError

PATCH = """\
diff --git a/hw/sd/sd.c b/hw/sd/sd.c
--- a/hw/sd/sd.c
+++ b/hw/sd/sd.c
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
"""


def _tree(tmp: Path) -> dict[str, bytes]:
    files = {"tests/qtest/meson.build": f"qtests_x86_64 = []\n{MESON_ANCHOR}\n".encode(),
             "hw/sd/sd.c": b"one\ntwo\nthree\n"}
    for rel, data in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(tmp)], check=True)
    subprocess.run(["git", "-C", str(tmp), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "t"], check=True)
    return files


def test_edits_are_undone_exactly(tmp_path: Path) -> None:
    files = _tree(tmp_path)
    before = git_status(tmp_path)
    patch = tmp_path.parent / "fix.patch"
    patch.write_text(PATCH)
    e = TreeEdits(tmp_path)
    e.write(Path("tests/qtest/sdqtest-0001-x-test.c"), b"int main(void) { return 1; }\n")
    e.add_qtests(["sdqtest-0001-x-test"])
    assert e.apply_patch(patch) is None
    text = (tmp_path / "tests/qtest/meson.build").read_text()
    assert text.index("qtests_x86_64 += ['sdqtest-0001-x-test']") < text.index(MESON_ANCHOR)
    assert (tmp_path / "hw/sd/sd.c").read_bytes() == b"one\nTWO\nthree\n"
    assert git_status(tmp_path) != before
    e.restore()
    assert git_status(tmp_path) == before == ""
    for rel, data in files.items():
        assert (tmp_path / rel).read_bytes() == data
    assert not (tmp_path / "tests/qtest/sdqtest-0001-x-test.c").exists()


def test_a_patch_that_does_not_apply_changes_nothing(tmp_path: Path) -> None:
    _tree(tmp_path)
    patch = tmp_path.parent / "bad.patch"
    patch.write_text(PATCH.replace("-two", "-zwei"))
    e = TreeEdits(tmp_path)
    assert e.apply_patch(patch)
    e.restore()
    assert git_status(tmp_path) == ""


def test_a_meson_build_without_the_anchor_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tests/qtest").mkdir(parents=True)
    (tmp_path / "tests/qtest/meson.build").write_text("nothing here\n")
    with pytest.raises(UsageError, match="cannot add tests"):
        TreeEdits(tmp_path).add_qtests(["x-test"])


def test_a_hard_linked_copy_is_never_written_through(tmp_path: Path) -> None:
    """bugs-src/ hard-links the release's files: an edit or a restore of the
    tree replaces its file, the other link keeps the release's bytes."""
    (tmp_path / "tree").mkdir()
    f = tmp_path / "tree" / "sd.c"
    f.write_bytes(b"release\n")
    other = tmp_path / "copy-sd.c"
    os.link(f, other)
    e = TreeEdits(tmp_path / "tree")
    e.write(Path("sd.c"), b"patched\n")
    assert f.read_bytes() == b"patched\n" and other.read_bytes() == b"release\n"
    e.restore()
    assert f.read_bytes() == b"release\n" and other.read_bytes() == b"release\n"
