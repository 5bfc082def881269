"""The recordings replayed in lockstep on real QEMU builds, and one optional recording.

The lockstep test runs the drivers group as the default check does, on every
selected x86 build: each recording agrees, and each phase leaves its note.  The
recording test boots Debian's kernel under TCG (a minute or more): slow, and only
with a build installed and the guest's packages at hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import images
from harness.check import runner, session
from harness.guest import record, record_init
from harness.hwdefs.boards import machine_type
from harness.pytest_plugin import selected_builds
from harness.scenarios import drivers, drivers_convert, drivers_trace


@pytest.mark.qemu
def test_every_recording_agrees_on_every_build(request: pytest.FixtureRequest,
                                               tmp_path: Path) -> None:
    builds = [b for b in selected_builds(request.config) if b.has_sdhci_pci]
    if not builds:
        pytest.skip("no QEMU build installed: run 'sdqtest qemu install' or pass --sdq-qemu")
    req = session.CheckRequest(qemu=tuple(str(b.binary) for b in builds),
                               groups=(drivers.GROUP,), no_boards=True, jobs=1,
                               report_dir=tmp_path)
    out = session.run(session.plan(req), lambda _s: None)
    pc = [r for r in drivers.recordings() if not r.get("board")]
    assert len(out.results) == len(builds) * len(pc)
    _agree_with_every_phase_noted(out.results)


def _agree_with_every_phase_noted(results: list[runner.Result]) -> None:
    for r in results:
        assert r.status == runner.AGREE, (r.build, r.scenario, r.reason)
        noted = [p[0] for n in r.notes if (p := drivers.parse_note(n))]
        rec = next(x for x in drivers.recordings() if x["name"] == r.scenario)
        assert noted == [ph["name"] for ph in rec["phases"]]


@pytest.mark.qemu
def test_every_board_recording_agrees_on_the_arm_builds(tmp_path: Path) -> None:
    from harness.provision.install_arm import installed_arm_builds

    boards = sorted({r["board"] for r in drivers.recordings() if r.get("board")})
    if not boards or not installed_arm_builds():
        pytest.skip("no board recording, or no ARM build installed (sdqtest qemu install)")
    req = session.CheckRequest(boards=tuple(boards), groups=(drivers.GROUP,), jobs=1,
                               report_dir=tmp_path)
    out = session.run(session.plan(req), lambda _s: None)
    ran = [r for r in out.results if r.status != runner.SKIP]
    # each on its own board's machine (raspi3b-sdhost's runs: the board's name)
    assert ran and all(r.scenario.endswith(machine_type(r.machine)) for r in ran)
    _agree_with_every_phase_noted(ran)


@pytest.mark.qemu
@pytest.mark.slow
def test_a_recording_boot_gives_every_phase(request: pytest.FixtureRequest,
                                            tmp_path: Path) -> None:
    """One real recording on the newest build: every phase is marked in the trace,
    the controller's accesses convert, and the card's RCA is learnt."""
    found = [b for b in selected_builds(request.config) if b.has_sdhci_pci]
    if not found:
        pytest.skip("no QEMU build installed: run 'sdqtest qemu install' or pass --sdq-qemu")
    raw = record.record(found[-1], images.ensure("sdsc-16m"), tmp_path, {})
    assert raw.transcript.done and not raw.transcript.errors, raw.transcript.errors
    phases = drivers_trace.read_trace(raw.trace, list(record_init.PHASES))
    assert list(phases) == list(record_init.PHASES)
    out, ctx = drivers_convert.convert(phases, raw.image_after, images.recipe("sdsc-16m"),
                                       record_init.PATTERNS, 2)
    assert ctx.rca and ctx.byte_addressed and all(p["ops"] for p in out)


@pytest.mark.qemu
def test_strict_mode_runs_a_board_recording_on_its_own_board(tmp_path: Path) -> None:
    """``check --strict --board mcimx7d``: the i.MX recording runs on mcimx7d-sabre
    (not on a PC machine type an ARM build does not have, where every run would
    only be skipped), and the card's deviations a real driver meets are found
    there as on the PC (the OCR's reserved voltage bits, read by every probe)."""
    from harness.check import strict
    from harness.commands.check import _strict_groups
    from harness.provision.install_arm import installed_arm_builds

    if not installed_arm_builds():
        pytest.skip("no ARM build installed (sdqtest qemu install)")
    req = session.CheckRequest(boards=("mcimx7d",), groups=(drivers.GROUP,), strict=True,
                               jobs=1, report_dir=tmp_path)
    groups = _strict_groups(session.plan(req), "q35")
    assert groups and {m for _, m, _ in groups} == {"mcimx7d-sabre"}
    assert {sc.name for _, _, scs in groups for sc in scs} == {
        "linux-6.1.0-sdhci-esdhc-imx-mcimx7d-sabre"}
    build, machine, scs = groups[-1]
    rep = strict.findings_for(build, scs, machine, tmp_path)
    assert [r.status for r in rep.results] != [runner.SKIP]
    assert "sd.ocr-reserved-voltage-bits" in {f.deviation.key for f in rep.findings}
