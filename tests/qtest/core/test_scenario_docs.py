"""Every scenario's one-line description (``check --list``): present, one
line, a whole sentence, and listed whole, wrapped at 100 columns at spaces
only."""

from __future__ import annotations

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
