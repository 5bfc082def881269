"""The lockstep engine's own logic, on two small fake targets that differ
on purpose (the real cross-check is tests/qtest/crosscheck)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.check.quirks import Quirk, QuirkSet, read_of
from harness.hwdefs import sdhci as H
from harness.profile import BuildProfile


class Fake:
    """Registers from a dict; ``irq`` follows NORINTSTS bit 0."""

    def __init__(self, name: str, regs: dict[int, int]) -> None:
        self.name = name
        self.regs = dict(regs)
        self.reconciled: list[Any] = []

    def read(self, offset: int, size: int) -> int:
        return self.regs.get(offset, 0) & ((1 << (8 * size)) - 1)

    def write(self, offset: int, size: int, value: int) -> None:
        self.regs[offset] = value

    def mem_read(self, addr: int, length: int) -> bytes:
        return bytes(length)

    def mem_write(self, addr: int, data: bytes) -> None:
        pass

    def clock_step(self, ns: int | None = None) -> int:
        return ns or 0

    def irq_level(self) -> bool:
        return bool(self.regs.get(H.NORINTSTS.offset, 0) & 1)

    def image_read(self, offset: int, length: int) -> bytes:
        return bytes(length)

    def close(self) -> None:
        pass


def test_first_difference_is_reported_with_fields_and_history() -> None:
    model = Fake("model", {H.HCVER.offset: 0x2401})
    qemu = Fake("qemu", {H.HCVER.offset: 0x2402})
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
    t = LockstepTarget(Fake("model", {}), Fake("qemu", {H.NORINTSTS.offset: 1}))
    with pytest.raises(Divergence) as ei:
        t.read(H.BLKSIZE.offset, 2)
    assert ei.value.kind == "irq" and ei.value.step.irq_qemu and not ei.value.step.irq_model


def test_quirk_explains_and_unused_quirk_is_stale() -> None:
    explains = Quirk("test.hcver", "all", lambda p: True, "HCVER vendor byte", "test",
                     "none", read_of(H.HCVER.offset, 0xFF00), ("s1",))
    unused = Quirk("test.capab", "all", lambda p: True, "CAPAB", "test", "none",
                   read_of(H.CAPAB.offset), ("s1",))
    qs = QuirkSet((explains, unused), BuildProfile(version=(10, 0, 0)), "s1")
    t = LockstepTarget(Fake("model", {H.HCVER.offset: 0x2401}),
                       Fake("qemu", {H.HCVER.offset: 0x2501}), quirks=qs)
    assert t.read(H.HCVER.offset, 2) == 0x2501  # QEMU's answer goes on
    assert [q.key for q, _ in t.applied] == ["test.hcver"]
    assert [q.key for q in qs.expected_here() if q.key not in qs.used] == ["test.capab"]
    # A difference outside the quirk's mask is still a divergence.
    t.model.regs[H.HCVER.offset] = 0x2400  # type: ignore[attr-defined]
    with pytest.raises(Divergence):
        t.read(H.HCVER.offset, 2)


def test_quirks_for_other_builds_do_not_apply() -> None:
    old_only = Quirk("test.old", "< 8.0", lambda p: p.version < (8, 0, 0), "x", "y", "z",
                     read_of(H.HCVER.offset))
    qs = QuirkSet((old_only,), BuildProfile(version=(10, 0, 0)), "s")
    t = LockstepTarget(Fake("model", {H.HCVER.offset: 1}), Fake("qemu", {H.HCVER.offset: 2}),
                       quirks=qs)
    with pytest.raises(Divergence):
        t.read(H.HCVER.offset, 2)


def test_reconcile_lets_the_model_adopt_a_random_value() -> None:
    class Adopting(Fake):
        def reconcile(self, op: str, args: tuple[Any, ...], m: Any, q: Any) -> bool:
            self.regs[args[0]] = q
            return args[0] == H.RSPREG0.offset

    t = LockstepTarget(Adopting("model", {H.RSPREG0.offset: 0x45670500}),
                       Fake("qemu", {H.RSPREG0.offset: 0xBEEF0500}))
    assert t.read(H.RSPREG0.offset, 4) == 0xBEEF0500
    assert len(t.reconciled) == 1
