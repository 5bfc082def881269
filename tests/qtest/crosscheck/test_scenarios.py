"""The regression suite: every scenario, model against each QEMU build.

A failure prints the first divergence decoded field by field and the path
of a reproducer that replays it on QEMU.  QEMU processes are reused (reset
between scenarios) within each test process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.scenarios as scenario
from harness.check import plan, runner
from harness.hwdefs.boards import OWN_GROUPS
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool

pytestmark = pytest.mark.qemu

#: The migration group runs with its migration points in test_migration.py; the
#: eMMC groups run as a sample in test_emmc.py (the whole set: sdqtest check);
#: the board controllers' own groups on their boards (tests/qtest/boards/).
SCENARIOS = sorted((s for s in scenario.all_scenarios().values()
                    if s.group not in ("migration", *OWN_GROUPS)
                    and not s.group.startswith("emmc-")),
                   key=lambda s: (s.group, s.name))


def cases(machines: list[str] | None) -> list[tuple[scenario.Scenario, str, str]]:
    """``(scenario, machine, id)``: every scenario on each ``--sdq-machine``
    given; by default every scenario on q35 and :data:`plan.PC_SUBSET` on
    pc too (ids: ``group/name`` on q35, ``machine/group/name`` otherwise)."""
    out: list[tuple[scenario.Scenario, str, str]] = []
    for m in machines or ["q35", "pc"]:
        for s in SCENARIOS:
            if machines or m == "q35" or s.name in plan.PC_SUBSET:
                pre = "" if m == "q35" else f"{m}/"
                out.append((s, m, f"{pre}{s.group}/{s.name}"))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sc" in metafunc.fixturenames and "on_machine" in metafunc.fixturenames:
        cs = cases(metafunc.config.getoption("sdq_machine"))
        metafunc.parametrize(("sc", "on_machine"), [(s, m) for s, m, _ in cs],
                             ids=[i for _, _, i in cs])


def test_scenario(qemu_build: QemuBuild, sc: scenario.Scenario, on_machine: str,
                  tmp_path: Path, qemu_pool: QemuPool) -> None:
    res = runner.run(qemu_build, sc, on_machine,
                     runner.RunOptions(report_dir=tmp_path, pool=qemu_pool))
    if res.status == runner.SKIP:
        pytest.skip(res.reason)
    detail = res.divergence.render() if res.divergence else res.reason
    if res.status == runner.ERROR and res.notes:
        detail += "\n" + res.notes[0]
    assert res.ok, f"{res.status}: {detail}"
