"""The user pages (README and the docs site) say what the tool does now and
how to use it.  Dated timings, load averages of the machine a figure was
taken on, before-and-after history and issue references belong in
``docs/development/``; developers' machine paths are kept out of every
tracked file by ``test_repo_clean.py``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: A reference to the project's issues: "issue 33", "issue #19", "(#11 item 1)"
#: (QEMU's own GitLab issues are references a user can follow).
ISSUE = re.compile(r"(?<!gitlab )(?<!qemu )\bissues? #?\d+\b|\(#\d+\b|#\d+ item\b",
                   re.IGNORECASE)
#: A calendar date, and what makes a line with one a dated timing.
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
TIMING = re.compile(r"measur|\bload\b|\b\d+(?:\.\d+)? ?(?:s|ms|min|minutes|seconds)\b",
                    re.IGNORECASE)
#: The load of the machine a figure was taken on.
LOAD = re.compile(r"\bload(?: average)? (?:of )?\d", re.IGNORECASE)
#: Before-and-after against a commit of the project.
HISTORY = re.compile(r"\b(?:main|master) at [0-9a-f]{7,}\b|\bbefore \((?:main|master)\b",
                     re.IGNORECASE)

#: Pages that are not prose about the tool: the figures page records each
#: figure with the machine, load and date it was taken on (``sdqtest bench
#: report`` writes it), and the example report is the tool's output as it
#: prints it (with the load it ran at).
NOT_USER_PAGES = {"docs/figures.md", "docs/example-review-report.md"}

#: Pages whose measurements and history are still to move to
#: ``docs/development/``, with the number of lines found in each: none may
#: gain one, and a page with none left leaves this table.
LEFT: dict[str, int] = {}


def history(text: str) -> list[tuple[int, str, str]]:
    """``(line number, kinds, line)`` of each line with history in ``text``."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        kinds = [kind for kind, hit in (
            ("issue reference", ISSUE.search(line)),
            ("dated timing", DATE.search(line) and TIMING.search(line)),
            ("load average", LOAD.search(line)),
            ("before-and-after", HISTORY.search(line))) if hit]
        if kinds:
            found.append((n, ", ".join(kinds), line.strip()[:120]))
    return found


def user_pages() -> list[str]:
    docs = [p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")]
    return ["README.md"] + sorted(p for p in docs if not p.startswith("docs/development/")
                                  and p not in NOT_USER_PAGES)


def test_the_patterns_tell_history_from_reference() -> None:
    bad = ["### The \"48 unstable\" of issue 33", "stands for: its defaults (#11 item 1)",
           "**How it runs fast** (issue #19: thousands of inputs per second)",
           "cached, measured 2026-12-06/07 on a 2-core machine: 93 s",
           "Measured (load average 0.5 to 2) on Debian's", "# 28 s at load 20",
           "  - before (main at 08a4699): 1362 branches"]
    good = ["| `cve-2020-17380-sdma-data-count` | 2020-08-30 | 5.2/6.0 | ASan overflow |",
            "issued at step #200 with BLKSIZE 512", "the load of a card image",
            "QEMU's GitLab issue 450 (`gitlab-450-oss-fuzz-29225-wpgrps`)",
            "a 52.6 ms ADMA2 read", "before the first command"]
    assert [n for n, _, _ in history("\n".join(bad))] == list(range(1, len(bad) + 1))
    assert history("\n".join(good)) == []


def test_user_pages_carry_no_history() -> None:
    pages = user_pages()
    assert "docs/check.md" in pages and "README.md" in pages
    assert not set(LEFT) - set(pages), "LEFT names a page that is not a user page"
    problems = []
    for page in pages:
        found = history((ROOT / page).read_text())
        allowed = LEFT.get(page, 0)
        if len(found) > allowed:
            problems += [f"{page}:{n}: {kinds}: {line}" for n, kinds, line in found]
            problems.append(f"{page}: {len(found)} lines of history, at most {allowed} "
                            "(move them to docs/development/)")
        elif page in LEFT and not found:
            problems.append(f"{page} has no history left: take it out of LEFT")
    assert not problems, "\n".join(problems)


def test_the_development_notes_are_on_the_site() -> None:
    assert "development/index.md" in (ROOT / "mkdocs.yml").read_text()


def readme_tour() -> str:
    """The README's five-minute tour, its links made relative to ``docs/``."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## A five-minute tour\n")
    end = readme.index("\n## ", start + 1)
    return readme[start:end].split("\n", 1)[1].replace("](docs/", "](").strip()


TOUR_HEAD = ("# A five-minute tour\n\n<!-- The README's tour, kept the same by "
             "tests/qtest/test_docs_pages.py. -->\n\n")


def test_the_tour_on_the_site_is_the_readmes() -> None:
    page = (ROOT / "docs" / "tour.md").read_text()
    assert page == TOUR_HEAD + readme_tour() + "\n", (
        "docs/tour.md differs from the README's tour: "
        "python tests/qtest/test_docs_pages.py writes it again")
    assert "tour.md" in (ROOT / "mkdocs.yml").read_text()


if __name__ == "__main__":  # write docs/tour.md from the README
    (ROOT / "docs" / "tour.md").write_text(TOUR_HEAD + readme_tour() + "\n")
