"""The project's own reproducers replay to the verdict of the run that
wrote them, on the build that produced them: an agreeing input whose trace
holds DMA-sized ``b64write``/``b64read`` lines (11 KiB and more) replays
clean with the model agreeing on every read; a divergence replays with the
model disagreeing (exit 1); a crash replays as a crash at its line (exit
3).  A failure seen on a reused QEMU is a finding only when it fails again
on a fresh one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness import cli
from harness.fuzz import campaign as C
from harness.fuzz import emit
from harness.fuzz.corpus import Corpus
from harness.fuzz.ops import generate
from harness.fuzz.run import CRASH, OK, FuzzOutcome, execute, fuzz_machine
from harness.model.sdcard import SDCard
from harness.qemu.argv import qemu_argv
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.replay import engine as replay

pytestmark = pytest.mark.qemu



def _replay(build: QemuBuild, trace: Path, capsys: pytest.CaptureFixture[str]) -> tuple[
        int, str]:
    rc = cli.main(["replay", str(trace), "--qemu", str(build.binary)])
    return rc, capsys.readouterr().out


def test_agreeing_input_with_dma_lines_replays_clean(qemu_build: QemuBuild, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ops = generate(random.Random("0:2"), 24)
    out = execute(qemu_build.binary, qemu_build.profile, ops, name=qemu_build.name)
    assert out.status == OK, out.reason
    long_lines = [ln for ln in out.trace if len(ln) > 4095]
    assert long_lines and any(ln.startswith("b64") for ln in long_lines)
    d = emit.write(out, ops, "test:agree", qemu_build.name, tmp_path)
    res = replay.replay_qemu(qemu_build.binary, replay.read_trace(d / "repro.qtest"),
                             replay.replay_machine(d / "repro.qtest"))
    assert res.verdict == replay.CLEAN and res.answered == len(out.trace)
    rc, text = _replay(qemu_build, d / "repro.qtest", capsys)
    assert rc == 0 and "Traceback" not in text, text
    assert "model disagrees" not in text


def test_divergence_replays_as_a_model_disagreement(newest_build: QemuBuild, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    real = SDCard.do_command

    def broken(self: SDCard, cmd: int, arg: int) -> bytes:
        resp = real(self, cmd, arg)
        return resp[:3] + bytes([resp[3] | 1]) if cmd == 55 and len(resp) == 4 else resp

    monkeypatch.setattr(SDCard, "do_command", broken)
    with QemuPool() as pool:  # found on a reused QEMU, confirmed on a fresh one
        st = C.Campaign(newest_build, Corpus(tmp_path), seed=0, shrink_calls=20,
                        pool=pool).run(count=1)
    assert [f.signature.split(" | ")[0] for f in st.found] == ["diverge:result:RSPREG0.RSP"]
    assert st.unconfirmed == {}
    rc, text = _replay(newest_build, st.found[0].directory / "repro.qtest", capsys)
    assert rc == 1 and "model disagrees" in text, text


def test_crash_reproducer_replays_as_a_crash(qemu_build: QemuBuild, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # A crash outcome as the fuzzer records it; QEMU's qtest server asserts
    # on a zero-length read (system/qtest.c), a crash every build has.
    machine = fuzz_machine()
    out = FuzzOutcome(CRASH, reason="QEMU killed by SIGABRT", machine=machine,
                  trace=["endianness", "read 0x0 0x0"], crash_site="signal 6",
                  replay_argv=qemu_argv(qemu_build.binary, machine, qtest="stdio",
                                        qtest_log="none", snapshot=True))
    d = emit.write(out, [], "crash:signal N", qemu_build.name, tmp_path)
    rc, text = _replay(qemu_build, d / "repro.qtest", capsys)
    assert rc == 3 and "crashed (signal SIGABRT) at trace line 2 of 2" in text, text


def test_failure_only_on_a_reused_qemu_is_not_a_finding(newest_build: QemuBuild, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An input that fails on the pool's QEMU but passes on a fresh one (as
    state carried over would) is counted apart, never shrunk or written."""
    pool = QemuPool()  # lends nothing here: execute_fresh is the stand-in below
    camp = C.Campaign(newest_build, Corpus(tmp_path), seed=0, pool=pool)
    fresh_runs: list[int] = []

    def fresh(ops: list[dict[str, object]]) -> FuzzOutcome:
        fresh_runs.append(len(ops))
        return FuzzOutcome(OK)

    monkeypatch.setattr(camp, "execute_fresh", fresh)
    st = C.Stats(newest_build.name)
    camp._finding("diverge:result:mem_read", [{"op": "read", "off": 0, "size": 4}],
                  FuzzOutcome("diverge"), st)
    assert st.found == [] and st.unconfirmed == {"diverge:result:mem_read": 1}
    pool.close()
    assert fresh_runs == [1]
    findings = tmp_path / "findings"
    assert not findings.exists() or not any(findings.iterdir())


def test_model_error_replays_as_a_one_line_model_error(qemu_build: QemuBuild, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """A fuzz ``error`` finding (the model raised) replays with the model
    raising again: said in one line, exit 1, never a traceback."""
    from harness.model.target import ModelTarget

    ops = generate(random.Random("0:4"), 24)
    out = execute(qemu_build.binary, qemu_build.profile, ops, name=qemu_build.name)
    d = emit.write(out, ops, "error:RuntimeError at model", qemu_build.name, tmp_path)

    def broken(self: ModelTarget, offset: int, size: int) -> int:
        raise RuntimeError("model bug on purpose")

    monkeypatch.setattr(ModelTarget, "read", broken)
    rc, text = _replay(qemu_build, d / "repro.qtest", capsys)
    assert rc == 1 and "Traceback" not in text, text
    assert "model error: " in text and "RuntimeError: model bug on purpose" in text
