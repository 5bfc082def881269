"""The migration matrix's pure parts: pairs, machine types, the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.check import migration, plan
from harness.check.runner import Result
from harness.errors import UsageError
from harness.profile import BuildProfile
from harness.qemu.builds import QemuBuild


def _build(name: str, version: tuple[int, int, int], newest: tuple[int, int],
           oldest: tuple[int, int] = (5, 2)) -> QemuBuild:
    types: list[str] = []
    for major in range(oldest[0], newest[0] + 1):
        for minor in range(3):
            if oldest <= (major, minor) <= newest:
                types += [f"pc-q35-{major}.{minor}", f"pc-i440fx-{major}.{minor}"]
    profile = BuildProfile(version=version, machine_types=(*types, "q35", "pc"))
    return QemuBuild(name, Path(f"/nonexistent/{name}"), profile)


B72 = _build("7.2", (7, 2, 0), (7, 2), (2, 4))
B100 = _build("10.0", (10, 0, 0), (10, 0), (2, 4))
B111 = _build("11.1", (11, 1, 0), (11, 1))


def test_pairs_same_build_then_older_to_newer() -> None:
    names = [p.name for p in migration.pairs([B111, B72, B100])]
    assert names == ["7.2->7.2", "10.0->10.0", "11.1->11.1",
                     "7.2->10.0", "7.2->11.1", "10.0->11.1"]


def test_pairs_kept_to_from_and_to() -> None:
    assert [p.name for p in migration.pairs([B72, B100, B111], "10.0")] == [
        "10.0->10.0", "10.0->11.1"]
    assert [p.name for p in migration.pairs([B72, B100, B111], None, "10.0")] == [
        "10.0->10.0", "7.2->10.0"]


def test_a_user_build_can_be_both_ends() -> None:
    """``--qemu PATH`` once: the build migrated to itself."""
    user = _build("qemu-system-x86_64", (10, 2, 50), (10, 2))
    assert [p.name for p in migration.pairs([user])] == [
        "qemu-system-x86_64->qemu-system-x86_64"]


def test_boundary_machine_types_always_included() -> None:
    got = migration.machines(migration.Pair(B100, B111))
    q35 = [m for m in got if m.startswith("pc-q35-")]
    # oldest and newest shared, and 9.0/9.1 either side of spec_version's change
    assert q35 == ["pc-q35-5.2", "pc-q35-9.0", "pc-q35-9.1", "pc-q35-10.0"]
    assert "pc-i440fx-9.0" in got and "pc-i440fx-9.1" in got
    same = migration.machines(migration.Pair(B111, B111))
    for v in plan.boundaries():
        assert f"pc-q35-{v}" in same


def test_no_boundary_beyond_what_both_offer() -> None:
    got = migration.machines(migration.Pair(B72, B111))
    assert got == ["pc-q35-5.2", "pc-q35-7.2", "pc-i440fx-5.2", "pc-i440fx-7.2"]


def test_wanted_machine_types_kept_to_the_shared_ones() -> None:
    pair = migration.Pair(B72, B111)
    assert migration.machines(pair, wanted=["q35", "pc-q35-7.2", "pc-q35-9.0"]) == [
        "q35", "pc-q35-7.2"]


def test_points_selection() -> None:
    scs = migration.migration_scenarios(["idle", "card-locked"])
    assert [s.params["point"] for s in scs] == ["idle", "card-locked"]
    every = migration.migration_scenarios()
    fixed = [s for s in every if not s.name.startswith("migrate-explore-")]
    assert [s.params["point"] for s in fixed] == list(migration.POINTS)
    assert len(migration.POINTS) >= 10 and len(every) > len(fixed)  # + the explorer's
    with pytest.raises(UsageError, match="unknown migration point"):
        migration.migration_scenarios(["nowhere"])


def test_table_and_summary() -> None:
    def verdict(status: str, reason: str = "") -> Result:
        return Result("x", "migrate-x", "migration", "q35", status, reason)

    cells = [
        migration.MigrationCell("7.2->11.1", "pc-q35-7.2", "idle", verdict("agree"),
                       pci_lost=["BAR0: source 0xe0000000, destination 0x0"]),
        migration.MigrationCell("7.2->11.1", "pc-q35-7.2", "card-locked",
                       verdict(migration.REFUSED, "Missing section footer for sd-card"),
                       reproducer="/r/x"),
        migration.MigrationCell("10.0->11.1", "pc-q35-9.0", "idle",
                                verdict("diverge", "at step 9")),
    ]
    head, rows = migration.table(cells)
    assert head == ["pair", "machine", "idle", "card-locked"]
    assert rows == [["7.2->11.1", "pc-q35-7.2", "ok", "REFUSED"],
                    ["10.0->11.1", "pc-q35-9.0", "DIVERGE", ""]]
    text = "\n".join(migration.summary(cells))
    assert "3 cells: 1 agree, 1 diverge, 1 refused" in text
    assert "Missing section footer for sd-card" in text and "reproducer: /r/x" in text
    assert "BAR0" in text


def test_load_error_keeps_qemu_reason_without_warnings() -> None:
    from harness.qemu.migrate import load_error

    text = ("qemu-system-x86_64: -mon chardev=qmp,mode=control: warning: '-mon' is deprecated\n"
            "qemu-system-x86_64: Missing section footer for 0000:00:01.0/sdhci-pci\n"
            "qemu-system-x86_64: load of migration failed: Invalid argument\n")
    assert load_error(text) == ("Missing section footer for 0000:00:01.0/sdhci-pci | "
                                "load of migration failed: Invalid argument")
    assert load_error("") == "the destination exited without a message"
