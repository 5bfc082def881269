"""Optimistic lockstep gives what step by step gives.

The scenario runs ahead on the model's answers and QEMU answers in
pipelined batches (:mod:`harness.check.optimistic`); a difference makes the
runner run the scenario again step by step.  Here:

* a representative sample of the default check (the first scenario of every
  group but migration, which is always step by step) on every build: the
  two modes take the same steps with the same answers and interrupt events,
  send QEMU the same qtest lines, and report the same verdict, step count,
  quirks and adoptions (:func:`harness.check.equivalence.mode_difference`);
  ``sdqtest bench check --equivalence`` does this for every scenario;
* a deliberately broken model (a wrong register value, or interrupt events
  it fails to report, from a given step on): both modes report the same
  first divergence, and the optimistic attempt had found it at the same
  step, so batched answers are attributed to the right operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.check import runner
from harness.check.equivalence import mode_difference
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.scenarios import Scenario, all_scenarios

pytestmark = [pytest.mark.qemu, pytest.mark.slow]


def sample() -> list[Scenario]:
    """The first scenario of each group of the default check but migration."""
    first: dict[str, Scenario] = {}
    for sc in all_scenarios().values():
        if sc.group != "migration":
            first.setdefault(sc.group, sc)
    return list(first.values())


def test_optimistic_equals_step_by_step(qemu_build: QemuBuild, qemu_pool: QemuPool) -> None:
    ran = 0
    for sc in sample():
        for machine in ("q35",):
            step = runner.run(qemu_build, sc, machine, runner.RunOptions(keep=True, pool=qemu_pool,
                                                                         lockstep="step"))
            opt = runner.run(qemu_build, sc, machine, runner.RunOptions(keep=True, pool=qemu_pool))
            assert step.lockstep == "step"
            assert mode_difference(step, opt) == "", f"{sc.name}: {opt.fallback}"
            if step.status != runner.SKIP:
                # the sample agrees on every build: nothing to fall back on
                assert opt.lockstep == "optimistic", f"{sc.name}: {opt.fallback}"
                ran += 1
    assert ran >= len(sample()) // 2


def _break_read(nth: int) -> Callable[..., int]:
    """ModelTarget.read answering its ``nth`` register read with bit 0 flipped."""
    real = ModelTarget.read

    def read(self: ModelTarget, offset: int, size: int) -> int:
        n = getattr(self, "_test_reads", 0) + 1
        self._test_reads = n  # type: ignore[attr-defined]
        value = real(self, offset, size)
        return value ^ 1 if n == nth else value

    return read


def _lose_events(after: int) -> Callable[..., list[bool]]:
    """ModelTarget.irq_events forgetting the events of its first call after
    ``after`` calls that has any."""
    real = ModelTarget.irq_events

    def irq_events(self: ModelTarget) -> list[bool]:
        n = getattr(self, "_test_events", 0) + 1
        self._test_events = n  # type: ignore[attr-defined]
        out = real(self)
        if n > after and out and not getattr(self, "_test_lost", False):
            self._test_lost = True  # type: ignore[attr-defined]
            return []
        return out

    return irq_events


@pytest.fixture(params=[("read", 150), ("read", 400), ("irq", 30), ("irq", 300)],
                ids=lambda p: f"{p[0]}-{p[1]}")
def broken_model(request: pytest.FixtureRequest,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The model, broken: a wrong register value at its Nth read, or the
    interrupt events of one step lost after its Nth step."""
    kind, n = request.param
    if kind == "read":
        monkeypatch.setattr(ModelTarget, "read", _break_read(n))
    else:
        monkeypatch.setattr(ModelTarget, "irq_events", _lose_events(n))
    yield kind


