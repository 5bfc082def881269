"""Realize-time rules: QEMU's refusals against the model's, on every build.

The cases straddle each rule's boundary (harness.check.realize); a model
that accepts what it should refuse makes the cross-check diverge.
"""

from __future__ import annotations

import pytest

from harness.check import realize, runner
from harness.model import sdcard
from harness.profile import NEWEST, BuildProfile
from harness.qemu.builds import QemuBuild

pytestmark = pytest.mark.qemu


def test_every_rule_has_a_case_on_each_side() -> None:
    """On the newest profile the model refuses some and accepts some cases
    of each family: the cases reach both sides of the rules they test."""
    families: dict[str, set[bool]] = {}
    for c in realize.cases():
        if "=" in c.name:  # a property's values: one family over both versions
            family = c.name.split("=")[0].replace(" v2 ", " ").replace(" v3 ", " ")
        elif " image of " in c.name:
            family = "sd-card image size"
        else:
            continue
        p = NEWEST if c.card_kind != "emmc" else _with_emmc(NEWEST)
        families.setdefault(family, set()).add(realize.model_verdict(c, p) is None)
    one_sided = [f for f, sides in families.items() if sides != {True, False}]
    assert len(families) >= 9 and not one_sided, one_sided


def _with_emmc(p: BuildProfile) -> BuildProfile:
    import dataclasses

    return dataclasses.replace(p, emmc_properties={"boot-partition-size": None,
                                                   "rpmb-partition-size": None},
                               emmc_pluggable=True)


def test_qemu_refuses_what_the_model_refuses(qemu_build: QemuBuild) -> None:
    results = [realize.run_case(qemu_build, c) for c in realize.cases()]
    bad = [r.reason for r in results if r.status not in (runner.AGREE, runner.SKIP)]
    assert not bad, "\n".join(bad)
    assert sum(r.status == runner.AGREE for r in results) >= 40


def test_a_model_that_takes_any_size_diverges(qemu_build: QemuBuild,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: with the size rule gone from the model, the
    sizes QEMU refuses (not a power of 2) become divergences."""
    monkeypatch.setattr(sdcard, "check_image_size", lambda size, profile: None)
    case = next(c for c in realize.cases() if c.name == "sd-card image of 3145728 bytes")
    res = realize.run_case(qemu_build, case)
    assert res.status == runner.DIVERGE
    assert "the model accepts it, QEMU refuses it" in res.reason


@pytest.mark.parametrize("case", realize.UNPLUGS, ids=lambda c: c.name)
def test_unplug_as_stated(qemu_build: QemuBuild, case: realize.Unplug) -> None:
    res = realize.run_unplug(qemu_build, case)
    assert res.status == runner.AGREE, res.reason


def test_an_unplug_without_the_eject_is_reported(qemu_build: QemuBuild,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The statement can fail: without the guest's eject (written to an
    unused port) QEMU keeps the device, and the run says so."""
    monkeypatch.setattr(realize, "PCIHP_EJECT_PORT", 0xAE20)
    monkeypatch.setattr(realize, "UNPLUG_TIMEOUT", 1.0)
    res = realize.run_unplug(qemu_build, realize.UNPLUGS[0])
    assert res.status == runner.DIVERGE and "no DEVICE_DELETED" in res.reason


def test_a_case_qemu_refuses_for_its_drive_tests_nothing(qemu_build: QemuBuild) -> None:
    """Both sides refusing is not enough: a size the block layer refuses
    (not whole sectors) never reaches the device's rule, and says so."""
    case = realize.RealizeCase("emmc user area in half blocks", "emmc",
                        card={"boot-partition-size": 128 << 10},
                        size=(256 << 10) + (2 << 30) + 256)
    if case.skip_reason(qemu_build.profile):
        pytest.skip(str(case.skip_reason(qemu_build.profile)))
    res = realize.run_case(qemu_build, case)
    assert res.status == runner.ERROR and "refused the drive" in res.reason
