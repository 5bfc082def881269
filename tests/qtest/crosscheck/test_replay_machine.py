"""A reproducer replays on the machine it was recorded on, not on q35."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from harness.check import runner
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.scenarios import Context, Scenario
from harness.target import Target

pytestmark = pytest.mark.qemu


def _poke(t: Target, ctx: Context) -> None:
    t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN)
    t.read(H.CLKCON.offset, 2)
    t.read(H.HCVER.offset, 2)


def _i440fx(build: QemuBuild) -> str:
    """pc-i440fx-9.0 where the build has it, else its newest pc-i440fx type:
    either way not q35, and sdhci-pci sits in another PCI slot than on q35."""
    if "pc-i440fx-9.0" in build.profile.machine_types:
        return "pc-i440fx-9.0"
    found = build.versioned_machines("pc")
    if not found:
        pytest.skip(f"QEMU {build.name} has no pc-i440fx machine type")
    return found[-1]


def test_reproducer_replays_on_its_machine_type(
    qemu_build: QemuBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    machine = _i440fx(qemu_build)
    real_read = ModelTarget.read

    def wrong(self: ModelTarget, offset: int, size: int) -> int:
        v = real_read(self, offset, size)
        return v ^ 0x0100 if offset == H.HCVER.offset else v

    monkeypatch.setattr(ModelTarget, "read", wrong)
    sc = Scenario("wrong-hcver", "selftest", _poke, sd_card={"spec_version": 2})
    res = runner.run(qemu_build, sc, machine, runner.RunOptions(report_dir=tmp_path))
    monkeypatch.undo()
    assert res.status == runner.DIVERGE and res.divergence is not None
    trace = Path(res.divergence.trace_file).with_suffix(".qtest")
    assert trace.is_file()

    # Replayed on the recorded machine type (where sdhci-pci is where the
    # trace maps it), QEMU answers as it did and the now correct model
    # agrees with every read.  Replayed on q35 the trace would map an empty
    # slot and the model could not follow it.
    rc = cli.main(["replay", str(trace), "--qemu", str(qemu_build.binary)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "model agrees on every register and memory read" in out, out

    from harness.replay import engine as replay

    m = replay.replay_machine(trace)
    assert m.type == machine
    assert dict(m.card_props) == {"spec_version": 2}
    assert m.image is not None and m.image.path is not None and m.image.path.is_file()
    got = replay.replay_qemu(qemu_build.binary, replay.read_trace(trace), m)
    assert not got.crashed and got.answered == got.lines
    assert got.answers[-1][1] == f"OK 0x{res.divergence.step.qemu:016x}"
