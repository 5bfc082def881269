"""A deliberately wrong model produces a decoded divergence and a trace
that reproduces QEMU's side of it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.check import runner
from harness.driver.host import HostDriver
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
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


def _select_then_status(flag: dict[str, bool]) -> Callable[[Target, Context], None]:
    def run(t: Target, ctx: Context) -> None:
        d = HostDriver(t)
        d.init()  # CMD3: the card draws its RCA (randomly since QEMU 9.1)
        d.cmd(13, d.card.rca << 16)  # CMD13 SEND_STATUS to that RCA
        flag["last"] = True
        t.read(H.RSPREG0.offset, 4)
        flag["last"] = False
    return run


def test_a_reproducer_from_a_reused_process_replays_on_a_fresh_one(
    qemu_build: QemuBuild, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reproducer of a run on a reused QEMU process (whose earlier runs
    drew RCAs) replays on a fresh QEMU: its commands carry the RCA, and a
    fresh, seeded launch draws the same one (``-seed``; the runner runs a
    differing reused run again on a fresh process before writing it)."""
    real_read = ModelTarget.read
    params: dict[str, bool] = {}

    def wrong(self: ModelTarget, offset: int, size: int) -> int:
        v = real_read(self, offset, size)
        return v ^ 0x100 if params.get("last") and offset == H.RSPREG0.offset else v

    plain = Scenario("select-status", "selftest", _select_then_status({}))
    broken = Scenario("select-status-wrong", "selftest", _select_then_status(params))
    with QemuPool() as pool:
        first = runner.run(qemu_build, plain, "q35", runner.RunOptions(pool=pool))
        assert first.status == runner.AGREE, first.reason
        monkeypatch.setattr(ModelTarget, "read", wrong)
        res = runner.run(qemu_build, broken, "q35",
                         runner.RunOptions(pool=pool, report_dir=tmp_path))
    assert res.status == runner.DIVERGE and res.divergence is not None
    d = res.divergence
    assert d.step.args[:2] == (H.RSPREG0.offset, 4)
    out = subprocess.run(["sh", str(d.trace_file)], capture_output=True, text=True, timeout=60)
    answers = [ln for ln in out.stdout.splitlines() if ln.startswith("OK")]
    assert answers[-1] == f"OK 0x{d.step.qemu:016x}"
