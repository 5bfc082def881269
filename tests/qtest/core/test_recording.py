"""The replayed QEMU answers from its recording, and a run that leaves the
recorded path diverges at that step."""

from __future__ import annotations

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.check.recording import Call, Departed, Recording, ReplayTarget
from harness.machine import Machine
from tests.qtest.fakes import FakeTarget


def _recording() -> Recording:
    rec = Recording(machine=Machine(type="q35"), trace=["readl 0x24", "writew 0x2c 0x1"])
    rec.calls = [Call("read", (0x24, 4), 7, 1), Call("irq_level", (), False, 1),
                 Call("write", (0x2c, 2, 1), None, 2), Call("irq_level", (), False, 2)]
    return rec


def test_replay_answers_in_order_and_trims_the_trace() -> None:
    t = ReplayTarget(_recording())
    assert t.trace == []
    assert t.read(0x24, 4) == 7 and t.trace == ["readl 0x24"]
    with pytest.raises(Departed, match="recorded path"):
        t.write(0x2c, 2, 2)


def test_leaving_the_recorded_path_is_a_divergence_at_that_step() -> None:
    lock = LockstepTarget(FakeTarget("model", {0x24: 7, 0x28: 7}), ReplayTarget(_recording()))
    assert lock.read(0x24, 4) == 7
    with pytest.raises(Divergence) as e:
        lock.read(0x28, 4)
    assert e.value.kind == "path" and e.value.step.index == 1
    assert "recorded path" in e.value.fields[0]
