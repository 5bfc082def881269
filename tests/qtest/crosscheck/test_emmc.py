"""eMMC in lockstep: a sample of the eMMC scenarios on each build, and the
two QEMU aborts the model predicts.

The whole eMMC set runs with ``sdqtest check --group emmc-registers,emmc-commands,
emmc-data,emmc-boot,emmc-rpmb`` (about a minute on 11.1); the regression
suite (``test_scenarios.py``) leaves those groups to this sample.  Builds
whose ``emmc`` cannot go on sdhci-pci skip with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import harness.scenarios as scenario
from harness import images
from harness.check import runner
from harness.driver.emmc import EmmcDriver
from harness.errors import QemuGone
from harness.hwdefs.emmc import Partition
from harness.machine import CardImage, Machine
from harness.model import emmc_defaults
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget
from harness.scenarios.emmc import IMAGE

pytestmark = pytest.mark.qemu

SAMPLE = ("emmc-identification", "emmc-ext-csd", "emmc-switch-refused", "emmc-sleep",
          "emmc-pio-boot1", "emmc-adma2-user", "emmc-boot-past-end", "emmc-rpmb-write-read",
          "emmc-rpmb-bad-mac", "emmc-rpmb-wrong-address")


@pytest.mark.parametrize("name", SAMPLE)
def test_emmc_sample(qemu_build: QemuBuild, name: str, tmp_path: Path) -> None:
    sc = scenario.all_scenarios()[name]
    res = runner.run(qemu_build, sc, "q35", runner.RunOptions(report_dir=tmp_path))
    if res.status == runner.SKIP:
        pytest.skip(res.reason)
    detail = res.divergence.render() if res.divergence else res.reason
    assert res.ok, f"{res.status}: {detail}"


def _sleep_then_cmd0(d: EmmcDriver) -> None:
    d.sleep()
    d.cmd(0, 0)


def _gp_partition_read(d: EmmcDriver) -> None:
    d.select_partition(Partition.GP1)
    d.read_blocks(0, 1)


@pytest.mark.parametrize("steps", [_sleep_then_cmd0, _gp_partition_read],
                         ids=["cmd0-while-asleep", "gp-partition-read"])
def test_predicted_aborts(qemu_build: QemuBuild, steps: Callable[[EmmcDriver], None]) -> None:
    """The model says QEMU aborts here (deviations emmc.sleep-no-awake and
    emmc.gp-partition-access); QEMU does."""
    why = qemu_build.profile.emmc_unusable()
    if why:
        pytest.skip(why)
    r = images.recipe(IMAGE)
    m = Machine(card_kind="emmc", card=r.emmc_props(), image=CardImage(images.ensure(IMAGE)))
    model = ModelTarget(m, image=images.raw_twin(IMAGE), profile=qemu_build.profile)
    d = EmmcDriver(model)
    d.setup()
    d.init_emmc()
    steps(d)
    assert model.hung and "aborts" in model.hung
    q = QemuTarget(qemu_build.binary, m)
    try:
        d = EmmcDriver(q)
        d.setup()
        d.init_emmc()
        with pytest.raises(QemuGone):
            steps(d)
            d.send_status()
    finally:
        q.close()


def test_version_table_matches_the_build(qemu_build: QemuBuild) -> None:
    """What the build offers of emmc (device, user-creatable, properties) is
    what the model's per-version table expects of its version."""
    assert emmc_defaults.surprises(qemu_build.profile) == []


def test_image_layout_by_experiment(qemu_build: QemuBuild) -> None:
    """A distinct block written through each partition (an authenticated
    write for RPMB) lands in QEMU's image file where the recipe's layout
    says: boot 1, boot 2, RPMB, user area, back to back."""
    why = qemu_build.profile.emmc_unusable()
    if why:
        pytest.skip(why)
    r = images.recipe(IMAGE)
    m = Machine(card_kind="emmc", card=r.emmc_props(), image=CardImage(images.ensure(IMAGE)))
    starts = r.partition_starts()
    q = QemuTarget(qemu_build.binary, m)
    try:
        d = EmmcDriver(q)
        d.setup()
        d.init_emmc()
        for part in (Partition.USER, Partition.BOOT1, Partition.BOOT2):
            d.select_partition(part)
            assert d.write_blocks(1, bytes([0x10 + part]) * 512).ok
        d.select_partition(Partition.RPMB)
        key = bytes(32)
        d.rpmb_program_key(key)
        d.rpmb_auth_write(d.rpmb_write_frame(key, 2, b"\x13" * 256, 0))
        for name, part in (("user", 0), ("boot1", 1), ("boot2", 2)):
            assert q.image_read(starts[name] + 512, 512) == bytes([0x10 + part]) * 512, name
        assert q.image_read(starts["rpmb"] + 2 * 256, 256) == b"\x13" * 256
        assert q.image_read(starts["rpmb"] + 3 * 256, 256) == r.expected(starts["rpmb"] + 768, 256)
    finally:
        q.close()
