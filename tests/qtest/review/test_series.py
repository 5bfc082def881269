"""Reading a series (mbox, directory, git range) and applying it on a scratch clone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.review import series, tree

HERE = Path(__file__).parent / "series"


def test_a_directory_of_format_patch_files_leaves_the_cover_letter_out() -> None:
    s = series.read(str(HERE / "databug"))
    assert [p.subject for p in s.patches] == [
        "hw/sd/sdcard: Factor the write-protect test out of sd_erase()",
        "hw/sd/sdcard: Advertise SET_BLOCK_COUNT (CMD23) in the SCR",
        "hw/sd/sdcard: Count the blocks of an erase range once"]
    assert s.patches[1].files == ("hw/core/machine.c", "hw/sd/sd.c")
    assert s.label(3) == "[3/3] hw/sd/sdcard: Count the blocks of an erase range once"


def test_an_mbox_splits_into_its_messages(tmp_path: Path) -> None:
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(p.read_text() for p in sorted((HERE / "databug").iterdir())))
    s = series.read(str(mbox))
    assert len(s.patches) == 3
    assert s.patches[0].text is not None and s.patches[0].text.startswith("From ")


def test_a_folded_subject_is_unfolded_and_the_patch_tag_dropped() -> None:
    msg = "From: a\nSubject: [PATCH v4 2/7] hw/sd: Switch read/write\n primitive to buf+len\n\nx"
    assert series.subject_of(msg) == "hw/sd: Switch read/write primitive to buf+len"


def test_no_patch_in_it_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "0000-cover-letter.patch").write_text("From 1234567 Mon\nSubject: x\n\nhi\n")
    with pytest.raises(series.SeriesError, match="no patch in it"):
        series.read(str(tmp_path))
    with pytest.raises(series.SeriesError, match="not a file"):
        series.read(str(tmp_path / "absent"))


def test_changed_lines_are_new_side_numbers() -> None:
    diff = ("diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -10,3 +10,4 @@\n ctx\n-old\n"
            "+new1\n+new2\n ctx\n")
    assert series.changed_lines(diff) == {"f.c": [11, 12]}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "qemu"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "sd.c").write_text("a\nb\nc\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "base")
    (r / "sd.c").write_text("a\nB\nc\n")
    git(r, "commit", "-q", "-am", "hw/sd: change b")
    (r / "sd.c").write_text("a\nB\nc\nd\n")
    git(r, "commit", "-q", "-am", "hw/sd: add d")
    return r


def test_a_git_range_is_its_commits_oldest_first(repo: Path) -> None:
    s = series.read("HEAD~2..HEAD", repo)
    assert [p.subject for p in s.patches] == ["hw/sd: change b", "hw/sd: add d"]
    assert s.base == git(repo, "rev-parse", "HEAD~2").strip()
    with pytest.raises(series.SeriesError, match="no commit"):
        series.read("HEAD..HEAD", repo)


def test_a_mailed_series_applies_on_a_clone_the_same_commits_every_time(
        repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "patches"
    git(repo, "format-patch", "-q", "-o", str(out), "HEAD~2..HEAD")
    before = git(repo, "status", "--porcelain") + git(repo, "rev-parse", "HEAD")
    s = series.read(str(out))
    scratch = tree.Scratch(repo, tmp_path / "work")
    base = scratch.prepare("HEAD~2")
    first = scratch.apply(s, base)
    again = scratch.apply(s, scratch.prepare("HEAD~2"))
    assert first == again and len(first) == 2
    assert (scratch.clone / "sd.c").read_text() == "a\nB\nc\nd\n"
    assert git(repo, "status", "--porcelain") + git(repo, "rev-parse", "HEAD") == before


def test_a_patch_that_does_not_apply_names_itself_and_leaves_the_clone_on_base(
        repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "patches"
    git(repo, "format-patch", "-q", "-o", str(out), "HEAD~1..HEAD")  # needs 'B'
    scratch = tree.Scratch(repo, tmp_path / "work")
    base = scratch.prepare("HEAD~2")  # has 'b'
    with pytest.raises(series.SeriesError, match=r"patch \[1/1\] hw/sd: add d does not apply"):
        scratch.apply(series.read(str(out)), base)
    assert scratch.git("rev-parse", "HEAD").stdout.strip() == base
    assert (scratch.clone / "sd.c").read_text() == "a\nb\nc\n"
    assert scratch.git("status", "--porcelain").stdout == ""


def test_not_a_git_tree_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(series.SeriesError, match="not a git tree"):
        tree.Scratch(tmp_path, tmp_path / "work").prepare("HEAD")
