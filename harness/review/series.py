"""A patch series as ``sdqtest review`` takes it: an mbox, a directory of
``git format-patch`` files, or a git range of the QEMU tree.

A message without a diff (a cover letter, a reply) is not a patch and is
left out; a series with no patch at all is refused with one line.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import SdqtestError

#: The line that starts each message of an mbox (``git format-patch``'s too).
_FROM = re.compile(r"^From [0-9a-f]{7,40} |^From \S+@\S+ |^From - ", re.M)
_SUBJECT = re.compile(r"^Subject:[ \t]*(.*(?:\n[ \t].*)*)", re.M)
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


class SeriesError(SdqtestError):
    """A series that cannot be read, applied or built (one line, naming the patch)."""


@dataclass(frozen=True)
class Patch:
    """One patch of a series: its subject, its mail text (``None`` for a
    commit of a git range) and the commit when it is one."""

    subject: str
    text: str | None = None
    commit: str = ""
    files: tuple[str, ...] = ()

    def short(self, index: int, total: int) -> str:
        """``[2/3] hw/sd/sdcard: ...``"""
        return f"[{index}/{total}] {self.subject}"


@dataclass
class Series:
    """The patches, in order, and where they came from."""

    source: str
    patches: list[Patch] = field(default_factory=list)
    #: The range's first commit's parent (a git range only).
    base: str = ""

    def label(self, index: int) -> str:
        """Patch ``index`` (1-based) as the report names it."""
        return self.patches[index - 1].short(index, len(self.patches))


def subject_of(message: str) -> str:
    """The Subject header, unfolded, without ``[PATCH n/m]``."""
    m = _SUBJECT.search(message.split("\n\n", 1)[0] + "\n")
    text = re.sub(r"\s*\n[ \t]+", " ", m.group(1)).strip() if m else "(no subject)"
    return re.sub(r"^(\[[^]]*\]\s*)+", "", text)


def files_of(diff: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(b for _, b in _DIFF.findall(diff)))


def split_mbox(text: str) -> list[str]:
    """The messages of an mbox (or of one patch file)."""
    starts = [m.start() for m in _FROM.finditer(text)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)
            if text[a:b].strip()]


def from_messages(source: str, messages: list[str]) -> Series:
    s = Series(source)
    for msg in messages:
        if not _DIFF.search(msg):
            continue  # a cover letter or a reply
        s.patches.append(Patch(subject_of(msg), msg, files=files_of(msg)))
    if not s.patches:
        raise SeriesError(f"{source}: no patch in it (no 'diff --git' in any message)")
    return s


def _git(tree: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise SeriesError(f"git {' '.join(args)} in {tree}: "
                          f"{(r.stderr.strip().splitlines() or ['failed'])[-1]}")
    return r.stdout


def from_range(tree: Path, spec: str) -> Series:
    """``A..B`` of ``tree``: each commit, oldest first, base ``A``."""
    lo, _, hi = spec.partition("..")
    base = _git(tree, "rev-parse", "--verify", f"{lo}^{{commit}}").strip()
    commits = _git(tree, "rev-list", "--reverse", f"{lo}..{hi or 'HEAD'}").split()
    if not commits:
        raise SeriesError(f"git range {spec}: no commit in it")
    s = Series(spec, base=base)
    for c in commits:
        subject = _git(tree, "log", "-1", "--format=%s", c).strip()
        files = tuple(_git(tree, "diff-tree", "--no-commit-id", "--name-only", "-r", c).split())
        s.patches.append(Patch(subject, None, c, files))
    return s


def read(spec: str, tree: Path | None = None) -> Series:
    """A series from a file (mbox or one patch), a directory of patch files
    (``*.patch``, ``*.diff``, ``*.eml``, ``*.mbox``, in name order) or a git
    range ``A..B`` of ``tree``."""
    path = Path(spec).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.suffix in (".patch", ".diff", ".eml", ".mbox") and p.is_file())
        if not files:
            raise SeriesError(f"{spec}: no *.patch, *.diff, *.eml or *.mbox file in it")
        msgs = [m for f in files for m in split_mbox(f.read_text(errors="replace"))]
        return from_messages(spec, msgs)
    if path.is_file():
        return from_messages(spec, split_mbox(path.read_text(errors="replace")))
    if ".." in spec and tree is not None:
        return from_range(tree, spec)
    raise SeriesError(f"{spec}: not a file, a directory of patches"
                      + (" or a git range of the tree" if tree is not None else
                         " (a git range needs --qemu-src)"))


def changed_lines(diff: str) -> dict[str, list[int]]:
    """Per file the new-side line numbers the diff adds or changes."""
    out: dict[str, list[int]] = {}
    current = ""
    line = 0
    for text in diff.splitlines():
        m = _DIFF.match(text)
        if m:
            current = m.group(2)
            continue
        h = _HUNK.match(text)
        if h:
            line = int(h.group(1))
            continue
        if not current or text.startswith(("+++", "---")):
            continue
        if text.startswith("+"):
            out.setdefault(current, []).append(line)
            line += 1
        elif text.startswith(" "):
            line += 1
    return out
