"""The model's QEMU version boundaries: one record each, with the builds on
each side, and the docs' table (docs/check.md) made from those records.

The facts tested here come from outside the model: the HOSTCTL2 bit 12
boundary from Debian's 11.1.2 changelog and the 11.1.1 source (which writes
Host Control 2 only with uhs >= UHS-I); the eMMC's PRV from QEMU's sd.c,
which fills the SD card's and the eMMC's CID product revision from one
constant that the erase series raises to 0x02.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.hwdefs import sd as S
from harness.ledger import LEDGER, Scope, boundaries, of_scope, parse_version
from harness.ledger.boundaries import BOUNDARIES, BUILDS, Boundary
from harness.model import compat, defaults, emmc_defaults
from harness.model.clock import VirtualClock
from harness.model.emmc import EmmcCard
from harness.model.sdcard import SDCard
from harness.profile import NEWEST, BuildProfile
from tests.qtest.model.sdhci_support import stub_target

ROOT = Path(__file__).resolve().parents[3]
#: Where version boundaries may be written: the model, the quirks, the profile.
SCANNED = (*sorted((ROOT / "harness" / "model").glob("*.py")),
           ROOT / "harness" / "check" / "quirks.py", ROOT / "harness" / "profile.py")
#: Version-shaped literals that are no boundary: NEWEST's version (the model's
#: profile without a build; it must be the newest build, tested below).
NOT_BOUNDARIES = {("profile.py", (11, 1, 3))}


def _version_literals(path: Path) -> list[tuple[int, ...]]:
    """Tuples of three int constants that ``path`` names, passes or orders
    against: how a Version is written (``x in (1, 2, 4)`` and table
    contents are not versions)."""
    tree = ast.parse(path.read_text())
    out: list[tuple[int, ...]] = []
    for parent in ast.walk(tree):
        kids: list[ast.expr | None]
        if isinstance(parent, ast.AnnAssign):
            kids = [parent.value]
        elif isinstance(parent, ast.Assign):  # ``a, b, c = 1, 2, 3`` names three values
            kids = [] if isinstance(parent.targets[0], ast.Tuple) else [parent.value]
        elif isinstance(parent, ast.Call):
            kids = [*parent.args, *(k.value for k in parent.keywords)]
        elif isinstance(parent, ast.Compare) and all(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq))
                for op in parent.ops):
            kids = [parent.left, *parent.comparators]
        else:
            continue
        for node in kids:
            if not isinstance(node, ast.Tuple) or len(node.elts) != 3:
                continue
            values = [e.value for e in node.elts
                      if isinstance(e, ast.Constant) and type(e.value) is int]
            if len(values) == 3:
                out.append(tuple(int(v) for v in values if isinstance(v, int)))
    return out


def test_no_version_literal_outside_the_records() -> None:
    stray = [(p.name, v) for p in SCANNED if p.name != "boundaries.py"
             for v in _version_literals(p) if (p.name, v) not in NOT_BOUNDARIES]
    assert stray == [], "write the version as a boundaries.Boundary record"
    assert NEWEST.version == max(b.version for b in BUILDS)


@pytest.mark.parametrize("bd", BOUNDARIES, ids=lambda b: b.key)
def test_every_boundary_names_builds_consistent_with_it(bd: Boundary) -> None:
    assert bd.position and bd.used_by and bd.old and bd.new
    for name in bd.old_on:
        assert boundaries.build(name).version < bd.since, name
    for name in bd.new_on:
        assert boundaries.build(name).version >= bd.since, name
    assert bd.status == "assumed" or (bd.old_on and bd.new_on)
    if bd.status == "assumed":
        assert not bd.pinned and "assumed" in bd.position


def test_every_build_bears_out_a_side_and_confirmed_means_run() -> None:
    """A build in BUILDS is on some record's side; ``confirmed`` needs a
    build the check ran on each side, a side only read says so."""
    sides = {n for bd in BOUNDARIES for n in bd.confirmed_on}
    assert {b.name for b in BUILDS} <= sides
    for bd in BOUNDARIES:
        runs = [any(boundaries.build(n).seen == "run" for n in side)
                for side in (bd.old_on, bd.new_on)]
        if bd.status == "confirmed":
            assert all(runs), bd.key
        elif bd.status == "confirmed by source":
            assert not all(runs) and bd.old_on and bd.new_on, bd.key


def test_every_version_the_model_uses_is_a_record() -> None:
    since = {bd.since for bd in BOUNDARIES} | {boundaries.ALWAYS}
    used = {parse_version(d.versions.first) for d in of_scope(Scope.VERSION)
            if d.versions.first is not None}
    used |= {r.since for r in defaults.TABLE} | {r.since for r in emmc_defaults.TABLE}
    used |= {compat.since_build(e) for e in compat.COMPAT_TABLE}
    assert used <= since
    assert defaults.VERIFIED == boundaries.DEFAULTS_VERIFIED


def test_docs_table_is_the_records() -> None:
    text = (ROOT / "docs" / "check.md").read_text()
    assert boundaries.markdown() in text, (
        "docs/check.md's version-boundary table is stale: paste python -m "
        "harness.ledger.boundaries")


# -- the two boundaries a source build showed wrong ------------------------------------


@pytest.mark.parametrize("version,kept", [
    ((10, 2, 2), 0), ((11, 0, 3), 0), ((11, 1, 1), 0), ((11, 1, 2), 0x1000),
    ((11, 1, 3), 0x1000)])
def test_hostctl2_bit12_without_uhs_from_11_1_2(version: tuple[int, int, int],
                                                kept: int) -> None:
    profile = BuildProfile(version, sdhci_properties={"sd-spec-version": "2"})
    t, _ = stub_target(profile=profile)
    t.write(0x3E, 2, 0xFFFF)
    assert t.read(0x3E, 2) == kept


def test_auth_key_is_an_11_1_property() -> None:
    assert "auth-key" not in emmc_defaults.expected_properties((11, 0, 3))
    assert "auth-key" in emmc_defaults.expected_properties((11, 1, 1))


def _emmc_prv(profile: BuildProfile) -> int:
    c = EmmcCard(VirtualClock(), size=4 << 20, profile=profile)
    return c.cid[9]


def _sd_prv(profile: BuildProfile) -> int:
    c = SDCard(VirtualClock(), size=4 << 20, profile=profile)
    return int(S.CID.decode(S.register_value(c.cid))["PRV"])


_EMMC = {"boot-config": "0", "boot-partition-size": "0", "rpmb-partition-size": "0"}


def test_series_raises_the_emmc_prv_with_the_sd_cards() -> None:
    without = BuildProfile((11, 1, 3), sd_card_properties={"spec_version": "3"},
                           emmc_properties=_EMMC, emmc_pluggable=True)
    series = BuildProfile((11, 1, 3), sd_card_properties={"spec_version": "3",
                                                          "erase-blocks-as-zero": "true"},
                          emmc_properties=_EMMC, emmc_pluggable=True)
    assert (_sd_prv(without), _emmc_prv(without)) == (0x01, 0x01)
    assert (_sd_prv(series), _emmc_prv(series)) == (0x02, 0x02)
    c = EmmcCard(VirtualClock(), size=4 << 20, profile=series)
    assert c.cid[15] == (S.crc7(bytes(c.cid[:15])) << 1) | 1  # CRC follows the PRV


def test_ledger_version_entries_are_dated_by_their_boundary() -> None:
    """A version entry of the ledger names the boundary record that dates it
    and starts where that record does (the compat property of the
    unreleased erase series: wherever the build has the property)."""
    by_key = {bd.key: bd for bd in BOUNDARIES}
    for d in of_scope(Scope.VERSION) + of_scope(Scope.RANDOM):
        if d.scope is Scope.RANDOM and not d.boundary:
            continue
        bd = by_key[d.boundary]
        first = d.versions.first
        if first is None:
            assert d.compat is not None and d.compat.needs_property, d.key
        else:
            assert parse_version(first) == bd.since, d.key


# -- one name per boundary -----------------------------------------------------------------

#: Modules that still bind a boundary's ``since`` to a name of their own, and
#: those names: to go the way of ``V_10_1`` (the boundary record is the name).
ALIASES_LEFT: dict[str, frozenset[str]] = {
    "model/allwinner_target.py": frozenset({"LEVEL_0_1"}),
    "model/omap_target.py": frozenset({"CARD_ON_BUS", "STACK_ZERO", "BADWIDTH_LOGGED"}),
    "model/sdhci_usdhc.py": frozenset({"SPEC_3_SINCE"}),
}


def _aliases() -> dict[str, frozenset[str]]:
    """Module -> its module-level names bound to ``boundaries.X.since`` (or
    ``.key``, or ``boundaries.first(...)``)."""
    import harness

    root = Path(harness.__file__).resolve().parent
    out: dict[str, frozenset[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if path.name == "boundaries.py":
            continue
        names = set()
        for node in ast.parse(path.read_text()).body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) else None)
            value = getattr(node, "value", None)
            text = ast.unparse(value) if value is not None else ""
            if isinstance(target, ast.Name) and text.startswith("boundaries.") and (
                    text.endswith((".since", ".key")) or text.startswith("boundaries.first(")):
                names.add(target.id)
        if names:
            out[str(path.relative_to(root))] = frozenset(names)
    return out


def test_a_boundary_has_one_name() -> None:
    """A boundary is named by its record (``SD_STATE_AND_SIZE_RULES``, key
    ``sd.state-and-size-rules``); no module gives its version or key a name
    of its own, and the ledger's ranges are derived from it."""
    got = _aliases()
    assert got == ALIASES_LEFT, f"a boundary bound to a name of its own: {got}"
    rules = boundaries.SD_STATE_AND_SIZE_RULES
    assert rules.versions().first == "10.1" and rules.versions().fixed is None
    assert boundaries.SD_PROTOCOL_REWORK.versions(until=rules).fixed == "10.1"
    for d in LEDGER.values():  # a dated entry's releases are its boundary's
        if d.boundary and d.versions.first is not None:
            assert d.versions.first == boundaries.first(d.boundary), d.key
    ledger = Path(boundaries.__file__).parent
    for path in sorted(ledger.glob("*.py")):  # named by the record, never by its key again
        assert 'boundary="' not in path.read_text(), path.name
