"""Every scenario's one-line description (``check --list``): present, one
line, a whole sentence, and listed whole, wrapped at 100 columns at spaces
only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.scenarios as scenarios
from harness.commands.check import listing
from harness.scenarios.registry import first_sentence

SCENARIOS = scenarios.all_scenarios()


def _whole_sentence(doc: str) -> str:
    """Why ``doc`` is not one whole sentence, or ``""``."""
    if not doc:
        return "no description"
    if "\n" in doc or "  " in doc:
        return "more than one line, or layout spaces"
    if not (doc[0].isupper() or doc[0].isdigit()):
        return "does not start as a sentence"
    if not doc.endswith(".") or doc.endswith(" ...") or doc.endswith(",."):
        return "does not end as a sentence"
    for a, b in ("()", "[]", "{}"):
        if doc.count(a) != doc.count(b):
            return f"unbalanced {a}{b}: cut inside a bracket"
    return ""


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_has_a_one_line_sentence(name: str) -> None:
    doc = SCENARIOS[name].doc
    assert not _whole_sentence(doc), f"{name}: {_whole_sentence(doc)}: {doc!r}"


def test_first_sentence_keeps_brackets_abbreviations_and_ellipses_whole() -> None:
    text = """Lengths 1, 2, 4 ... 256 (CMD16, e.g. the SCR. Not
    a stop), read. QEMU 9.1 differs.

    Second paragraph."""
    assert first_sentence(text) == ("Lengths 1, 2, 4 ... 256 (CMD16, e.g. the SCR. Not a stop), "
                                    "read.")
    assert first_sentence("No stop at all") == "No stop at all"
    assert first_sentence("One. (Two.)") == "One."


def test_the_listing_is_whole_and_fits_100_columns() -> None:
    """Each description comes back word for word from its wrapped lines;
    no line is wider than 100 columns unless it is one word."""
    lines = listing(100)
    by_name: dict[str, list[str]] = {}
    current = ""
    for line in lines:
        assert len(line) <= 100 or len(line.split()) == 1, line
        if not line.startswith(" "):
            group, current = line.split()
            assert SCENARIOS[current].group == group
            by_name[current] = []
        else:
            by_name[current].append(line.strip())
    assert list(by_name) == list(SCENARIOS)
    for name, parts in by_name.items():
        assert " ".join(parts) == SCENARIOS[name].doc, name


def test_a_listing_into_a_closed_pipe_is_no_internal_error(tmp_path: Path) -> None:
    """``check --list | head -1``: the reader goes away; the command stops
    quietly (141, as a process killed by SIGPIPE), never as a bug of sdqtest."""
    root = Path(__file__).resolve().parents[3]
    p = subprocess.Popen([sys.executable, "-m", "harness.cli", "check", "--list"], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert p.stdout is not None and p.stderr is not None
    assert p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(120) == 141 and "internal error" not in err, err
    assert not (tmp_path / "reports").exists()


def test_scenarios_of_a_group_are_told_apart() -> None:
    """Scenarios a loop registers from one function say which one they are
    (``variant``): within a group no two descriptions are the same."""
    seen: dict[tuple[str, str], str] = {}
    for sc in SCENARIOS.values():
        other = seen.setdefault((sc.group, sc.doc), sc.name)
        assert other == sc.name, f"{other} and {sc.name} say the same: {sc.doc}"
