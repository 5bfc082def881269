"""``sdqtest bugs --series DIR``: the fixes as a ``git format-patch`` series.

Against Debian's 11.1.1 source: a copy of the tree becomes a git repository
(one commit, the release), then the series is committed on it: first the
test program (``tests/qtest/sdcard-test.c``, its meson registration, its
MAINTAINERS line, two smoke tests), then one commit per bug with a fix, the
bug's test case with the fix.  ``git format-patch --cover-letter`` writes
them; the cover letter says what was found, how, and each bug's reproducer.

Nobody's name is invented: the author is ``--from`` (else a placeholder that
says to fill it in) and a Signed-off-by is added only with ``--signoff``,
with the author's name (the DCO is a person's statement).  ``Cc:`` lines
come from the tree's ``scripts/get_maintainer.pl`` for the files each patch
touches; ``scripts/checkpatch.pl`` runs on every patch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from harness.bugs import qtest_file, seen
from harness.bugs.catalog import Bug
from harness.errors import UsageError

#: Author line when --from is not given: says what to do, names nobody.
PLACEHOLDER_AUTHOR = "FILL IN AUTHOR (sdqtest bugs --series --from) <author@fill-in.invalid>"
PREP_SUBJECT = "tests/qtest: Add sdcard-test for SD and eMMC cards on sdhci-pci"
PREP_BODY = """\
Add a qtest that drives an SD card or an eMMC device through sdhci-pci's
PIO interface on q35, with small helpers for card identification and
single block transfers (SD Physical Layer Simplified Specification 4.2,
JESD84-B51 6.4), and two smoke tests: a block written and read back on
an SD card and on an eMMC boot partition.

The following patches add one test case per bug they fix."""


@dataclass(frozen=True)
class FixPatch:
    """A bug's fix patch file: its subject, message body and diff."""

    subject: str
    body: str
    diff: str


def read_fix(path: Path) -> FixPatch:
    """``bugs/NNNN-slug.patch``: ``Subject:``, the message, ``---``, the diff."""
    text = path.read_text()
    m = re.match(r"Subject: (?:\[PATCH[^\]]*\] )?(.+)\n\n", text)
    if m is None:
        raise UsageError(f"{path}: no 'Subject:' line")
    rest = text[m.end():]
    body, sep, _ = rest.partition("\n---\n")
    diff_at = rest.find("diff --git ")
    if not sep or diff_at < 0:
        raise UsageError(f"{path}: no '---' and diff after the message")
    return FixPatch(m.group(1).strip(), body.strip(), rest[diff_at:])


def _git(repo: Path, *args: str, env: dict[str, str] | None = None,
         timeout: float = 600) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                       timeout=timeout, check=False, env=env)
    if r.returncode != 0:
        raise UsageError(f"git {' '.join(args[:2])} failed: {r.stderr.strip()[:500]}")
    return r.stdout


def base_repo(src: Path, work: Path) -> Path:
    """A git repository of a copy of ``src`` with the release as one commit."""
    repo = work / "qemu"
    print(f"copying {src} to {repo} ...", flush=True)
    shutil.copytree(src, repo, symlinks=True)
    shutil.rmtree(repo / ".git", ignore_errors=True)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A", "-f")
    _commit(repo, "QEMU 11.1.1 (Debian's source, qemu_11.1.1+ds)", "Debian <release>",
            allow_empty=False)
    return repo


def _ident(author: str) -> dict[str, str]:
    """The environment that makes ``author`` git's author and committer (and
    the cover letter's sender), whatever the machine's git configuration says."""
    name, _, mail = author.rpartition(" <")
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail.rstrip(">"),
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": mail.rstrip(">"),
            "GIT_AUTHOR_DATE": "2026-12-07T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-12-07T00:00:00Z", "PATH": "/usr/bin:/bin",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def _commit(repo: Path, message: str, author: str, *, allow_empty: bool = False) -> None:
    args = ["commit", "-q", "-a", "-m", message] + (["--allow-empty"] if allow_empty else [])
    _git(repo, *args, env=_ident(author))


def cc_lines(repo: Path, files: list[str]) -> list[str]:
    """``Cc:`` for ``files`` from the tree's MAINTAINERS (get_maintainer.pl -f)."""
    r = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-rolestats", "--no-git",
                        "--no-git-fallback", "-f", *files], cwd=repo, capture_output=True,
                       text=True, timeout=120, check=False)
    people = [ln.strip() for ln in r.stdout.splitlines() if "@" in ln]
    return [f"Cc: {p}" for p in dict.fromkeys(people)]


def _message(subject: str, body: str, trailers: list[str]) -> str:
    return f"{subject}\n\n{body}\n\n" + "\n".join(trailers) + "\n"


