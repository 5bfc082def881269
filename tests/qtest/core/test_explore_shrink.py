"""The check's shrink phase (:mod:`harness.check.explore_shrink`): an explore
divergence is cut, through the check's own runner, to the operations that
keep its first difference's signature; the shortest input's run writes the
reproducer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.check import explore_shrink, runner
from harness.check.divergence import Divergence
from harness.check.step import Step
from harness.check.testbench import RunSpec
from harness.driver.ops import Op
from harness.profile import NEWEST
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario, explore

SIG = "result:PRNSTS.DATINHIBIT | CMD17 | data"
#: The one operation that makes the fake QEMU differ.
CULPRIT: Op = {"op": "write", "off": 0x2C, "size": 2, "value": 0x7}


def _ops() -> list[Op]:
    return [{"op": "read", "off": 4 * i, "size": 4} for i in range(12)] + [CULPRIT] + [
        {"op": "probe"}, {"op": "read", "off": 0x30, "size": 4}]


def _fake(seen: list[tuple[list[Op], runner.RunOptions]]) -> explore_shrink.Run:
    """A runner whose QEMU differs (signature :data:`SIG`) exactly when the
    input writes :data:`CULPRIT`, its reproducer under the run's report_dir."""
    def run(sc: Scenario, opts: runner.RunOptions) -> runner.Result:
        got: list[list[Op]] = []
        sc.fn(got, None)  # type: ignore[arg-type]  # explore.replay is patched below
        ops = got[0]
        seen.append((ops, opts))
        res = runner.Result("11.1", sc.name, sc.group, "q35", runner.AGREE)
        if CULPRIT in ops:
            d = Divergence(Step(len(ops), "read", (0x24, 4), 1, 0, False, False), "result", [],
                           signature=SIG)
            d.trace_file = str(opts.report_dir / "x.sh") if opts.report_dir else ""
            res.status, res.divergence = runner.DIVERGE, d
        return res
    return run


@pytest.fixture
def spec(monkeypatch: pytest.MonkeyPatch) -> RunSpec:
    def replay(ops: list[Op], target: Any, migrate: Any = None) -> None:
        target.append(ops)

    monkeypatch.setattr(explore, "replay", replay)
    sc = Scenario("explore-999", explore.GROUP, lambda t, c: None)
    return RunSpec(QemuBuild("11.1", Path("/nonexistent"), NEWEST), sc, "q35")


def test_a_divergence_is_cut_to_the_operation_that_makes_it(spec: RunSpec,
                                                            tmp_path: Path) -> None:
    seen: list[tuple[list[Op], runner.RunOptions]] = []
    got = explore_shrink.shrink(spec, _ops(), SIG, tmp_path, run=_fake(seen))
    assert isinstance(got, explore_shrink.Shrunk)
    assert (got.before, got.after, got.signature) == (15, 1, SIG)
    assert got.reproducer == str(tmp_path / "x.sh")
    final_ops, final_opts = seen[-1]
    assert final_ops == [CULPRIT] and final_opts.report_dir == tmp_path
    # only the last run writes reproducers; each run stops at its first difference
    assert all(o.report_dir is None for _, o in seen[:-1])
    assert all(o.max_differences == 1 for _, o in seen)


def test_another_signature_is_no_reproduction(spec: RunSpec, tmp_path: Path) -> None:
    seen: list[tuple[list[Op], runner.RunOptions]] = []
    got = explore_shrink.shrink(spec, _ops(), "image | CMD24 | rcv", tmp_path, run=_fake(seen))
    assert got == explore_shrink.NotShrunk("11.1", "explore-999")
    assert len(seen) == 1


def test_the_phase_takes_explore_divergences_only(spec: RunSpec, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    name = explore.load()["inputs"][0]["name"]
    ex = RunSpec(spec.build, Scenario(name, explore.GROUP, lambda t, c: None), "q35")
    other = RunSpec(spec.build, Scenario("card-registers", "registers", lambda t, c: None))
    d = Divergence(Step(3, "read", (0x24, 4), 1, 0, False, False), "result", [], signature=SIG)
    diverged = runner.Result("11.1", "x", "g", "q35", runner.DIVERGE, divergence=d)
    agreed = runner.Result("11.1", "y", "g", "q35", runner.AGREE)
    calls: list[tuple[str, str, Path]] = []

    def shrink(s: RunSpec, ops: list[Op], sig: str, out: Path) -> explore_shrink.NotShrunk:
        calls.append((s.scenario.name, sig, out))
        return explore_shrink.NotShrunk(s.build.name, s.scenario.name)

    monkeypatch.setattr(explore_shrink, "shrink", shrink)
    ran = [(other, diverged), (ex, agreed), (ex, diverged), (ex, diverged)]
    got = explore_shrink.phase(ran, tmp_path, 1)
    assert calls == [(name, SIG, tmp_path / "explore-findings")] and len(got) == 1
    assert explore_shrink.phase(ran, tmp_path, 0) == []
