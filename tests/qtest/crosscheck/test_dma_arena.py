"""Against real QEMU: a model whose DMA engine writes one byte outside its
buffer diverges in the DMA arena, after a successful transfer and after one
that ends in an ADMA error."""

from __future__ import annotations

import pytest

from harness.check import runner
from harness.model.sdhci_dma import SdhciDma
from harness.qemu.builds import QemuBuild
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu

DMA = 0x0100_0000  # the driver's default dma_base


def _stray(dma: SdhciDma, addr: int) -> None:
    old, _ok = dma.memory.read(addr, 1)
    dma.memory.write(addr, bytes([old[0] ^ 0xFF]))


def test_sdma_overrun_by_one_byte_diverges(qemu_build: QemuBuild,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = SdhciDma.sdma_transfer

    def overrun(self: SdhciDma, from_sysad: bool = False) -> None:
        real(self, from_sysad)
        _stray(self, self.sdmasysad)  # the byte after the last one moved

    monkeypatch.setattr(SdhciDma, "sdma_transfer", overrun)
    res = runner.run(qemu_build, all_scenarios()["sdma-read-7"], "q35")
    assert res.status == runner.DIVERGE and res.divergence is not None
    d = res.divergence
    assert d.kind == "memory"
    text = d.render()
    assert f"first differing byte at {DMA + 0x10000 + 7 * 512:#x}" in text
    assert "guard zone, byte +0x0 past the end of the last transfer's SDMA buffer" in text


def test_stray_byte_before_an_adma_error_diverges(qemu_build: QemuBuild,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real = SdhciDma._adma_error

    def stray_then_error(self: SdhciDma) -> None:
        _stray(self, DMA + 0x20000 - 1)  # just before the scenario's buffer
        real(self)

    monkeypatch.setattr(SdhciDma, "_adma_error", stray_then_error)
    res = runner.run(qemu_build, all_scenarios()["adma2-malformed"], "q35")
    assert res.status == runner.DIVERGE and res.divergence is not None
    d = res.divergence
    assert d.kind == "memory"
    assert "0x1 bytes before the last transfer's ADMA2 data segment 1/1" in d.render()
