"""The OMAP1 MMC/SD host on sx1 under qtest, then the omap group in lockstep.

Facts from the board's source (hw/arm/omap1.c: the host at 0xfffb7800, its
interrupt on the level-2 handler's input OMAP_INT_OQN) and Linux's omap.c
(the status bits), then every ``omap`` scenario agreeing with the model on
each ARM build, and broken models caught, the version boundaries included.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from harness.check import runner
from harness.driver.omap_mmc import cmd_word
from harness.hwdefs import boards
from harness.hwdefs import omap_mmc as O
from harness.ledger.entry import parse_version
from harness.machine import CardImage, Machine
from harness.model import omap_mmc as model_omap
from harness.model import omap_target
from harness.qemu import board as qemu_board
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from tests.qtest.boards.qemu_targets import board_target

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("sx1")
OMAP_SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "omap")
_ST = O.MMC_STAT
_W = O.ACCESS_SIZE


@pytest.fixture(scope="module")
def omap_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _target(build: QemuBuild, tmp_path: Path) -> QemuTarget:
    return board_target(BOARD, build, tmp_path)


def test_revision_and_the_interrupt_line(arm_build: QemuBuild, tmp_path: Path) -> None:
    """MMC_REV 1, MMC_BUF's AFL 0x1F; EOC through MMC_IE raises ih[1] input 23,
    a write of 1 to MMC_STAT lowers it."""
    with _target(arm_build, tmp_path) as t:
        assert (t.read(O.MMC_REV.offset, _W), t.read(O.MMC_BUF.offset, _W)) == (1, 0x1F00)
        assert t.irq_line == BOARD.irq.line
        t.write(O.MMC_CON.offset, _W, O.MMC_CON.mask("POW"))
        t.write(O.MMC_IE.offset, _W, _ST.mask("EOC"))
        assert not t.irq_level()
        t.write(O.MMC_CMD.offset, _W, cmd_word(0, "none", ctype=0, init=True))
        assert t.read(O.MMC_STAT.offset, _W) == _ST.mask("EOC") and t.irq_level()
        t.write(O.MMC_STAT.offset, _W, _ST.mask("EOC"))
        assert not t.irq_level()


@pytest.mark.parametrize("name", OMAP_SCENARIOS)
def test_omap_scenarios_agree(arm_build: QemuBuild, name: str, omap_pool: QemuPool) -> None:
    res = _run(arm_build, name, omap_pool)
    assert res.status == runner.AGREE, res.reason


def _run(build: QemuBuild, name: str, pool: QemuPool) -> runner.Result:
    if not build.offers(BOARD.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {BOARD.machine}")
    return runner.run(build, all_scenarios()[name], BOARD.machine, runner.RunOptions(pool=pool))


def test_a_model_with_write_1_to_clear_only_diverges(
        arm_build: QemuBuild, omap_pool: QemuPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose commands leave earlier status bits alone (MMC_STAT as a plain
    write-1-to-clear register: ledger omap.command-clears-status) must diverge at
    a status read, placed in the command stream."""
    monkeypatch.setattr(model_omap, "_KEEP_ON_OK", 0xFFFF)
    res = _run(arm_build, "omap-errors", omap_pool)
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    context = "\n".join(res.divergence.context)
    assert "register: MMC_STAT" in context and "command in progress: CMD" in context, context


