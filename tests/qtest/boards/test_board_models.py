"""The controller variants of the ARM boards in the model, from the manuals.

Each fact of :mod:`variant_facts` on the board's ModelTarget (no QEMU): the
S3C vendor registers, the Nuvoton wrapper, the i.MX uSDHC layout; then the
one driver programs each variant (the uSDHC through its layout hook) and
reads a block into the board's RAM.
"""

from __future__ import annotations

import dataclasses

import pytest

from harness.driver.host import HostDriver
from harness.driver.layout import UsdhcLayout
from harness.driver.recording import RecordingTarget
from harness.driver.results import Mode
from harness.hwdefs import boards
from harness.hwdefs import s3c as S3C
from harness.hwdefs import sdhci as H
from harness.hwdefs import usdhc as U
from harness.machine import Machine
from harness.model.sdhci_aspeed import AspeedSdhci
from harness.model.sdhci_cadence import CadenceSdhci
from harness.model.sdhci_npcm import NpcmSdhci
from harness.model.sdhci_s3c import S3cSdhci
from harness.model.sdhci_usdhc import Usdhc
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from tests.qtest.boards import variant_facts

#: The profiles of the three ARM releases: their versions and the boards'
#: machine types (the facts depend on nothing else a build offers).
_MACHINES = tuple(b.machine for b in boards.SDHCI_BOARDS)
_V72, _V100, _V111 = (BuildProfile(v, machine_types=_MACHINES)
                      for v in ((7, 2, 22), (10, 0, 13), (11, 1, 3)))


def _ids(value: object) -> str:
    return ".".join(map(str, value.version)) if isinstance(value, BuildProfile) else str(value)


def _model(name: str, profile: BuildProfile = _V111) -> ModelTarget:
    m = Machine.for_board(name)
    if m.card_kind == "emmc":  # a build with the emmc device and its size properties
        profile = dataclasses.replace(profile, emmc_properties={
            "boot-partition-size": None, "boot-config": None})
    return ModelTarget(m, profile=profile, size=16 << 20)


def test_each_board_gets_its_variant() -> None:
    kinds = {"zynq": "SDHCI", "raspi3b": "SDHCI", "smdkc210": S3cSdhci.__name__,
             "quanta-gbs": NpcmSdhci.__name__, "mcimx7d": Usdhc.__name__,
             "ast2600": AspeedSdhci.__name__, "fuji-emmc": AspeedSdhci.__name__,
             "icicle": CadenceSdhci.__name__}
    for b in boards.SDHCI_BOARDS:
        assert type(_model(b.name).sdhci).__name__ == kinds[b.name], b.name


def test_fuji_plugs_an_emmc_into_its_emmc_slot() -> None:
    """hw/arm/aspeed.c: the eMMC controller's card is an emmc device, its
    write-protect signal not inverted (only the EVBs' SD slots are)."""
    t = _model("fuji-emmc")
    assert t.card.is_emmc and not t.sdhci.wp_inverted
    assert _model("ast2600").sdhci.wp_inverted
    assert not _model("ast2600", _V72).sdhci.wp_inverted  # no such property before 10.0


def test_s3c_control_registers() -> None:
    variant_facts.s3c_control_registers(_model("smdkc210"))


def test_s3c_control_registers_strict_are_the_manuals() -> None:
    """Strict (the Exynos 4210 manual): CONTROL2/3/4 keep what was written, a
    byte write changes its byte only, and a Software Reset For All clears them."""
    t = ModelTarget(Machine.for_board("smdkc210"), profile=_V111, size=16 << 20,
                    strict=frozenset({"s3c.control-registers-ignored"}))
    for i, reg in enumerate(S3C.VENDOR_REGISTERS.values()):
        t.write(reg.offset, 4, 0x1234_5670 + i)
        assert t.read(reg.offset, 4) == 0x1234_5670 + i, reg.name
    c2 = S3C.VENDOR_REGISTERS[0x80].offset
    t.write(c2, 1, 0xAB)
    assert t.read(c2, 4) == 0x1234_56AB and t.read(c2, 2) == 0x56AB
    t.write(H.SWRST.offset, 1, H.SWRST_ALL)
    assert all(t.read(o, 4) == 0 for o in S3C.VENDOR_REGISTERS)


@pytest.mark.parametrize("profile", [_V72, _V100, _V111], ids=_ids)
def test_aspeed_slot(profile: BuildProfile) -> None:
    variant_facts.aspeed_slot(_model("ast2600", profile), profile.version)


@pytest.mark.parametrize("profile", [_V72, _V100, _V111], ids=_ids)
def test_aspeed_wrapper(profile: BuildProfile) -> None:
    variant_facts.aspeed_wrapper(_model("ast2600", profile), profile.version)


@pytest.mark.parametrize("profile", [_V72, _V100, _V111], ids=_ids)
def test_npcm_wrapper(profile: BuildProfile) -> None:
    variant_facts.npcm_wrapper(_model("quanta-gbs", profile))


@pytest.mark.parametrize("profile", [_V72, _V100, _V111], ids=_ids)
def test_usdhc_layout(profile: BuildProfile) -> None:
    variant_facts.usdhc_layout(_model("mcimx7d", profile))
    variant_facts.usdhc_command_takes_mix_ctrl(_model("mcimx7d", profile))


@pytest.mark.parametrize("profile,spec", [(_V72, 2), (_V100, 3), (_V111, 3)], ids=_ids)
def test_usdhc_spec_version_by_release(profile: BuildProfile, spec: int) -> None:
    t = _model("mcimx7d", profile)
    assert t.read(0xFE, 1) == spec - 1


@pytest.mark.parametrize("name", ["smdkc210", "mcimx7d", "quanta-gbs", "ast2600"])
def test_the_driver_reads_a_block_into_the_board_ram(name: str) -> None:
    """The driver's DMA area lies in the board's RAM (smdkc210's starts at
    1 GiB); on the uSDHC it goes through MIX_CTRL and CMD_XFR_TYP."""
    board = boards.by_name(name)
    rec = RecordingTarget(_model(name))
    d = HostDriver(rec)
    assert d.dma_base == board.ram_base + 0x0100_0000
    assert isinstance(d.layout, UsdhcLayout) == (board.variant == "usdhc")
    d.setup()
    d.init_card()
    data = bytes(range(256)) * 4
    assert not d.write_blocks(3, data, mode=Mode.SDMA).error
    r = d.read_blocks(3, 2, mode=Mode.SDMA)
    assert r.data == data and not r.error
    assert rec.inner.mem_read(d.data_area, 1024) == data  # in the board's RAM
    writes = {e.args[0] for e in rec.log if e.op == "write"}
    assert (U.MIX_CTRL.offset in writes) == (board.variant == "usdhc")
