"""``sdqtest fuzz`` on a real QEMU: a short campaign, a deliberately wrong
model rule found and shrunk, and field reproducers replayed on the model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.fuzz import campaign as C
from harness.fuzz.corpus import Corpus
from harness.fuzz.run import ERROR, OK, FuzzOutcome, execute
from harness.model.sdcard import SDCard
from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay
from harness.replay import rewrite

pytestmark = pytest.mark.qemu

FIELD = Path(__file__).resolve().parent / "field_inputs"



def test_short_campaign_runs_inputs_in_lockstep(newest_build: QemuBuild, tmp_path: Path) -> None:
    lines: list[str] = []
    st = C.Campaign(newest_build, Corpus(tmp_path), seed=0, progress=lines.append).run(count=3)
    assert st.execs == 3 and ERROR not in st.by_status, st.by_status
    assert st.kept >= 1 and lines and "execs" in lines[-1]
    out = execute(newest_build.binary, newest_build.profile, Corpus(tmp_path).inputs()[0],
                  name=newest_build.name)
    assert out.status == OK and out.steps > 50 and out.trace  # it did drive the devices


def test_wrong_model_rule_is_found_and_shrunk(newest_build: QemuBuild, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A model broken on purpose (bit 0 of the card's CMD55 response set) is
    a finding with a short reproducer, whose C test asserts the model's
    value where QEMU answers otherwise."""
    real = SDCard.do_command

    def broken(self: SDCard, cmd: int, arg: int) -> bytes:
        resp = real(self, cmd, arg)
        return resp[:3] + bytes([resp[3] | 1]) if cmd == 55 and len(resp) == 4 else resp

    monkeypatch.setattr(SDCard, "do_command", broken)
    camp = C.Campaign(newest_build, Corpus(tmp_path), seed=0, shrink_calls=30)
    st = camp.run(count=1)
    assert [f.signature.split(" | ")[0] for f in st.found] == ["diverge:result:RSPREG0.RSP"]
    f = st.found[0]
    assert f.shrunk_len <= 2 < f.original_len
    c_text = (f.directory / "repro.c").read_text()
    m = re.search(r"g_assert_cmphex\(qtest_readl\(s, (0x[0-9a-f]+)\), ==, (0x[0-9a-f]+)\)",
                  c_text)
    assert m, c_text[-600:]
    trace = f.directory / "repro.qtest"
    res = replay.replay_qemu(newest_build.binary, replay.read_trace(trace),
                             replay.replay_machine(trace))
    line, answer = res.answers[-1]
    assert line == f"readl {m.group(1)}" and int(answer.split()[1], 0) != int(m.group(2), 0)
    monkeypatch.setattr(SDCard, "do_command", real)
    ops = __import__("json").loads((f.directory / "finding.json").read_text())["ops"]
    b = newest_build
    assert execute(b.binary, b.profile, ops, name=b.name).status == OK


@pytest.mark.parametrize("name", ["shell-form-bar-e0000000.sh",
                                  "header-q35-bar-febf1000.qtest"])
def test_field_reproducer_runs_on_the_model(qemu_build: QemuBuild, name: str) -> None:
    path = FIELD / name
    argv = replay.field_argv(path)
    assert argv is not None
    machine = replay.replay_machine(path)
    res = replay.replay_qemu(qemu_build.binary, replay.read_trace(path), machine,
                             argv=rewrite.replay_argv(argv, str(qemu_build.binary)))
    assert not res.crashed and res.answered == res.lines
    assert res.sdhci_devfn is not None
    replay.replay_model(res, qemu_build.profile, machine)
    assert res.model_checked, res.model_reason
    assert res.model_reads >= 5 and res.model_diffs == []


def test_field_reproducer_becomes_fuzz_input(newest_build: QemuBuild) -> None:
    from harness.fuzz.inputs import trace_ops

    ops = trace_ops(FIELD / "header-q35-bar-febf1000.qtest", newest_build.binary,
                    newest_build.profile)
    assert ops[0] == {"op": "read", "off": 0x24, "size": 4}
    assert {"op": "write", "off": 0x29, "size": 1, "value": 0x0F} in ops
    out = execute(newest_build.binary, newest_build.profile, ops, name=newest_build.name)
    assert out.status == OK, out.reason


def test_a_time_budget_holds_shrinking_too(newest_build: QemuBuild, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``--time`` is the campaign's whole budget: exploring stops a share
    before the end once something is found, shrinking stops at the end and
    says what it left.  The campaign's clock is one second per input run,
    so the test does not depend on how fast the machine is; the inputs run
    optimistically on a pool's QEMUs, as the CLI runs them."""
    import types

    from harness.qemu.pool import QemuPool

    real = SDCard.do_command

    def broken(self: SDCard, cmd: int, arg: int) -> bytes:
        resp = real(self, cmd, arg)
        return resp[:3] + bytes([resp[3] | 1]) if cmd == 55 and len(resp) == 4 else resp

    monkeypatch.setattr(SDCard, "do_command", broken)
    now = [0.0]
    monkeypatch.setattr(C, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    with QemuPool() as pool:
        camp = C.Campaign(newest_build, Corpus(tmp_path), seed=0, shrink_calls=500, pool=pool)
        real_execute, real_fresh = camp.execute, camp.execute_fresh

        def execute_one_second(ops: list[dict[str, object]]) -> FuzzOutcome:
            now[0] += 1.0
            return real_execute(ops)

        def fresh_one_second(ops: list[dict[str, object]]) -> FuzzOutcome:
            now[0] += 1.0  # a finding is confirmed and shrunk on fresh QEMUs
            return real_fresh(ops)

        monkeypatch.setattr(camp, "execute", execute_one_second)
        monkeypatch.setattr(camp, "execute_fresh", fresh_one_second)
        st = camp.run(seconds=12.0)
    assert [f.signature.split(" | ")[0] for f in st.found] == ["diverge:result:RSPREG0.RSP"]
    # the first input found it: 9 s of exploring (12 less a quarter), then
    # its confirmation on a fresh QEMU (10 s), shrinking until 12 s (two
    # runs), and one run of the shrunk input
    assert st.execs == 9 and st.seconds <= 13.0, (st.execs, st.seconds)
    assert len(st.unshrunk) == 1 and "shrinking stopped at the time budget" in st.unshrunk[0]
    assert st.found[0].shrink_runs == 2
