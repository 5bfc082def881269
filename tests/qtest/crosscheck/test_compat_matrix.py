"""Machine-compat defaults: every versioned machine type of every build."""

from __future__ import annotations

import pytest

from harness.check import compat_matrix, plan, runner
from harness.qemu.builds import QemuBuild
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu


def test_every_machine_type_matches_the_model(qemu_build: QemuBuild) -> None:
    machines = compat_matrix.machines_of(qemu_build)
    assert machines, "the build offers no versioned pc/q35 machine type"
    bad = []
    for m in machines:
        for cell in compat_matrix.check_machine(qemu_build, m):
            if not cell.ok:
                bad.append(f"{m} {cell.prop}: QEMU {cell.actual!r}, model {cell.expected!r}")
    assert not bad, "\n".join(bad)


def test_spec_version_property_is_checked(qemu_build: QemuBuild) -> None:
    """The matrix is not empty: spec_version exists in every build here."""
    cells = compat_matrix.check_machine(qemu_build, compat_matrix.machines_of(qemu_build)[-1])
    assert any(c.prop == "spec_version" for c in cells)


@pytest.mark.parametrize("version", [*plan.boundaries(), "newest"])
def test_behaviour_on_boundary_machine_types(qemu_build: QemuBuild, version: str) -> None:
    q35 = qemu_build.versioned_machines("q35")
    machine = q35[-1] if version == "newest" else f"pc-q35-{version}"
    if machine not in q35:
        pytest.skip(f"QEMU {qemu_build.name} has no machine type {machine}")
    sc = all_scenarios()["compat-card-behaviour"]
    res = runner.run(qemu_build, sc, machine)
    if res.status == runner.SKIP:
        pytest.skip(res.reason)
    assert res.ok, res.divergence.render() if res.divergence else res.reason