def _apply(repo: Path, diff: str, what: str) -> None:
    r = subprocess.run(["git", "-C", str(repo), "apply", "-"], input=diff, text=True,
                       capture_output=True, timeout=60, check=False)
    if r.returncode != 0:
        raise UsageError(f"{what} does not apply: {r.stderr.strip()[:400]}")


def bug_body(bug: Bug, fix: FixPatch) -> str:
    """The fix's message, the test case that shows it and since when."""
    c = qtest_file.case(bug)
    paths = ", ".join(c.paths)
    more = (f"The new sdcard-test case {paths} shows it: it "
            f"{'aborts QEMU' if bug.aborts else 'fails'} without this change.",
            seen.since_text(bug))
    return fix.body + "".join("\n\n" + textwrap.fill(p, 72) for p in more)


def write(bugs: list[Bug], src: Path, out: Path, *, author: str | None,
          signoff: bool) -> list[Path]:
    """Write the series for ``bugs`` (those with a C test and a fix) into ``out``."""
    fixed = [b for b in bugs if b.c_test is not None and b.patch is not None]
    if not fixed:
        raise UsageError("none of these bugs has both a C test and a fix")
    if signoff and not author:
        raise UsageError("--signoff needs --from 'Name <mail>': a Signed-off-by is a "
                         "person's statement (the DCO), never made up")
    who = author or PLACEHOLDER_AUTHOR
    if not re.fullmatch(r"[^<>]+ <[^<>@\s]+@[^<>\s]+>", who):
        raise UsageError(f"--from {who!r}: expected 'Name <mail@domain>'")
    sob = [f"Signed-off-by: {who}"] if signoff else []
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sdqtest-series-") as tmp:
        repo = base_repo(src, Path(tmp))
        base = _git(repo, "rev-parse", "HEAD").strip()
        test = repo / qtest_file.TREE_PATH
        test.write_text(qtest_file.render([]))
        for rel, edit in (("tests/qtest/meson.build", qtest_file.meson_edit),
                          ("MAINTAINERS", qtest_file.maintainers_edit)):
            (repo / rel).write_text(edit((repo / rel).read_text()))
        _git(repo, "add", str(qtest_file.TREE_PATH))
        cc = cc_lines(repo, [str(qtest_file.TREE_PATH)])
        _commit(repo, _message(PREP_SUBJECT, PREP_BODY, [*sob, *cc]), who)
        for i, b in enumerate(fixed):
            assert b.patch is not None
            fix = read_fix(b.patch)
            _apply(repo, fix.diff, b.patch.name)
            test.write_text(qtest_file.render(fixed[:i + 1]))
            files = [str(qtest_file.TREE_PATH), *_diff_files(fix.diff)]
            _commit(repo, _message(fix.subject, bug_body(b, fix),
                                   [*sob, *cc_lines(repo, files)]), who)
        for old in out.glob("*.patch"):
            old.unlink()
        _git(repo, "format-patch", "-q", "--cover-letter", "--no-signature", "-o", str(out),
             f"{base}..HEAD", env=_ident(who))
        patches = sorted(out.glob("*.patch"))
        _am_check(repo, base, patches[1:], who)
        from harness.bugs import cover

        cover.fill(patches[0], fixed, author=author, signoff=signoff)
        (out / "base-commit").write_text(f"{base}\n")
        return patches


def _am_check(repo: Path, base: str, patches: list[Path], who: str) -> None:
    """``git am`` the written patches on the release: they must apply, and
    give the tree the series was made from."""
    head = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-q", "--detach", base)
    _git(repo, "am", "-q", *map(str, patches), env=_ident(who))
    if _git(repo, "diff", "--stat", head, "HEAD").strip():
        raise UsageError("git am of the written series does not give the series' tree")
    print(f"git am: the {len(patches)} patches apply on the release and give the "
          "series' tree", flush=True)


def _diff_files(diff: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"^diff --git a/(\S+) ", diff, re.M)))


def checkpatch(src: Path, patches: list[Path], *, signed: bool) -> tuple[int, str]:
    """``scripts/checkpatch.pl`` of ``src`` on ``patches``: errors, its output.
    An unsigned series is checked with ``--no-signoff`` (the sign-off is the
    submitter's to add, not a style error of the patch)."""
    args = ["perl", "scripts/checkpatch.pl", "--no-tree", *([] if signed else ["--no-signoff"])]
    text, errors = [], 0
    for p in patches:
        if "cover-letter" in p.name:
            continue
        r = subprocess.run([*args, str(p)], cwd=src, capture_output=True, text=True,
                           timeout=300, check=False)
        out = r.stdout.strip()
        m = re.search(r"total: (\d+) errors, (\d+) warnings", out)
        errors += int(m.group(1)) if m else 1
        text.append(f"--- {p.name}\n{out}")
    return errors, "\n".join(text)
