"""Every ledger entry triaged by harm, with evidence (no QEMU run)."""

from __future__ import annotations

import pytest

from harness.bugs.catalog import BY_KEY
from harness.bugs.triage import TRIAGE, Harm, triage
from harness.ledger import LEDGER, Scope


def test_every_ledger_entry_is_triaged_and_nothing_else() -> None:
    assert set(TRIAGE) == set(LEDGER)


@pytest.mark.parametrize("key", sorted(LEDGER))
def test_triage_has_evidence_and_a_harmless_entry_its_spec(key: str) -> None:
    t = triage(key)
    assert len(t.evidence) > 20, key
    e = LEDGER[key]
    if t.harm is Harm.HARMLESS:
        # keeps its reference (a version entry: the old behaviour is its reference)
        assert e.spec or e.scope is Scope.VERSION, key
        assert not t.bug and e.scope is not Scope.QEMU_BUG, key


@pytest.mark.parametrize("key", sorted(k for k, t in TRIAGE.items() if t.harm.is_bug))
def test_a_bug_class_entry_is_a_catalog_row_or_names_one(key: str) -> None:
    t = TRIAGE[key]
    row = BY_KEY.get(t.bug or key)
    assert row is not None, f"{key}: a QEMU bug without a catalog row"
    if t.bug:
        assert key not in BY_KEY and TRIAGE[t.bug].harm is t.harm


def test_spec_entries_triaged_as_bugs_are_filed_as_qemu_bugs() -> None:
    """A spec-scope entry in a bug class is a QEMU bug in the ledger too."""
    wrong = [k for k, t in TRIAGE.items() if t.harm.is_bug and LEDGER[k].scope is Scope.SPEC]
    assert wrong == []


def test_unknown_key_names_the_file() -> None:
    with pytest.raises(KeyError, match="triage.py"):
        triage("no.such.entry")
