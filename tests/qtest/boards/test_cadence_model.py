"""The Cadence SD4HC model (icicle, ``cadence-sdhci``) held to QEMU's
documented behaviour (:mod:`tests.qtest.boards.variant_facts`), and a mutant
of hw/sd/cadence_sdhci.c caught by pairing the model with a model that has
the mutant's rule broken (no riscv64 source build exists to run it on)."""

from __future__ import annotations

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.hwdefs import boards
from harness.hwdefs import cadence as C
from harness.hwdefs import sdhci as H
from harness.machine import Machine
from harness.model.sdhci_cadence import CadenceSdhci
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.scenarios import all_scenarios
from harness.scenarios.registry import Context
from tests.qtest.boards import variant_facts

BOARD = boards.by_name("icicle")
_PROFILES = [BuildProfile(v, machine_types=(BOARD.machine,))
             for v in ((7, 2, 22), (10, 0, 13), (11, 1, 3))]
RELEASES = pytest.mark.parametrize("profile", _PROFILES, ids=["7.2", "10.0", "11.1"])


def _model(profile: BuildProfile = _PROFILES[-1]) -> ModelTarget:
    return ModelTarget(Machine.for_board(BOARD.name), profile=profile, size=16 << 20)


def test_the_board_is_the_cadence_variant() -> None:
    """hw/riscv/microchip_pfsoc.c: the SDHCI at 0x200 of the window at
    0x20008000, PLIC input 88, DRAM_LO at 0x80000000, at least 1537 MiB."""
    assert BOARD.base == 0x2000_8000 + C.SRS_BASE and BOARD.irq.line == 88
    assert BOARD.ram_base == 0x8000_0000 and BOARD.ram >= 1537 << 20
    assert BOARD.binary == "qemu-system-riscv64" and not BOARD.group
    assert isinstance(_model().sdhci, CadenceSdhci)


@RELEASES
def test_host_registers(profile: BuildProfile) -> None:
    variant_facts.cadence_hrs(_model(profile))


@RELEASES
def test_software_reset(profile: BuildProfile) -> None:
    variant_facts.cadence_software_reset(_model(profile))


def test_sdhci_software_reset_leaves_the_host_registers() -> None:
    """SDHC 2.2.11's Software Reset For All is the SDHCI's alone."""
    t = _model()
    t.write(-C.SRS_BASE + 0x04, 4, 0x0000_0007)
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    assert t.read(-C.SRS_BASE + 0x04, 4) == 7


class _SwrKeepsSdhci(CadenceSdhci):
    """The mutant's rule: HRS00.SWR resets the HRS but not the SDHCI inside
    (``device_cold_reset`` of it dropped from ``cadence_sdhci_reset``)."""

    def controller_reset(self) -> None:
        self.hrs.reset()


def test_the_mutant_is_caught_by_pairing_with_a_broken_model() -> None:
    """The cadence-software-reset scenario, with the model on one side and the
    model with that rule broken on the other, diverges at the first SDHCI
    register read after SWR (the build-based row needs a riscv64 source
    build: docs/boards.md)."""
    model, broken = _model(), _model()
    broken.sdhci.__class__ = _SwrKeepsSdhci
    t = LockstepTarget(model, broken)
    sc = all_scenarios()["cadence-software-reset"]
    with pytest.raises(Divergence) as caught:
        sc.fn(t, Context(_PROFILES[-1], BOARD.machine, sc.image, sc.params))  # type: ignore[arg-type]
    step = caught.value.step
    assert step.op == "read" and step.args[0] >= 0  # an SDHCI register, not the HRS
    assert step.model != step.qemu


def test_the_low_gib_shows_again_at_its_alias() -> None:
    """hw/riscv/microchip_pfsoc.c: DRAM_LO_ALIAS maps the first GiB of RAM
    again at 0xC0000000, so DMA there (an explored ADMA descriptor's buffer
    at 0xFFFFF000) reads and writes that RAM; 0x80000000 + 1537 MiB and more
    is the alias too, not more RAM."""
    t = _model()
    t.mem_write(0xFFFF_F000, b"alias")
    assert t.mem_read(0xBFFF_F000, 5) == b"alias"
    t.mem_write(0x8000_2000, b"low")
    assert t.mem_read(0xC000_2000, 3) == b"low"
    assert t.memory.read(0xFFFF_FFFE, 4)[1] is False  # past 4 GiB: nothing
