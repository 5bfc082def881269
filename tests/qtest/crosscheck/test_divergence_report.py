"""A deliberately wrong model produces a decoded divergence and a trace
that reproduces QEMU's side of it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

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


def test_wrong_model_is_caught_and_replayable(
    qemu_build: QemuBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read = ModelTarget.read

    def wrong(self: ModelTarget, offset: int, size: int) -> int:
        v = real_read(self, offset, size)
        return v ^ 0x0100 if offset == H.HCVER.offset else v  # wrong vendor version

    monkeypatch.setattr(ModelTarget, "read", wrong)
    sc = Scenario("wrong-hcver", "selftest", _poke)
    res = runner.run(qemu_build, sc, "q35", runner.RunOptions(report_dir=tmp_path))
    assert res.status == runner.DIVERGE
    d = res.divergence
    assert d is not None and d.step.op == "read" and d.step.args[:2] == (H.HCVER.offset, 2)
    text = d.render()
    assert "HCVER" in text and "VENDOR" in text.upper()
    # The reproducer replays on QEMU and ends with QEMU's answer to the read.
    script = Path(d.trace_file)
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=60)
    answers = [ln for ln in out.stdout.splitlines() if ln.startswith("OK")]
    assert answers[-1] == f"OK 0x{d.step.qemu:016x}"


def test_lockstep_reports_irq_divergence(qemu_build: QemuBuild, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ModelTarget, "irq_level", lambda self: True)
    sc = Scenario("wrong-irq", "selftest", _poke)
    res = runner.run(qemu_build, sc, "q35", runner.RunOptions(report_dir=tmp_path))
    assert res.status == runner.DIVERGE
    assert res.divergence is not None and res.divergence.kind == "irq"
