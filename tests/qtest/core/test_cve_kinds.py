"""Issue #43's three kinds fail against a model with the rule broken.

Two golden models in lockstep, the one playing QEMU with one rule of the
kind broken on purpose, as the mutants of ``sdqtest mutants --set cve`` break
it in QEMU (:mod:`harness.bisect.mutants_cve`): ADMA data accesses that reach
another device's MMIO; a Block Size write or a DAT line reset that keeps the
buffer position; a migration that loses the card's position in its block.
Each input is the one the check replays (the explore kinds' table inputs,
the ``restart`` group's); the same input on two unbroken models agrees.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.driver import HostDriver
from harness.driver.ops import Op, apply
from harness.explore import reach
from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.scenarios import restart as R

DMA = 0x0100_0000


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(random.Random(43).randbytes(4 << 20))
    return p


class DevicesAsRam(ModelTarget):
    """ADMA data reaches the HPET, the I/O APIC and the LAPIC/MSI window
    (``MemTxAttrs.memory`` dropped): the access succeeds, no ADMA Error."""

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        mem = self.memory
        mem.ranges = (*mem.ranges, *((b, b + n) for b, n in reach.DEVICE_MMIO.values()))


class KeepsDataCount(ModelTarget):
    """A Block Size write (``bits`` 0) or a DAT line reset (``bits`` the
    reset's) that leaves the buffer position where it was."""

    def __init__(self, *a: object, on: int = H.BLKSIZE.offset, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.on = on

    def write(self, offset: int, size: int, value: int) -> None:
        keep = self.sdhci.data_count
        super().write(offset, size, value)
        hit = offset <= self.on < offset + size
        if hit and (self.on != H.SWRST.offset or value >> 8 * (self.on - offset) & H.SWRST_DAT):
            self.sdhci.data_count = keep


def _run(model: ModelTarget, other: ModelTarget, ops: list[Op],
         migrate: Callable[[], None] | None = None) -> None:
    t = LockstepTarget(model, other)
    d = HostDriver(t, dma_base=DMA, timeout_steps=16)
    d.arena.fill = True
    for op in ops:
        if op["op"] == "migrate" and migrate is not None:
            migrate()
        apply(d, t, op)


def _with_probes(ops: list[Op]) -> list[Op]:
    """A probe after every operation, as the explore group replays them."""
    return [x for op in ops for x in (op, {"op": "probe", "status": False})]


def test_adma_data_into_devices_is_refused_and_a_build_that_lets_it_through_is_told(
        image: Path) -> None:
    for ops in reach.device_inputs()[::2]:   # ADMA2 and ADMA1 reads
        _run(ModelTarget(image=image), ModelTarget(image=image), _with_probes(ops))
        with pytest.raises(Divergence, match="BLKCNT|ERRINTSTS|NORINTSTS|ADMA"):
            _run(ModelTarget(image=image), DevicesAsRam(image=image), _with_probes(ops))


@pytest.mark.parametrize("end, on", [("mismatch", H.BLKSIZE.offset),
                                     ("dat-reset", H.SWRST.offset)])
def test_a_restart_without_a_command_tells_a_kept_buffer_position(
        image: Path, end: str, on: int) -> None:
    ops = R.inputs(end, False)
    _run(ModelTarget(image=image), ModelTarget(image=image), ops)
    with pytest.raises(Divergence):
        _run(ModelTarget(image=image), KeepsDataCount(image=image, on=on), ops)


def test_a_migration_that_loses_the_cards_place_in_its_block_is_told(image: Path) -> None:
    ops = _with_probes(reach.card_mid_inputs()[0])
    model, other = ModelTarget(image=image), ModelTarget(image=image)
    _run(model, other, ops, migrate=lambda: None)
    model, other = ModelTarget(image=image), ModelTarget(image=image)

    def lose() -> None:   # the destination's card starts its block again
        other.card.xfer.offset = 0  # type: ignore[attr-defined]

    with pytest.raises(Divergence):
        _run(model, other, ops, migrate=lose)
