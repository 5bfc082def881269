"""The repository holds nothing that only one machine has: no developer's
paths in a tracked file, no generated output tracked, and a docs site that
builds strictly (every link and nav entry resolves)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Paths of a developer's machine: the work tree, root's and users' homes,
#: the helpers' scratch folders.  Generic examples (``~/qemu``,
#: ``$SDQTEST_CACHE``, a guest's ``/tmp/err``) do not match.
#: (Written with a character class, so that this file does not match itself.)
MACHINE_PATH = re.compile(r"(?<![\w.~$-])(/wor[k]/|/roo[t]/|/hom[e]/[a-z_][\w-]*/|/tm[p]/s\d+/"
                          r"|/tm[p]/pytest-of-)")
#: Bug reports kept as their reporters wrote them (``harness/replay/field/``,
#: each with a ``.note`` naming its source): a sanitizer trace there names
#: the reporter's own home, which is theirs, not a machine of this project's.
VERBATIM = "harness/replay/field/"
#: Generated files that must not be tracked (``.gitignore`` lists them).
GENERATED = ("config.log", "review/reports/", "site/")


def machine_paths(text: str, verbatim: bool = False) -> list[tuple[int, str]]:
    """``(line number, line)`` of each line naming a machine path (in a
    ``verbatim`` report, a path under a reporter's home is theirs)."""
    return [(n, line.strip()[:160]) for n, line in enumerate(text.splitlines(), 1)
            if any(not (verbatim and m.group(1).startswith("/hom"))
                   for m in MACHINE_PATH.finditer(line))]


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                       check=True)
    return [p for p in r.stdout.decode().split("\0") if p]


def test_the_pattern_tells_machine_paths_from_examples() -> None:
    def p(*parts: str) -> str:
        return "/" + "/".join(parts)

    bad = [f"cd {p('work', 'main')} && ./sdqtest", f"binary {p('root', '.cache', 'x')}",
           f"see {p('home', 'alice', 'qemu')}", f"log in {p('tmp', 's10', 'out.txt')}",
           f"({p('tmp', 'pytest-of-root', 'x')})"]
    good = ["~/qemu/build/qemu-system-x86_64", "$SDQTEST_CACHE/source/11.1.1/plain",
            "2>/tmp/err", "cat > /tmp/repro.txt", "~/.cache/sdqtest/qemu", "a/workdir/b"]
    assert [n for n, _ in machine_paths("\n".join(bad))] == [1, 2, 3, 4, 5]
    assert machine_paths("\n".join(good)) == []


def test_no_tracked_file_names_a_machine_path() -> None:
    found = []
    for rel in _tracked():
        path = ROOT / rel
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue  # binary or absent (a deletion not yet committed)
        found += [f"{rel}:{n}: {line}"
                  for n, line in machine_paths(text, rel.startswith(VERBATIM))]
    assert not found, "machine paths in tracked files:\n" + "\n".join(found[:40])


def test_generated_output_is_not_tracked() -> None:
    tracked = _tracked()
    bad = [p for p in tracked if any(p == g or p.startswith(g) for g in GENERATED)]
    assert not bad, bad
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    for g in GENERATED:
        assert f"/{g}" in ignored, g


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a broken link, anchor or nav entry fails."""
    pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e .[test]")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                        "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_front_page_is_short() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, len(lines)
    assert max(len(line) for line in lines) <= 200
