"""The regression suite: every scenario, model against each QEMU build.

A failure prints the first divergence decoded field by field and the path
of a reproducer that replays it on QEMU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import harness.scenarios as scenario
from harness.check import runner
from harness.qemu.builds import QemuBuild

pytestmark = pytest.mark.qemu

SCENARIOS = sorted(scenario.all_scenarios().values(), key=lambda s: (s.group, s.name))


@pytest.mark.parametrize("sc", SCENARIOS, ids=[f"{s.group}/{s.name}" for s in SCENARIOS])
def test_scenario(qemu_build: QemuBuild, sc: scenario.Scenario, tmp_path: Path,
                  request: pytest.FixtureRequest) -> None:
    machine = (request.config.getoption("machine") or ["q35"])[0]
    res = runner.run(qemu_build, sc, machine, report_dir=tmp_path)
    if res.status == runner.SKIP:
        pytest.skip(res.reason)
    detail = res.divergence.render() if res.divergence else res.reason
    if res.status == runner.ERROR and res.notes:
        detail += "\n" + res.notes[0]
    assert res.ok, f"{res.status}: {detail}"
