"""The BCM2835 SDHOST board as the model states it (no QEMU).

The model is held to the facts of ``sdhost_facts.py`` (QEMU's sources as
documented behaviour, the Linux driver's layout, the SD specification); a
model with one of QEMU's rules broken (a one-line regression in
``hw/sd/bcm2835_sdhost.c``: the block interrupt of a write never set) is
paired against it in lockstep, and the ``sdhost`` group catches it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from harness.check import boards as check_boards
from harness.check.lockstep import Divergence, LockstepTarget
from harness.driver.sdhost import SdhostHost
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import boards
from harness.machine import Machine
from harness.model import bcm2835_sdhost as model_sdhost
from harness.model.board_targets import model_target_for
from harness.model.sdhost_target import SdhostModelTarget
from harness.profile import NEWEST
from harness.scenarios import all_scenarios
from harness.scenarios.registry import Context
from harness.target import Target
from tests.qtest.boards import sdhost_facts

ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))
BOARD = boards.by_name("raspi2b")
SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "sdhost")


def _model(size: int = 16 << 20) -> SdhostModelTarget:
    return SdhostModelTarget(Machine.for_board(BOARD.name), profile=ARM, size=size)


@pytest.mark.parametrize("fact", sdhost_facts.FACTS, ids=lambda f: f.__name__)
def test_the_model_holds_the_facts(fact: Callable[[Target], None]) -> None:
    fact(_model())


def test_the_board_is_its_own_group_and_target() -> None:
    """raspi2b runs the sdhost group and its real driver's recording (Linux's
    bcm2835), through SdhostModelTarget; the SDHCI boards never run the
    sdhost group; 7.2 cannot watch its line (a named GPIO)."""
    assert BOARD.group == "sdhost" and BOARD not in boards.SDHCI_BOARDS
    assert model_target_for(BOARD) is SdhostModelTarget
    assert B.host(B.SDHBLC) - B.gpio(B.GPFSEL[0]) == 0x2050  # MMCI0 - GPIO offset + SDHBLC
    scs = list(all_scenarios().values())
    assert {sc.group for sc in check_boards.applicable(scs, [BOARD.name])} == {"sdhost", "drivers"}
    assert "sdhost" not in {sc.group for sc in check_boards.applicable(scs, ["zynq"])}
    old = replace(ARM, version=(7, 2, 22))
    assert "named GPIO" in str(check_boards.board_only_reason(BOARD, old))
    assert check_boards.board_only_reason(BOARD, ARM) is None


def test_a_read_refills_the_fifo_word_by_word() -> None:
    """QEMU's data path: after CMD17 the FIFO holds 16 words, each SDDATA read
    takes one and the card gives one more, until the 128 words are read;
    the last run sets SDEDM's FSM to DATAMODE."""
    t = _model()
    h = SdhostHost(t)
    h.init()
    t.write(B.host(B.SDHBCT), 4, 512)
    t.write(B.host(B.SDHBLC), 4, 1)
    h.send(17, 0, "r1", B.SDCMD.mask("READ_CMD"))
    levels = []
    for _ in range(128):
        levels.append(B.SDEDM.field("FIFO_LEVEL").get(t.read(B.host(B.SDEDM), 4)))
        t.read(B.host(B.SDDATA), 4)
    assert levels == [16] * 113 + list(range(15, 0, -1))
    assert B.SDEDM.field("FSM").get(t.read(B.host(B.SDEDM), 4)) == B.FSM_DATAMODE


def test_a_write_raises_block_irpt_before_its_data() -> None:
    """sdhost.block-irpt-before-data: BLOCK_IRPT_EN set before CMD24's first
    word raises BLOCK_IRPT at the SDCMD write, and again at the block's end."""
    t = _model()
    h = SdhostHost(t)
    h.init()
    t.write(B.host(B.SDHCFG), 4, B.SDHCFG.mask("BLOCK_IRPT_EN"))
    t.write(B.host(B.SDHBCT), 4, 512)
    t.write(B.host(B.SDHBLC), 4, 1)
    h.send(24, 0, "r1", B.SDCMD.mask("WRITE_CMD"))
    assert t.irq_level() and t.read(B.host(B.SDHSTS), 4) & B.SDHSTS.mask("BLOCK_IRPT")
    t.write(B.host(B.SDHSTS), 4, 0x7FF)
    for _ in range(127):
        t.write(B.host(B.SDDATA), 4, 0)
        assert not t.irq_level()
    t.write(B.host(B.SDDATA), 4, 0)
    assert t.irq_level()


class NoBlockIrpt(model_sdhost.Bcm2835Sdhost):
    """The one-line regression: ``fifo_run`` never sets BLOCK_IRPT (its
    enable is only read there, so the run without it is that mutant)."""

    def fifo_run(self) -> None:
        config = self.config
        self.config &= ~B.SDHCFG.mask("BLOCK_IRPT_EN")
        try:
            super().fifo_run()
        finally:
            self.config = config


def _run_pair(name: str, broken: SdhostModelTarget) -> None:
    t = LockstepTarget(_model(), broken)
    sc = all_scenarios()[name]
    sc.fn(t, Context(ARM, BOARD.machine, sc.image))


def test_the_group_catches_a_lost_block_interrupt() -> None:
    """Paired in lockstep with the model, the mutant diverges on the interrupt
    line in the write scenarios, with the command named in the report."""
    broken = _model()
    broken.host = NoBlockIrpt()
    with pytest.raises(Divergence) as e:
        _run_pair("sdhost-write-single", broken)
    text = "\n".join(e.value.context)
    assert "CMD24 WRITE_BLOCK" in text and "SDDATA" in text, text


@pytest.mark.parametrize("name", SCENARIOS)
def test_two_models_agree(name: str) -> None:
    """A clean pair agrees on every scenario (no difference from the harness)."""
    _run_pair(name, _model())


def test_the_run_goes_on_past_the_lost_block_interrupt() -> None:
    """With the scoreboard (check --max-differences), the model takes QEMU's
    line and SDHSTS where the mutant differs and the run goes on to its end:
    each difference recorded once, the data written still agreeing."""
    from harness.check.scoreboard import Scoreboard

    model, broken = _model(), _model()
    broken.host = NoBlockIrpt()
    board = Scoreboard(16, model.adopt)
    t = LockstepTarget(model, broken, scoreboard=board)
    sc = all_scenarios()["sdhost-write-multi"]
    sc.fn(t, Context(ARM, BOARD.machine, sc.image))
    kinds = {d.divergence.kind for d in board.differences}
    assert board.differences and not board.stopped and "irq" in kinds, kinds
    taken = [a for d in board.differences for a in d.adopted]
    assert any(a.startswith("interrupt line") for a in taken), taken
    assert model.image_read(8 * 512, 3 * 512) == broken.image_read(8 * 512, 3 * 512)
