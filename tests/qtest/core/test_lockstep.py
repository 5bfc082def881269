"""The lockstep engine's own logic, on two small fake targets that differ
on purpose (the real cross-check is tests/qtest/crosscheck)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.check.lockstep import Divergence, LockstepTarget, collapse
from harness.check.quirks import QuirkSet
from harness.hwdefs import sdhci as H
from harness.images import BLOCK, Recipe
from harness.ledger import EVERY_VERSION, KnownDifference, ReadMatch, Scope, Versions
from harness.profile import BuildProfile
from tests.qtest.fakes import FakeTarget


def _fake(name: str, regs: dict[int, int]) -> FakeTarget:
    """The shared fake with its line following Command Complete."""
    return FakeTarget(name, regs, irq=None)


def test_first_difference_is_reported_with_fields_and_history() -> None:
    model = _fake("model", {H.HCVER.offset: 0x2401})
    qemu = _fake("qemu", {H.HCVER.offset: 0x2402})
    t = LockstepTarget(model, qemu)
    t.write(H.CMDREG.offset, 2, H.cmdreg(17))
    with pytest.raises(Divergence) as ei:
        t.read(H.HCVER.offset, 2)
    d = ei.value
    assert d.step.index == 1 and d.kind == "result"
    assert any("SPECVER" in f or "HCVER" in f for f in d.fields)
    assert "CMD17 READ_SINGLE_BLOCK" in d.history[0].describe()


def test_irq_difference_is_a_divergence() -> None:
    # Same register answers, but only the fake QEMU has its line up.
    t = LockstepTarget(_fake("model", {}), _fake("qemu", {H.NORINTSTS.offset: 1}))
    with pytest.raises(Divergence) as ei:
        t.read(H.BLKSIZE.offset, 2)
    assert ei.value.kind == "irq" and ei.value.step.irq_qemu and not ei.value.step.irq_model


def test_quirk_explains_and_unused_quirk_is_stale() -> None:
    explains = KnownDifference("test.hcver", Scope.QEMU_BUG, "test", "HCVER as the spec says",
                               "HCVER vendor byte", EVERY_VERSION,
                               explains=ReadMatch(H.HCVER.offset, mask=0xFF00, scenarios=("s1",)))
    unused = KnownDifference("test.capab", Scope.QEMU_BUG, "test", "CAPAB as the spec says",
                             "CAPAB", EVERY_VERSION,
                             explains=ReadMatch(H.CAPAB.offset, scenarios=("s1",)))
    qs = QuirkSet((explains, unused), BuildProfile(version=(10, 0, 0)), "s1")
    t = LockstepTarget(_fake("model", {H.HCVER.offset: 0x2401}),
                       _fake("qemu", {H.HCVER.offset: 0x2501}), quirks=qs)
    assert t.read(H.HCVER.offset, 2) == 0x2501  # QEMU's answer goes on
    assert [q.key for q, _ in t.applied] == ["test.hcver"]
    assert [q.key for q in qs.expected_here() if q.key not in qs.used] == ["test.capab"]
    # A difference outside the quirk's mask is still a divergence.
    t.model.regs[H.HCVER.offset] = 0x2400  # type: ignore[attr-defined]
    with pytest.raises(Divergence):
        t.read(H.HCVER.offset, 2)


def test_quirks_for_other_builds_do_not_apply() -> None:
    old_only = KnownDifference("test.old", Scope.QEMU_BUG, "test", "x", "y", Versions(None, "8.0"),
                               explains=ReadMatch(H.HCVER.offset))
    qs = QuirkSet((old_only,), BuildProfile(version=(10, 0, 0)), "s")
    t = LockstepTarget(_fake("model", {H.HCVER.offset: 1}), _fake("qemu", {H.HCVER.offset: 2}),
                       quirks=qs)
    with pytest.raises(Divergence):
        t.read(H.HCVER.offset, 2)


def test_reconcile_lets_the_model_adopt_a_random_value() -> None:
    class Adopting(FakeTarget):
        def reconcile(self, op: str, args: tuple[Any, ...], m: Any, q: Any) -> bool:
            self.set(args[0], 4, q)
            return args[0] == H.RSPREG0.offset

    t = LockstepTarget(Adopting("model", {H.RSPREG0.offset: 0x45670500}),
                       _fake("qemu", {H.RSPREG0.offset: 0xBEEF0500}))
    assert t.read(H.RSPREG0.offset, 4) == 0xBEEF0500
    assert len(t.reconciled) == 1


class Pulsing(FakeTarget):
    """A fake that reports interrupt events; a write to ``pulse_on`` raises
    and lowers the line within that one write (the level is unchanged)."""

    def __init__(self, name: str, regs: dict[int, int], pulse_on: int | None = None) -> None:
        super().__init__(name, regs, irq=None)
        self.pulse_on = pulse_on
        self.events: list[bool] = []

    def write(self, offset: int, size: int, value: int) -> None:
        super().write(offset, size, value)
        if offset == self.pulse_on:
            self.events += [True, False]

    def irq_events(self) -> list[bool]:
        out, self.events = self.events, []
        return out


def test_extra_irq_pulse_on_one_side_diverges() -> None:
    t = LockstepTarget(Pulsing("model", {}), Pulsing("qemu", {}, H.NORINTSIGEN.offset))
    t.write(H.NORINTSTSEN.offset, 2, 0xFFFF)
    with pytest.raises(Divergence) as ei:
        t.write(H.NORINTSIGEN.offset, 2, 0xFFFF)
    d = ei.value
    assert d.kind == "irq" and d.step.index == 1
    assert d.step.irq_model == d.step.irq_qemu  # the level alone would not show it
    assert d.step.irq_events_model == () and d.step.irq_events_qemu == (True, False)
    text = d.render()
    assert "interrupt line during the step: model none, QEMU raise,lower" in text
    assert "[IRQ events model=none qemu=raise,lower]" in text
    assert d.to_json()["irq_events"] == {"model": [], "qemu": [True, False]}


def test_same_irq_pulse_on_both_sides_agrees_and_old_events_are_dropped() -> None:
    model = Pulsing("model", {}, H.NORINTSIGEN.offset)
    qemu = Pulsing("qemu", {}, H.NORINTSIGEN.offset)
    qemu.events = [True, False, True]  # before the lockstep run started
    t = LockstepTarget(model, qemu)
    t.write(H.NORINTSIGEN.offset, 2, 0xFFFF)
    assert t.history()[-1].irq_events_qemu == (True, False)


class PioCard(FakeTarget):
    """Answers ACMD41 with a ready high-capacity OCR and serves a PIO read
    from ``recipe`` through BDATA, addressed by ARGUMENT (block units);
    ``flip`` corrupts the transfer byte at that position."""

    def __init__(self, name: str, recipe: Recipe, flip: int | None = None) -> None:
        super().__init__(name, {H.RSPREG0.offset: 0xC0FF_8000}, irq=None)
        self.recipe, self.flip, self.pos = recipe, flip, 0

    def read(self, offset: int, size: int) -> int:
        if offset != H.BDATA.offset:
            return super().read(offset, size)
        start = self.get(H.ARGUMENT.offset, 4) * BLOCK + self.pos
        data = bytearray(self.recipe.expected(start, size))
        if self.flip is not None and self.pos <= self.flip < self.pos + size:
            data[self.flip - self.pos] ^= 0x40
        self.pos += size
        return int.from_bytes(data, "little")


def test_pio_read_divergence_names_command_block_byte_and_recipe() -> None:
    recipe = Recipe("pattern-4g", size=1 << 32)
    bad = BLOCK + 0x1A  # block 1, byte 0x1a of the transfer
    t = LockstepTarget(PioCard("model", recipe), PioCard("qemu", recipe, flip=bad),
                       recipe=recipe)
    t.write(H.CMDREG.offset, 2, H.cmdreg(55, H.RSP_48))
    t.write(H.CMDREG.offset, 2, H.cmdreg(41, H.RSP_48))
    t.read(H.RSPREG0.offset, 4)  # OCR: powered up, CCS (block addressing)
    t.write(H.BLKSIZE.offset, 2, BLOCK)
    t.write(H.BLKCNT.offset, 2, 4)
    t.write(H.ARGUMENT.offset, 4, 0x10)
    trnmod = H.TRNMOD_BLKCNT_EN | H.TRNMOD.mask("READ", "MULTI")
    t.write(H.TRNMOD.offset, 4, H.cmdreg(18, H.RSP_48, data=True) << 16 | trnmod)
    with pytest.raises(Divergence) as ei:
        for _ in range(4 * BLOCK // 4):
            t.read(H.BDATA.offset, 4)
    d = ei.value
    text = d.render()
    assert "command in progress: CMD18 READ_MULTIPLE_BLOCK arg 0x00000010 (block 16)" in text
    assert "issued at step #6 with BLKSIZE 512, BLKCNT 4, TRNMOD 0x0032" in text
    assert "data port: transfer bytes 0x218..0x21b (block 1 of 4, byte offset 0x18)" in text
    want = recipe.expected(0x10 * BLOCK + bad, 1)[0]
    assert (f"first differing byte: transfer byte 0x21a (block 1 of 4, byte offset 0x1a): "
            f"model {want:#04x}, QEMU {want ^ 0x40:#04x}") in text
    assert f"image recipe pattern-4g: card offset 0x221a holds {want:#04x} as generated" in text
    # The 134 agreeing data-port reads before it are one line, not 134.
    assert any(line.endswith("read  BDATA@0x20/4 -> ... x 134") for line in text.splitlines())
    assert len(text.splitlines()) < 25
    assert "(ACMD41 SD_SEND_OP_COND)" in text


def test_history_keeps_no_large_contents_but_tells_them_apart() -> None:
    class Mem(FakeTarget):
        def mem_read(self, addr: int, length: int) -> bytes:
            return bytes([addr & 0xFF]) * length

    t = LockstepTarget(Mem("model", {}), Mem("qemu", {}))
    for addr in (1, 1, 2):
        assert t.mem_read(addr, 1 << 20) == bytes([addr]) * (1 << 20)
    steps = t.history()
    assert all(len(s.model) <= 64 for s in steps)
    assert steps[0].model == steps[1].model != steps[2].model
    assert [line.split(None, 1)[1] for line in collapse(steps)] == [
        "mem_read 0x1+0x100000 x 2", "mem_read 0x2+0x100000"]


def test_stop_after_ends_the_run_before_the_next_step() -> None:
    from harness.check.lockstep import StopRun

    t = LockstepTarget(_fake("model", {0x10: 1}), _fake("qemu", {0x10: 1}), stop_after=2)
    for _ in range(3):                     # steps 0, 1 and 2 run
        t.read(0x10, 4)
    with pytest.raises(StopRun):
        t.read(0x10, 4)
    assert t.count == 3


def test_a_transfer_the_model_stopped_ends_the_comparison_at_that_clock_step() -> None:
    """An ADMA chain QEMU keeps running and the model stopped (its step
    budget) ends the run at the clock step where it stopped: nothing after
    it can be compared.  A predicted QEMU abort does not: the run goes on,
    to see QEMU die."""
    from types import SimpleNamespace

    from harness.check.lockstep import ModelStopped, endless

    model, qemu = _fake("model", {}), _fake("qemu", {})
    model.sdhci = SimpleNamespace(hung=None)  # type: ignore[attr-defined]
    model.card = SimpleNamespace(fatal=None)  # type: ignore[attr-defined]
    t = LockstepTarget(model, qemu)
    t.clock_step(100)
    model.sdhci.hung = "ADMA continued for more than 9 timer steps; model stopped it"  # type: ignore[attr-defined]
    t.read(H.HCVER.offset, 2)  # a register access: compared as ever
    with pytest.raises(ModelStopped) as ei:
        t.clock_step(100)
    assert ei.value.args[0] == 2 and "ADMA continued" in ei.value.args[1]
    model.sdhci.hung = "buffer index past the controller's buffer (QEMU asserts)"  # type: ignore[attr-defined]
    assert endless(model) is None
    t.clock_step(100)
    model.sdhci.hung, model.card.fatal = "x", "CMD0 while sleeping"  # type: ignore[attr-defined]
    assert endless(model) is None
