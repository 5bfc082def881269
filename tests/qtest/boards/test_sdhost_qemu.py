"""The BCM2835 SDHOST on raspi2b (and raspi3b's, board raspi3b-sdhost) under qtest,
then the sdhost group in lockstep.

QEMU held to the facts of ``sdhost_facts.py`` (the same the model is held
to), then every ``sdhost`` scenario agreeing with the model on each ARM
build that can watch the line, and a model with a rule broken caught.  A
build whose qtest cannot intercept the SDHOST's named output (7.2) is
skipped with the check's own reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.check import boards as check_boards
from harness.check import runner
from harness.hwdefs import boards
from harness.machine import CardImage, Machine
from harness.model import bcm2835_sdhost as model_sdhost
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from harness.target import Target
from tests.qtest.boards import sdhost_facts

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("raspi2b")
#: Both boards with the SDHOST: raspi2b's BCM2836 and raspi3b's BCM2837.
SDHOST_BOARDS = tuple(b for b in boards.BOARDS if b.variant == "sdhost")
SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "sdhost")


@pytest.fixture(scope="module")
def sdhost_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _runs(build: QemuBuild, board: boards.Board = BOARD) -> None:
    if not build.offers(board.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {board.machine}")
    why = check_boards.board_only_reason(board, build.profile)
    if why is not None:
        pytest.skip(why)


def _target(build: QemuBuild, tmp_path: Path, board: boards.Board) -> QemuTarget:
    _runs(build, board)
    img = tmp_path / "card.img"
    img.write_bytes(bytes(range(256)) * (16 << 12))
    return QemuTarget(build.binary, Machine.for_board(board.name, image=CardImage(img)),
                      name=build.name)


@pytest.mark.parametrize("board", SDHOST_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("fact", sdhost_facts.FACTS, ids=lambda f: f.__name__)
def test_qemu_holds_the_facts(arm_build: QemuBuild, tmp_path: Path,
                              fact: Callable[[Target], None], board: boards.Board) -> None:
    with _target(arm_build, tmp_path, board) as t:
        assert t.irq_line == board.irq.line
        fact(t)


@pytest.mark.parametrize("board", SDHOST_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("name", SCENARIOS)
def test_sdhost_scenarios_agree(arm_build: QemuBuild, name: str, board: boards.Board,
                                sdhost_pool: QemuPool) -> None:
    _runs(arm_build, board)
    res = runner.run(arm_build, all_scenarios()[name], boards.run_key(board),
                     runner.RunOptions(pool=sdhost_pool))
    assert res.status == runner.AGREE, res.reason


def test_a_broken_model_diverges(arm_build: QemuBuild, sdhost_pool: QemuPool,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that forgets the SDIO_IRPT of a word moved with DATA_IRPT_EN
    (QEMU's data interrupt) must diverge on the line during a read."""
    _runs(arm_build)
    monkeypatch.setattr(model_sdhost, "_SDIO", 0)
    res = runner.run(arm_build, all_scenarios()["sdhost-read-single"], BOARD.machine,
                     runner.RunOptions(pool=sdhost_pool))
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    context = "\n".join(res.divergence.context)
    assert "CMD17 READ_SINGLE_BLOCK" in context, context
