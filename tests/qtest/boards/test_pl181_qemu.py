"""The ARM PL181 MMCI on vexpress-a9 under qtest, then the mmci group in lockstep.

Facts from the board's source (hw/arm/vexpress.c: the MMCI at 0x10005000,
MCIINTR0/1 on GIC SPI 9/10, card detect in SYS_MCI bit 0) and the PL180 TRM
(the ID bytes, MCIINTRn = status & maskn), then every ``mmci`` scenario
agreeing with the model on each ARM build and each board with a PL181, and
broken models caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.check import runner
from harness.hwdefs import boards
from harness.hwdefs import pl181 as P
from harness.model import pl181 as model_pl181
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from tests.qtest.boards.qemu_targets import board_target

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("vexpress-a9")
#: Every board whose card is behind a PL181 (the mmci group runs on each).
PL181_BOARDS = tuple(b for b in boards.BOARDS if b.variant == "pl181")
MMCI_SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "mmci")
_ST = P.MCISTATUS


@pytest.fixture(scope="module")
def mmci_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _target(build: QemuBuild, tmp_path: Path) -> QemuTarget:
    return board_target(BOARD, build, tmp_path)


def test_ids_card_detect_and_both_lines(arm_build: QemuBuild, tmp_path: Path) -> None:
    """PeriphID/PCellID 0x181/0xB105F00D; SYS_MCI bit 0 with a card; CMD0's CmdSent
    raises MCIINTR1 (GIC 10) through Mask1 and MCIINTR0 (GIC 9) through Mask0."""
    with _target(arm_build, tmp_path) as t:
        assert [t.read(P.mmci(P.PERIPH_ID + 4 * i), 4) for i in range(8)] == list(P.ID_BYTES)
        assert t.read(P.sysreg(P.SYS_MCI), 4) & 1
        assert t.irq_line == BOARD.irq.line
        t.write(P.mmci(P.MCIMASK1), 4, _ST.mask("CmdSent"))
        t.write(P.mmci(P.MCICOMMAND), 4, P.MCICOMMAND.mask("Enable"))
        assert t.qtest.irq_levels.get(BOARD.irq.line + 1) and not t.irq_level()
        t.write(P.mmci(P.MCIMASK0), 4, _ST.mask("CmdSent"))
        assert t.irq_level()
        t.write(P.mmci(P.MCICLEAR), 4, _ST.mask("CmdSent"))
        assert not t.irq_level() and not t.qtest.irq_levels.get(BOARD.irq.line + 1)


@pytest.mark.parametrize("board", PL181_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("name", MMCI_SCENARIOS)
def test_mmci_scenarios_agree(arm_build: QemuBuild, name: str, board: boards.Board,
                              mmci_pool: QemuPool) -> None:
    if not arm_build.offers(board.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {board.machine}")
    res = runner.run(arm_build, all_scenarios()[name], board.machine,
                     runner.RunOptions(pool=mmci_pool))
    assert res.status == runner.AGREE, res.reason


def _run(build: QemuBuild, name: str, pool: QemuPool) -> runner.Result:
    if not build.offers(BOARD.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {BOARD.machine}")
    return runner.run(build, all_scenarios()[name], BOARD.machine, runner.RunOptions(pool=pool))


def test_a_model_with_trm_block_ends_diverges(arm_build: QemuBuild, mmci_pool: QemuPool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that keeps DataBlockEnd to real block ends (the TRM's rule, not
    QEMU's: ledger pl181.data-block-end-at-data-end) must diverge at a status read."""
    monkeypatch.setattr(model_pl181, "_DATA_DONE", _ST.mask("DataEnd"))
    res = _run(arm_build, "mmci-read-single", mmci_pool)
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    context = "\n".join(res.divergence.context)
    assert "register: MCIStatus" in context and "command in progress: CMD" in context, context


def test_a_model_refilling_at_once_diverges(arm_build: QemuBuild, mmci_pool: QemuPool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose FIFO refills as it is read (no deferral: ledger
    pl181.fifo-refill-after-status) must diverge in the FIFO scenario."""
    monkeypatch.setattr(model_pl181.Pl181, "_fifo_read", _eager_fifo_read)
    res = _run(arm_build, "mmci-fifo", mmci_pool)
    assert res.status == runner.DIVERGE, res.reason


def _eager_fifo_read(self: model_pl181.Pl181) -> int:
    if not self.fifo:
        return 0
    value = self.fifo.popleft()
    self.fifo_run()
    self.update()
    return value
