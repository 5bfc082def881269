"""Fuzz inputs on reused QEMU processes give a fresh launch's outcomes.

QEMU's card reset keeps the written-block count ACMD22 sends (ledger
``sd.acmd22-count-survives-reset``): an input that wrote blocks, then one
that asks ACMD22 first thing, diverged on the reused process (QEMU sent the
first input's count, the fresh model 0) and agreed on a fresh one: seed 0's
inputs 162 and 163 on 11.1 did so.  :mod:`harness.fuzz.residue` names what
an input leaves and what reads it; such an input runs again fresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.fuzz import campaign as C
from harness.fuzz import residue
from harness.fuzz.corpus import Corpus
from harness.fuzz.ops import Op
from harness.fuzz.run import OK, FuzzOutcome, execute
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool

pytestmark = pytest.mark.qemu

_SETUP: list[Op] = [{"op": "setup", "freq": 400000},
                    {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}]
#: Three blocks written by CMD25 (PIO, CMD12): the card counts 3.
WRITES: list[Op] = _SETUP + [{
    "op": "rw", "read": False, "block": 8, "count": 3, "bs": None, "mode": "pio",
    "stop": "cmd12", "pio_access": 4, "skew": 0, "boundary": 4096, "max_segment": 65536}]
#: ACMD22 before any write: a fresh card sends 0.
ASKS: list[Op] = _SETUP + [{"op": "cmd", "index": 22, "arg": 0, "app": True,
                            "data": {"read": True, "bs": 4, "count": 1, "mode": "pio"}}]


def _run(b: QemuBuild, ops: list[Op], pool: QemuPool | None) -> FuzzOutcome:
    return execute(b.binary, b.profile, ops, pool=pool, name=b.name)


def test_a_count_left_by_an_earlier_input_does_not_show(qemu_build: QemuBuild) -> None:
    fresh = _run(qemu_build, ASKS, None)
    assert fresh.status == OK, fresh.reason
    with QemuPool() as pool:
        first = _run(qemu_build, WRITES, pool)
        assert first.status == OK, first.reason
        left = _left(pool)
        again = _run(qemu_build, ASKS, pool)
        assert again.status == OK, again.reason
        assert (again.steps, again.features) == (fresh.steps, fresh.features)
        # the reused process sent 3: the input ran again on a fresh launch
        assert residue.BLK_WRITTEN in left
        assert again.carried == frozenset() and pool.stats.launched == 2
        # an input that does not ask keeps the reused process
        _run(qemu_build, WRITES, pool)
        assert pool.stats.launched == 2 and pool.stats.reused >= 1


def _left(pool: QemuPool) -> frozenset[str]:
    idle: Any = pool._idle  # the one process the pool keeps
    return frozenset().union(*(t.residue for t in idle.values()))


def test_the_model_card_says_what_an_input_may_see() -> None:
    """:func:`residue.watch` on the model alone: a CMD56 read sees the
    carried length only before the card set one of its own, an ACMD22 the
    carried count (a CMD22 without CMD55 does not)."""
    from dataclasses import replace

    from harness import images
    from harness.driver.host import HostDriver
    from harness.driver.results import Mode, Transfer
    from harness.fuzz.run import IMAGE, fuzz_machine
    from harness.model.target import ModelTarget
    from harness.profile import NEWEST

    both = frozenset({residue.BLK_WRITTEN, residue.DATA_SIZE})

    def model() -> ModelTarget:
        # 10.0: from 11.1 a CMD56 read of a fresh card's empty generic buffer
        # aborts QEMU (ledger sd.generic-read-past-size), before any residue
        return ModelTarget(fuzz_machine(), image=images.raw_twin(IMAGE),
                           profile=replace(NEWEST, version=(10, 0, 13)))

    def cmd56_read(d: HostDriver) -> None:
        d.cmd(56, 1, data=Transfer(read=True, block_size=4, mode=Mode.PIO))

    m = model()
    seen = residue.watch(m, both)
    d = HostDriver(m)
    d.setup()
    d.init_card(read_scr=False)  # no data command: the card has no length yet
    cmd56_read(d)
    d.cmd(22, 0, data=Transfer(read=True, block_size=4, mode=Mode.PIO))
    assert seen == {residue.DATA_SIZE}
    d.acmd(22, 0, data=Transfer(read=True, block_size=4, mode=Mode.PIO))
    assert seen == both
    m = model()
    seen = residue.watch(m, both)
    d = HostDriver(m)
    d.setup()
    d.init_card(read_scr=False)
    d.acmd(51, 0, data=Transfer(read=True, block_size=8, mode=Mode.PIO))  # SCR
    cmd56_read(d)
    assert seen == frozenset() and residue.left(m) == {residue.DATA_SIZE}
    assert residue.watch(model(), frozenset({residue.TIMER})) == {residue.TIMER}



def test_a_seeded_campaign_is_the_same_with_and_without_reuse(newest_build: QemuBuild,
                                                               tmp_path: Path) -> None:
    """The inputs, outcomes, steps, features and corpus of a short seeded
    campaign, on reused processes and on a fresh launch each."""
    got = {}
    for reuse in (True, False):
        seen: list[tuple[Any, ...]] = []
        with QemuPool(enabled=reuse) as pool:
            c = C.Campaign(newest_build, Corpus(tmp_path / str(reuse)), seed=0, pool=pool)
            run = c.execute

            def log(ops: list[Op], run: Any = run,
                    seen: list[tuple[Any, ...]] = seen) -> FuzzOutcome:
                out: FuzzOutcome = run(ops)
                seen.append((ops, out.status, out.steps, out.features))
                return out

            c.execute = log  # type: ignore[method-assign]
            st = c.run(count=24)
        inputs = sorted(p.read_text() for p in (tmp_path / str(reuse) / "inputs").glob("*"))
        got[reuse] = (seen, inputs, st.by_status, st.unconfirmed)
        if reuse:
            assert pool.stats.reused > 0
    assert got[True] == got[False]
