"""The SD card in SPI mode on lm3s6965evb under qtest, then the spi group in lockstep.

Facts from the board's source (hw/arm/stellaris.c: the PL022 at 0x40008000 on
NVIC 7, the card's chip select on GPIO D pin 0, raised at start) and PLS
chapter 7 (CMD0 answers R1 0x01), then every ``spi`` scenario agreeing with
the model on each ARM build, and a broken model caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.check import runner
from harness.driver.spi import SpiHost
from harness.hwdefs import boards
from harness.hwdefs import pl022 as P
from harness.hwdefs import sd_spi as T
from harness.model import ssi_sd
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from tests.qtest.boards.qemu_targets import board_target

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("lm3s6965evb")
SPI_SCENARIOS = tuple(n for n, sc in all_scenarios().items() if sc.group == "spi"
                      and sc.params.get("variant", BOARD.variant) == BOARD.variant)


@pytest.fixture(scope="module")
def spi_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _target(build: QemuBuild, tmp_path: Path) -> QemuTarget:
    return board_target(BOARD, build, tmp_path)


def test_cmd0_answers_r1_idle_once_selected(arm_build: QemuBuild, tmp_path: Path) -> None:
    """Deselected at start, the card answers nothing (the bus reads 0); selected,
    CMD0 answers R1 0x01 after one filler (PLS 7.3.2.1, N_CR)."""
    with _target(arm_build, tmp_path) as t:
        h = SpiHost(t)
        h.setup()
        assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff") == [0] * 8
        h.select()
        assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff\xff") == [0xFF] * 7 + [0x01, 0xFF]


def test_ssp_interrupt_is_nvic_7(arm_build: QemuBuild, tmp_path: Path) -> None:
    """The TX interrupt (TX FIFO empty) raises the line once unmasked (PL022 TRM 3.3.8)."""
    with _target(arm_build, tmp_path) as t:
        assert t.irq_line == BOARD.irq.line
        assert not t.irq_level()
        t.write(P.ssp(P.SSPIMSC), 4, P.SSPIMSC.mask("TXIM"))
        assert t.irq_level()
        t.write(P.ssp(P.SSPIMSC), 4, 0)
        assert not t.irq_level()


@pytest.mark.parametrize("name", SPI_SCENARIOS)
def test_spi_scenarios_agree(arm_build: QemuBuild, name: str, spi_pool: QemuPool) -> None:
    if not arm_build.offers(BOARD.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {BOARD.machine}")
    res = runner.run(arm_build, all_scenarios()[name], BOARD.machine,
                     runner.RunOptions(pool=spi_pool))
    assert res.status == runner.AGREE, res.reason


def test_a_broken_model_diverges(arm_build: QemuBuild, spi_pool: QemuPool,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose ssi-sd forgets the filler before a data block (N_AC) must
    make the lockstep report a divergence at the token."""
    if not arm_build.offers(BOARD.machine):
        pytest.skip(f"QEMU {arm_build.name} has no machine type {BOARD.machine}")

    def no_filler(self: ssi_sd.SsiSd, val: int) -> int:
        self.mode = ssi_sd.SsiSdMode.DATA_READ
        self.response_pos = 0
        return T.TOKEN_SINGLE

    monkeypatch.setitem(ssi_sd._HANDLERS, ssi_sd.SsiSdMode.PREP_DATA, no_filler)
    res = runner.run(arm_build, all_scenarios()["spi-read-multi"], BOARD.machine,
                     runner.RunOptions(pool=spi_pool))
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    context = "\n".join(res.divergence.context)
    assert "register: SSPDR" in context and "CMD18 READ_MULTIPLE_BLOCK" in context, context