def test_a_broken_model_diverges_at_the_same_step(qemu_build: QemuBuild, qemu_pool: QemuPool,
                                                  broken_model: str, tmp_path: Any) -> None:
    sc = all_scenarios()["irq-during-transfers"]
    if sc.skip_reason(qemu_build.profile, qemu_build.profile.has_qtest_accel):
        pytest.skip("the scenario does not run on this build")
    step = runner.run(qemu_build, sc, "q35",
                      runner.RunOptions(pool=qemu_pool, lockstep="step", keep=True,
                                        report_dir=tmp_path / "step"))
    opt = runner.run(qemu_build, sc, "q35", runner.RunOptions(pool=qemu_pool, keep=True,
                                                              report_dir=tmp_path / "opt"))
    d = step.divergence
    assert step.status == runner.DIVERGE and d is not None, step.reason
    assert d.kind == ("result" if broken_model == "read" else "irq"), d.render()
    # the same report: step, kind, fields, context, history, steps and trace
    assert mode_difference(step, opt) == ""
    # the optimistic attempt found it, at that very step, before running it
    # again: optimistically, in step there, going on past it (resync), or
    # step by step
    assert opt.lockstep in ("fallback", "resync")
    assert f"step {d.step.index} differs" in opt.fallback, opt.fallback
    traces = [sorted(len(p.read_text().splitlines()) for p in (tmp_path / w).glob("*.qtest"))
              for w in ("step", "opt")]
    assert traces[0] == traces[1] and len(traces[0]) == len(step.differences) >= 1
    # every difference the run went on past, the same way; and again, where
    # the run starts with the reads the last one learnt differ (sync_reads)
    want = [(x.signature, x.divergence.step.index, x.repeats, x.adopted)
            for x in step.differences]
    again = runner.run(qemu_build, sc, "q35", runner.RunOptions(pool=qemu_pool))
    for res in (opt, again):
        assert [(x.signature, x.divergence.step.index, x.repeats, x.adopted)
                for x in res.differences] == want


def test_an_error_with_answers_in_flight_leaves_the_process_resettable(
        qemu_build: QemuBuild) -> None:
    """A harness error while batches are queued and in flight: the attempt
    is abandoned (QEMU's answers still due read and dropped), the process is
    reset for the step-by-step run, which reports the error as step mode
    does."""
    from harness.scenarios.common import ready
    from harness.scenarios.registry import Scenario as Sc

    def fn(t: Any, ctx: Any) -> None:
        ready(t)
        for _ in range(1500):  # a full batch sent, more queued
            t.read(0x24, 4)
        raise RuntimeError("a harness bug, for the test")

    with QemuPool() as pool:
        res = runner.run(qemu_build, Sc("raises-mid-batch", "data", fn, needs_clock=True),
                         "q35", runner.RunOptions(pool=pool))
        assert res.status == runner.ERROR and "a harness bug" in res.reason, res.reason
        assert res.lockstep == "fallback" and "a harness bug" in res.fallback
        assert pool.stats.reused == 1 and pool.stats.fallbacks == [], pool.stats


def test_the_predicted_answer_texts_are_qemus(qemu_build: QemuBuild) -> None:
    """A batch agrees at a glance when QEMU's answers are the texts the
    model's values predict (:func:`harness.check.optimistic.expected_answers`):
    each kind of queued operation, sent to QEMU, answers exactly that text,
    and a different value does not."""
    from harness.check.optimistic import expected_answers
    from harness.hwdefs import sdhci
    from harness.machine import Machine
    from harness.qemu.target import QemuTarget

    with QemuTarget(qemu_build.binary, Machine()) as t:
        ops: list[tuple[str, tuple[Any, ...], Any]] = [
            ("write", (sdhci.SDMASYSAD.offset, 4, 0x1234_5678), None),
            ("read", (sdhci.SDMASYSAD.offset, 4), 0x1234_5678),
            ("read", (sdhci.SDMASYSAD.offset, 1), 0x78),
            ("mem_write", (0x10_0000, bytes(range(256)) * 300), None),
            ("mem_read", (0x10_0000, 256 * 300), bytes(range(256)) * 300),
        ]
        if t.session.has_clock:
            ops.append(("clock_step", (1000,), t.clock_step(1) + 1000))
        for op, args, value in ops:
            lines = t.op_lines(op, args)
            answers = t.qtest.pipeline(lines)
            assert answers == expected_answers(op, value, t.clock_base, len(lines)), op
        wrong = expected_answers("read", 0x1234_5679, 0, 1)
        lines = t.op_lines("read", (sdhci.SDMASYSAD.offset, 4))
        assert t.qtest.pipeline(lines) != wrong
