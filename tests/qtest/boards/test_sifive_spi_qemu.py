"""sifive_u's SD card in SPI mode under qtest, then the spi group in lockstep.

Facts from the board's source (hw/riscv/sifive_u.c: SPI2 at 0x10050000 on
PLIC source 6, ``ssi-sd`` on chip select 0) and the FU540-C000 Manual
("Serial Peripheral Interface"), held on each RISC-V build; then every
``spi`` scenario that runs there agreeing with the model, and broken models
caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.check import runner
from harness.driver.spi import SpiHost
from harness.hwdefs import boards
from harness.hwdefs import sd_spi as T
from harness.hwdefs import sifive_spi as S
from harness.model import sifive_spi
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import all_scenarios
from tests.qtest.boards.qemu_targets import board_target

pytestmark = pytest.mark.qemu

BOARD = boards.by_name("sifive_u")
SCENARIOS = tuple(sorted(n for n, sc in all_scenarios().items() if sc.group == "spi"
                         and sc.params.get("variant", BOARD.variant) == BOARD.variant))


@pytest.fixture(scope="module")
def sifive_pool() -> Iterator[QemuPool]:
    with QemuPool() as pool:
        yield pool


def _target(build: QemuBuild, tmp_path: Path) -> QemuTarget:
    return board_target(BOARD, build, tmp_path)


def test_reset_values_and_cmd0(riscv_build: QemuBuild, tmp_path: Path) -> None:
    """The manual's sckdiv 3 and csdef 1 at reset, rxdata empty; in AUTO mode
    QEMU's card sees nothing (sifive-spi.cs-mode-level); in HOLD, CMD0 answers
    R1 0x01 after one filler (PLS 7.3.2.1, N_CR)."""
    with _target(riscv_build, tmp_path) as t:
        assert t.read(S.SCKDIV.offset, 4) == 3 and t.read(S.CSDEF.offset, 4) == 1
        assert t.read(S.RXDATA.offset, 4) == S.RXDATA.mask("empty")
        h = SpiHost(t)
        h.setup()
        assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff") == [0] * 8
        h.select()
        assert h.xfer_all(T.command_frame(0, 0) + b"\xff\xff\xff") == [0xFF] * 7 + [0x01, 0xFF]


def test_watermark_interrupt_is_plic_6(riscv_build: QemuBuild, tmp_path: Path) -> None:
    """ip.txwm with txmark 1 (the transmit FIFO below it) raises the line once
    ie.txwm enables it (the manual's "Interrupt Registers")."""
    with _target(riscv_build, tmp_path) as t:
        assert t.irq_line == BOARD.irq.line
        t.write(S.TXMARK.offset, 4, 1)
        assert not t.irq_level()
        t.write(S.IE.offset, 4, S.IE.mask("txwm"))
        assert t.irq_level()
        t.write(S.TXMARK.offset, 4, 0)
        assert not t.irq_level()


@pytest.mark.parametrize("name", SCENARIOS)
def test_spi_scenarios_agree(riscv_build: QemuBuild, name: str,
                             sifive_pool: QemuPool) -> None:
    if not riscv_build.offers(BOARD.machine):
        pytest.skip(f"QEMU {riscv_build.name} has no machine type {BOARD.machine}")
    res = runner.run(riscv_build, all_scenarios()[name], BOARD.machine,
                     runner.RunOptions(pool=sifive_pool))
    assert res.status == runner.AGREE, res.reason


def _diverges(build: QemuBuild, pool: QemuPool, name: str) -> list[str]:
    res = runner.run(build, all_scenarios()[name], BOARD.machine, runner.RunOptions(pool=pool))
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    return list(res.divergence.context)


def test_broken_models_diverge(riscv_build: QemuBuild, sifive_pool: QemuPool,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A model with the manual's delay0 reset (sifive-spi.reset-values), and one
    that keeps a ninth received byte, are each caught, at the register."""
    if not riscv_build.offers(BOARD.machine):
        pytest.skip(f"QEMU {riscv_build.name} has no machine type {BOARD.machine}")
    with monkeypatch.context() as m:
        m.setitem(sifive_spi.QEMU_RESET, "delay0", 0x0001_0001)
        context = _diverges(riscv_build, sifive_pool, "spi-sifive-registers")
    assert "register: delay0" in "\n".join(context), context
    with monkeypatch.context() as m:
        m.setattr(S, "FIFO_DEPTH", 9)
        context = _diverges(riscv_build, sifive_pool, "spi-sifive-fifo")
    assert "register: rxdata" in "\n".join(context), context
