"""The ledger: one registry of known differences, read by model and check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness
from harness.ledger import LEDGER, KnownDifference, Scope, Versions, entry, of_scope, toggles

ROOT = Path(harness.__file__).resolve().parent

#: The keys the bugs helper codes against (API_LEDGER.md): each a QEMU bug.
API_QEMU_BUGS = (
    "sd.lock-pwd-len", "sd.wide-data-byte-order", "sd.command-during-transfer",
    "sd.acmd22-count-survives-reset", "emmc.partition-range", "emmc.rpmb-address-unchecked",
    "sdhci.rspreg3-after-auto-cmd12", "migration-loses-hostctl2",
    "sdhci-pci.pci-config-not-migrated",
)


def test_api_keys_are_qemu_bugs() -> None:
    bugs = {d.key for d in of_scope(Scope.QEMU_BUG)}
    missing = [k for k in API_QEMU_BUGS if k not in bugs]
    assert not missing, missing


def test_scopes_partition_the_ledger() -> None:
    assert sum(len(of_scope(s)) for s in Scope) == len(LEDGER)
    assert all(isinstance(d, KnownDifference) and d.key == k for k, d in LEDGER.items())


def test_keys_name_their_device() -> None:
    for d in LEDGER.values():
        head = d.key.split(".")[0]
        assert head in (d.device, "compat") or d.key.startswith(d.device + "-"), d.key


def test_every_entry_says_what_differs() -> None:
    for d in LEDGER.values():
        assert d.rule.strip() and d.qemu.strip() and d.rule != d.qemu, d.key
        if d.scope is Scope.RANDOM:
            assert d.adopts, d.key
        if d.compat is not None:
            assert d.scope is Scope.VERSION and d.boundary, d.key


def test_unknown_key_is_named() -> None:
    with pytest.raises(KeyError, match="sd.no-such"):
        entry("sd.no-such")


@pytest.mark.parametrize(("v", "first", "fixed", "applies"), [
    ("7.2.22", None, None, True),
    ("9.0.5", "9.1", None, False),
    ("9.1.0", "9.1", None, True),
    ("10.0.13", "9.1", "10.1", True),
    ("10.1", "9.1", "10.1", False),
    ("11.1.3", None, "8.0", False),
])
def test_versions_apply(v: str, first: str | None, fixed: str | None, applies: bool) -> None:
    assert Versions(first, fixed).applies(v) is applies


def test_versions_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="not a QEMU version"):
        Versions("nine", None)
    with pytest.raises(ValueError, match="not after"):
        Versions("10.0", "9.1")
    with pytest.raises(ValueError, match="outside"):
        Versions("9.1", None, ("7.2.22",))


def _consulted_keys() -> set[str]:
    """Every string literal the model passes to ``qemu(...)``."""
    keys: set[str] = set()
    for p in (ROOT / "model").glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", "")) == "qemu" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                keys.add(str(node.args[0].value))
    return keys


def test_toggles_are_exactly_what_the_model_consults() -> None:
    consulted = _consulted_keys()
    listed = {d.key for d in toggles("sd", "sdhci", "emmc")}
    assert consulted == listed, (consulted ^ listed)


def test_no_other_registry_in_the_harness() -> None:
    """The entry type and the tables live in the ledger only."""
    for p in ROOT.rglob("*.py"):
        if p.is_relative_to(ROOT / "ledger"):
            continue
        text = p.read_text()
        for name in ("class Deviation(", "class Quirk(", "class VersionDiff(",
                     "class CompatEntry(", "KNOWN_DEVIATIONS", "ALL_DEVIATIONS"):
            assert name not in text, (p, name)
