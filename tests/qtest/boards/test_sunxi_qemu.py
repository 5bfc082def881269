"""The Allwinner SD/MMC host on orangepi-pc under qtest, then the sunxi group in lockstep.

Facts from the board's source (hw/arm/allwinner-h3.c: the controller at
0x01c0f000 with the datasheet's reset values, its line on GIC SPI 60) and
the H3 Datasheet 5.3 (CC on a command the card answers, the line gated by
SD_GCTL.INT_ENB), then every ``sunxi`` scenario agreeing with the model on
each ARM build, and a broken model caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.check import runner
from harness.driver.allwinner import CC, SunxiHost
from harness.hwdefs import allwinner as A
from harness.hwdefs import boards
from harness.ledger import entry
from harness.machine import CardImage, Machine
from harness.model import allwinner as M
from harness.model.sdcard import SDCard
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import LINE_ONLY, QemuPool, reuse_key
from harness.qemu.target import QemuTarget, QemuTargetError
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("orangepi-pc")
SUNXI_BOARDS = tuple(b for b in boards.BOARDS if b.group == "sunxi")
SUNXI_SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "sunxi")


@pytest.fixture(scope="module")
def sunxi_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _offered(build: QemuBuild) -> None:
    if not build.offers(BOARD.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {BOARD.machine}")


def _target(build: QemuBuild, tmp_path: Path) -> QemuTarget:
    _offered(build)
    img = tmp_path / "card.img"
    with img.open("wb") as f:
        f.truncate(16 << 20)
    return QemuTarget(build.binary, Machine.for_board(BOARD.name, image=CardImage(img)),
                      name=build.name)


def test_controller_at_its_base_with_its_line(arm_build: QemuBuild, tmp_path: Path) -> None:
    """SD_TMOR and SD_FWLR read their reset values at the board's base; CMD0
    with CC unmasked and SD_GCTL.INT_ENB raises GIC SPI 60, clearing CC lowers it."""
    with _target(arm_build, tmp_path) as t:
        h = SunxiHost(t)
        assert (h.rd(A.SD_TMOR), h.rd(A.SD_FWLR)) == (0xFFFF_FF40, 0x000F_0000)
        assert t.irq_line == BOARD.irq.line
        h.setup()
        assert not t.irq_level()
        r = h.command(0, rsp="", imask=CC)
        assert r.risr & CC and t.irq_level()
        h.clear()
        assert not t.irq_level()


@pytest.mark.parametrize("board", SUNXI_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("name", SUNXI_SCENARIOS)
def test_sunxi_scenarios_agree(arm_build: QemuBuild, name: str, board: boards.Board,
                               sunxi_pool: QemuPool) -> None:
    if not arm_build.offers(board.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {board.machine}")
    res = runner.run(arm_build, all_scenarios()[name], board.machine,
                     runner.RunOptions(pool=sunxi_pool))
    if res.status == runner.QUIRK:  # a QEMU bug the model says this build has (its met key)
        met = res.known_met()
        assert met and all(entry(k).versions.applies(arm_build.version) for k in met)
        return
    assert res.status == runner.AGREE, res.reason


def test_a_broken_model_diverges(arm_build: QemuBuild, sunxi_pool: QemuPool,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose SD_STAR never shows the card's data (FIFO_EMPTY always)
    must make the lockstep report a divergence at SD_STAR during CMD17."""
    _offered(arm_build)
    monkeypatch.setattr(M, "FIFO_LEVEL_1", M.FIFO_EMPTY)
    res = runner.run(arm_build, all_scenarios()["sunxi-pio-read"], BOARD.machine,
                     runner.RunOptions(pool=sunxi_pool))
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    context = "\n".join(res.divergence.context)
    assert "register: SD_STAR" in context and "CMD17 READ_SINGLE_BLOCK" in context, context


@pytest.mark.parametrize("name", [b.name for b in SUNXI_BOARDS])
def test_system_reset_keeps_the_line_raised(arm_build: QemuBuild, tmp_path: Path,
                                            name: str) -> None:
    """ledger sunxi.reset-keeps-irq: a line raised by CC stays raised across
    system_reset (the controller's reset drives no output), so a reused
    process is refused; the pool closes such a process when it is handed
    back, and keeps one whose line is low."""
    board = boards.by_name(name)
    if not arm_build.offers(board.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {board.machine}")
    img = tmp_path / "card.img"
    with img.open("wb") as f:
        f.truncate(16 << 20)
    machine = Machine.for_board(name, image=CardImage(img))
    assert board.reset_keeps in LINE_ONLY and reuse_key(arm_build.binary, machine) is not None
    with QemuTarget(arm_build.binary, machine, name=arm_build.name, reusable=True) as t:
        _raise_cc(t)
        with pytest.raises(QemuTargetError, match="stayed raised across system_reset"):
            t.reuse(machine)
    with QemuPool() as pool:
        for raised in (False, True):
            t = pool.acquire(arm_build.binary, machine, name=arm_build.name)
            if raised:
                _raise_cc(t)
            pool.release(t)
            assert len(pool._idle) == (0 if raised else 1)
            pool.close()
        assert not pool.stats.fallbacks


def _raise_cc(t: QemuTarget) -> None:
    t.write(A.SD_GCTL.offset, 4, A.SD_GCTL.field("INT_ENB").mask)
    t.write(A.SD_IMKR.offset, 4, CC)
    t.write(A.SD_CMDR.offset, 4, A.SD_CMDR.field("CMD_LOAD").mask)
    assert t.irq_level()


def test_status_during_read_is_a_qemu_finding(arm_build: QemuBuild, sunxi_pool: QemuPool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """CMD13 between the words of a CMD18 read (ledger sd.generic-read-past-size,
    bug 0027): QEMU 11.1 aborts where the model says (a known QEMU bug, the run
    a quirk), the others agree; a model that does not predict the abort makes
    the run a QEMU crash, never an error of sdqtest."""
    _offered(arm_build)
    sc = all_scenarios()["sunxi-status-during-read"]
    res = runner.run(arm_build, sc, BOARD.machine, runner.RunOptions(pool=sunxi_pool))
    if entry("sd.generic-read-past-size").versions.applies(arm_build.version):
        assert res.status == runner.QUIRK, res.reason
        assert "sd.generic-read-past-size" in res.known_met()
        monkeypatch.setattr(SDCard, "read_chunk", SDCard.read_data)
        res = runner.run(arm_build, sc, BOARD.machine, runner.RunOptions(pool=sunxi_pool))
        assert res.status == runner.CRASH and not res.internal, res.reason
        assert "sdbus_read_data" in res.reason, res.reason
    else:
        assert res.status == runner.AGREE, res.reason
