"""Migration on real builds: the device's state moved mid-run to a new QEMU
process, held to the model (which does not migrate).

A representative sample (the full matrix is ``sdqtest migrate``): every
build to itself at one point inside a transfer, and older -> newer pairs
at a few points, on the oldest machine type both offer and on a
compat-boundary type.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import images
from harness.check import migration
from harness.cli import main
from harness.machine import CardImage, Machine
from harness.pytest_plugin import require_clock, selected_builds
from harness.qemu import migrate
from harness.qemu.builds import QemuBuild
from harness.qemu.migrate import PCI_REGISTERS as LOST_BY_QEMU
from harness.qemu.session import QemuSession
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu

#: What QEMU does not migrate (sdhci-pci's PCI function) and the harness
#: writes again: anything else lost is a failure.
PCI_REGISTERS = {name for name, _, _ in LOST_BY_QEMU}


def _check(cell: migration.MigrationCell) -> None:
    assert cell.status == "agree", (f"{cell.pair} {cell.machine} {cell.point}: "
                                    f"{cell.status}: {cell.reason} "
                                    f"(reproducer: {cell.reproducer})")
    assert {x.split(":")[0] for x in cell.pci_lost} <= PCI_REGISTERS


@pytest.mark.parametrize("point", ["mid-pio-read"])
def test_same_build(qemu_build: QemuBuild, point: str, tmp_path: Path) -> None:
    require_clock(qemu_build)
    sc = all_scenarios()[f"migrate-{point}"]
    _check(migration.run_cell(migration.Pair(qemu_build, qemu_build), sc, "q35", tmp_path))


@pytest.mark.parametrize("point", ["card-locked", "erase-group-set", "after-cmd6"])
def test_to_the_newest_build(request: pytest.FixtureRequest, qemu_build: QemuBuild,
                             point: str, tmp_path: Path) -> None:
    """``qemu_build`` migrated to the newest selected build, on the newest
    versioned q35 machine type both offer."""
    require_clock(qemu_build)
    newest = max(selected_builds(request.config), key=lambda b: b.profile.version)
    if newest.profile.version <= qemu_build.profile.version:
        pytest.skip(f"QEMU {qemu_build.name} is the newest selected build: no newer one")
    require_clock(newest)
    pair = migration.Pair(qemu_build, newest)
    shared = migration.machines(pair, families=("q35",))
    assert shared, f"{pair.name}: no versioned q35 machine type both offer"
    sc = all_scenarios()[f"migrate-{point}"]
    _check(migration.run_cell(pair, sc, shared[-1], tmp_path))


def test_a_refused_stream_gives_qemu_reason(qemu_build: QemuBuild, tmp_path: Path) -> None:
    """A stream cut in half: the destination refuses it and the refusal
    carries QEMU's own text (what a REFUSED cell reports)."""
    require_clock(qemu_build)
    machine = Machine(type="q35", image=CardImage(images.ensure("sdsc-16m")))
    with QemuTarget(qemu_build.binary, machine) as t:
        stream = tmp_path / "state.migstream"
        migrate.save(t.session, stream)
        data = stream.read_bytes()
        stream.write_bytes(data[: len(data) // 2])
        dest = QemuSession(qemu_build.binary, t.session.machine, accel="qtest",
                           incoming=f"exec:cat {stream}")
        try:
            with pytest.raises(migrate.MigrationRefused) as e:
                migrate.start_destination(dest)  # QEMU may refuse it while starting
                migrate.load(dest)
        finally:
            dest.close()
    assert e.value.stage == "load"
    assert "load of migration failed" in e.value.reason, e.value.reason
    assert "warning" not in e.value.reason


def test_cli_one_cell(qemu_build: QemuBuild, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    """``sdqtest migrate`` on one build, one machine type, one point: the
    table, the summary, exit 0; a ``--from`` build not selected is a usage error."""
    require_clock(qemu_build)
    spec = str(qemu_build.binary)
    rc = main(["migrate", "--qemu", spec, "--machine", "q35", "--point", "idle",
               "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "idle" in out.splitlines()[0] and " ok" in out.splitlines()[2], out
    assert "1 cells: 1 agree" in out
    assert main(["migrate", "--qemu", spec, "--from", "no-such-build"]) == 2
    assert "not among the selected builds" in capsys.readouterr().err
