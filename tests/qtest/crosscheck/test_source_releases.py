"""The check's quick groups on each QEMU release built from Debian's sources.

A source release is a different QEMU from any Debian binary (no Debian
build options, and for 11.0.3 none of Debian's patches), and the version
boundaries in :mod:`harness.ledger.boundaries` rest on them.  Each is
looked for in the cache, where ``sdqtest qemu build VERSION`` puts it
(``source/<version>/plain/qemu-system-x86_64``), and a release not built
there is skipped with the command that builds it.  ``sdqtest check --qemu PATH`` runs every
group; here the groups where the version boundaries show.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import harness.scenarios as scenario
from harness.check import runner
from harness.ledger import boundaries
from harness.provision import source
from harness.qemu import builds
from harness.qemu.pool import QemuPool

pytestmark = pytest.mark.qemu

#: Groups of a few seconds each that exercise the boundaries' behaviour
#: (command rework, SDMA rework, Host Control 2, eMMC presence and registers).
QUICK_GROUPS = ("boundaries", "commands", "registers", "card", "interrupts", "emmc-registers")

SOURCE_BUILDS = [b for b in boundaries.BUILDS if b.name.endswith(" src")]


def _version(b: boundaries.Build) -> str:
    return ".".join(map(str, b.version))


def _binary(b: boundaries.Build) -> Path | None:
    exe = source.wanted(source.RELEASES[_version(b)]).binaries[0]
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def _quick() -> list[scenario.Scenario]:
    return sorted((s for s in scenario.all_scenarios().values() if s.group in QUICK_GROUPS),
                  key=lambda s: (s.group, s.name))


def test_source_builds_are_recorded() -> None:
    """Every source release the boundaries name is in :data:`boundaries.BUILDS`
    once, with the version its name says."""
    assert SOURCE_BUILDS, "no source release recorded"
    for b in SOURCE_BUILDS:
        assert b.name == f"{_version(b)} src"
    assert {sc.group for sc in _quick()} == set(QUICK_GROUPS)


@pytest.mark.slow
@pytest.mark.parametrize("release", SOURCE_BUILDS, ids=[_version(b) for b in SOURCE_BUILDS])
def test_quick_groups_clean(release: boundaries.Build, tmp_path: Path,
                            qemu_pool: QemuPool) -> None:
    """No unexplained divergence on the quick groups, on the release's own build."""
    exe = _binary(release)
    if exe is None:
        pytest.skip(f"QEMU {_version(release)} is not built: run "
                    f"'{source.command_for(_version(release))}'")
    build = builds.probe(exe)
    if build.version != _version(release):
        pytest.skip(f"{exe} is QEMU {build.version}, not {_version(release)}")
    if not build.profile.has_qtest_accel:
        pytest.skip(f"{exe} has no qtest accelerator")
    bad: list[str] = []
    for sc in _quick():
        res = runner.run(build, sc, "q35", runner.RunOptions(report_dir=tmp_path, pool=qemu_pool))
        if res.status != runner.SKIP and not res.ok:
            detail = res.divergence.render() if res.divergence else res.reason
            bad.append(f"{sc.group}/{sc.name}: {res.status}: {detail.splitlines()[0]}")
    assert not bad, "\n".join(bad)
