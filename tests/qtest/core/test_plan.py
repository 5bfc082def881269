"""The check's machine plan follows the model's compat table."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from harness.check import plan
from harness.hwdefs.boards import OWN_GROUPS
from harness.model import compat
from harness.scenarios import all_scenarios


def _build(*versions: str) -> Any:
    q35 = [f"pc-q35-{v}" for v in versions]
    return SimpleNamespace(versioned_machines=lambda family: q35 if family == "q35" else [])


def test_boundaries_are_either_side_of_each_compat_change() -> None:
    assert plan.boundaries() == ("9.0", "9.1", "11.0", "11.1")


def test_boundaries_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new entry for 10.2 adds 10.2 and the next machine version, 11.0."""
    entry = replace(compat.COMPAT_TABLE[0], prop="x", upto=(10, 2))
    monkeypatch.setattr(plan, "COMPAT_TABLE", (*compat.COMPAT_TABLE, entry))
    assert plan.boundaries() == ("9.0", "9.1", "10.2", "11.0", "11.1")


@pytest.mark.parametrize("versions,want", [
    (("7.1", "7.2"), ["pc-q35-7.2"]),
    (("8.2", "9.0", "9.1", "9.2", "10.0"), ["pc-q35-9.0", "pc-q35-9.1", "pc-q35-10.0"]),
    (("9.0", "9.1", "11.0", "11.1"), ["pc-q35-9.0", "pc-q35-9.1", "pc-q35-11.0", "pc-q35-11.1"]),
    (("9.1", "11.0", "11.1", "11.2"),
     ["pc-q35-9.1", "pc-q35-11.0", "pc-q35-11.1", "pc-q35-11.2"]),
])
def test_compat_group_runs_on_the_boundaries_the_build_offers(
        versions: tuple[str, ...], want: list[str]) -> None:
    sc = all_scenarios()["compat-card-behaviour"]
    assert plan.machines_for(_build(*versions), sc) == want


def test_other_groups_run_on_q35() -> None:
    sc = next(s for s in all_scenarios().values() if s.group == "registers")
    assert plan.machines_for(_build("9.0", "11.1"), sc) == ["q35"]


def test_the_pc_subset_names_scenarios_of_most_groups() -> None:
    known = all_scenarios()
    assert set(plan.PC_SUBSET) <= set(known)
    groups = {known[n].group for n in plan.PC_SUBSET}
    assert groups >= {"registers", "data", "erase", "card", "interrupts", "images", "mmc_test",
                      "sizes"}


def test_the_scenario_suite_runs_the_pc_subset_on_pc_by_default() -> None:
    from tests.qtest.crosscheck.test_scenarios import cases

    # the eMMC groups run as a sample in crosscheck/test_emmc.py, the migration
    # group in crosscheck/test_migration.py, the spi group in boards/test_spi_qemu.py,
    # the sunxi group in boards/test_sunxi_qemu.py
    sd = {n for n, s in all_scenarios().items()
          if not s.group.startswith("emmc-") and s.group not in ("migration", *OWN_GROUPS)}
    default = cases(None)
    assert {s.name for s, m, _ in default if m == "pc"} == set(plan.PC_SUBSET)
    assert {s.name for s, m, _ in default if m == "q35"} == sd
    assert "pc/registers/access-sizes" in {i for _, _, i in default}
    given = cases(["pc"])
    assert {s.name for s, m, _ in given} == sd