def test_a_model_lowering_the_line_at_pow_clear_diverges(
        arm_build: QemuBuild, omap_pool: QemuPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose MMC_CON write with POW clear updates the line (the hardware's
    way, not QEMU's: ledger omap.con-pow-clear-keeps-line) must diverge."""
    plain = model_omap.OmapMmc._write_con

    def lowering(self: model_omap.OmapMmc, value: int) -> None:
        plain(self, value)
        self.update_irq()

    monkeypatch.setattr(model_omap.OmapMmc, "_write_con", lowering)
    res = _run(arm_build, "omap-interrupts", omap_pool)
    assert res.status == runner.DIVERGE, res.reason


def test_the_srts_boundary_holds_on_each_side(
        arm_build: QemuBuild, omap_pool: QemuPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Boundary omap.srts-card-kept: a model on the other side of it (SRTS keeping
    the card before 10.0, resetting it from 10.0 on) must diverge in omap-reset."""
    old = parse_version(arm_build.version) < omap_target.CARD_ON_BUS
    monkeypatch.setattr(omap_target, "CARD_ON_BUS", (0, 0, 0) if old else (99, 0, 0))
    res = _run(arm_build, "omap-reset", omap_pool)
    assert res.status == runner.DIVERGE, res.reason


def test_a_model_with_a_zero_underrun_diverges(
        arm_build: QemuBuild, omap_pool: QemuPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose empty-FIFO read answers 0 (not the ring's old word: ledger
    omap.fifo-underrun-repeats) must diverge in omap-fifo."""
    plain = model_omap.OmapMmc._data_read

    def zero(self: model_omap.OmapMmc) -> int:
        return plain(self) if self.fifo_len else 0

    monkeypatch.setattr(model_omap.OmapMmc, "_data_read", zero)
    res = _run(arm_build, "omap-fifo", omap_pool)
    assert res.status == runner.DIVERGE, res.reason


def test_the_stack_boundary_holds_on_each_side(
        arm_build: QemuBuild, omap_pool: QemuPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Boundary omap.stack-zero: from 10.0 on RSP0..RSP5 after a short answer read
    0 with nothing adopted; before it a model expecting 0 diverges (7.2.22's
    stack bytes are not all 0 in omap-init)."""
    old = parse_version(arm_build.version) < omap_target.STACK_ZERO
    if old:
        monkeypatch.setattr(omap_target, "STACK_ZERO", (0, 0, 0))
    res = _run(arm_build, "omap-init", omap_pool)
    if old:
        assert res.status == runner.DIVERGE, res.reason
    else:
        assert res.status == runner.AGREE, res.reason
        assert not [w for _i, w, _v in res.adoptions() if w == omap_target.STACK.adopts]


@pytest.mark.parametrize("line", ["dma-rx", "dma-tx"])
def test_the_dma_request_lines_follow_the_model(arm_build: QemuBuild, tmp_path: Path,
                                                line: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With RXDE/TXDE the FIFO levels drive the DMA request lines instead of AF/AE:
    watched here in place of the interrupt (qtest intercepts one device's lines;
    the named outputs ``dma-rx``/``dma-tx`` exist from 10.0, when omap_mmc became a
    QOM device, and 7.2's qtest cannot intercept named outputs anyway)."""
    if parse_version(arm_build.version) < omap_target.CARD_ON_BUS:
        pytest.skip(f"QEMU {arm_build.name}: omap_mmc has no named DMA outputs before 10.0")
    route = boards.IrqRoute(kind="out", line=0, qom_type="omap-mmc", name=line,
                            min_version=(10, 0))
    dma_board = replace(BOARD, irq=route)
    monkeypatch.setattr(qemu_board, "by_name", lambda name: dma_board)
    model = omap_target.OmapModelTarget(Machine.for_board(BOARD.name,
                                                          image=CardImage.null(16 << 20)),
                                        profile=arm_build.profile)
    read = line == "dma-rx"
    ops: list[tuple[int, int | None]] = [
        (O.MMC_CON.offset, O.MMC_CON.mask("POW")), (O.MMC_NBLK.offset, 0),
        (O.MMC_BLEN.offset, 15), (O.MMC_BUF.offset, 0x8300 if read else 0x0086),
        (O.MMC_CMD.offset, cmd_word(17 if read else 24, ctype=O.TYPE_ADTC, read=read))]
    ops += [(O.MMC_DATA.offset, None if read else 0x1234)] * 9
    ops += [(O.MMC_BUF.offset, 0x1F00), (O.MMC_STAT.offset, None)]
    with _target(arm_build, tmp_path) as t:
        levels = []
        for off, value in ops:
            for side in (t, model):
                if value is None:
                    side.read(off, _W)
                else:
                    side.write(off, _W, value)
            assert t.irq_level() == model.mmc.dma[line[4:]], (off, value)
            levels.append(t.irq_level())
        assert True in levels and not levels[-1]
