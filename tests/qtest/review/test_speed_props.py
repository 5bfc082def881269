"""Speed ratios and noise; property compat verdicts (synthetic values)."""

from __future__ import annotations

from harness.review import props
from harness.review.speed import Comparison


def test_ratios_that_straddle_one_are_within_noise() -> None:
    c = Comparison("read", "MiB/s", True, [100, 100, 100], [90, 112, 101])
    assert c.within_noise


def test_a_clear_speed_up_of_a_throughput() -> None:
    c = Comparison("read", "MiB/s", True, [100, 110, 90], [300, 320, 290])
    assert not c.within_noise
    sp = c.speedup()
    assert sp is not None and 2.9 < sp < 3.3
    assert "faster" in c.describe()


def test_a_time_that_grows_is_slower() -> None:
    c = Comparison("erase", "s", False, [1.0, 1.1, 0.9], [2.0, 2.2, 1.9])
    sp = c.speedup()
    assert sp is not None and sp < 0.6
    assert "slower" in c.describe()


def change(patched: dict[str, str], base: dict[str, str] | None = None,
           base_value: str | None = None) -> props.PropChange:
    return props.PropChange("sd-card", "x", props.ADDED if base is None else props.DEFAULT,
                            None if base is None else "off", "on", False, base or {},
                            patched, base_value, ["sc@q35"])


def test_a_new_property_kept_at_the_base_value_on_older_types_is_kept() -> None:
    c = change({"pc-q35-11.0": "off", "pc-q35-10.2": "off", "pc-q35-11.1": "on"},
               base_value="off")
    assert c.kept(["pc-q35-10.2", "pc-q35-11.0"]) == (["pc-q35-10.2", "pc-q35-11.0"], [])


def test_a_new_default_on_older_types_is_a_missing_compat_entry() -> None:
    c = change({"pc-q35-11.0": "on", "pc-q35-11.1": "on"}, base_value="off")
    assert c.kept(["pc-q35-11.0"]) == ([], ["pc-q35-11.0"])


def test_a_changed_default_compares_with_what_base_realised() -> None:
    c = change({"pc-q35-11.0": "off"}, base={"pc-q35-11.0": "off"})
    assert c.kept(["pc-q35-11.0"]) == (["pc-q35-11.0"], [])


def test_without_a_base_value_nothing_is_judged() -> None:
    c = change({"pc-q35-11.0": "on"})
    assert c.kept(["pc-q35-11.0"]) == ([], [])


def test_values_compare_as_qmp_and_device_list_properties_spell_them() -> None:
    assert props.norm(True) == props.norm("true") == props.norm("on") == "on"
    assert props.flipped("on") == "off"


def test_a_slowdown_is_conclusive_only_over_enough_rounds_each_beyond_noise() -> None:
    three = Comparison("write", "MiB/s", True, [4, 4, 4], [1.5, 1.6, 1.4])
    assert not three.within_noise and not three.conclusive
    five = Comparison("write", "MiB/s", True, [4] * 5, [1.5, 1.6, 1.4, 2.0, 1.0])
    assert five.conclusive
    mixed = Comparison("write", "MiB/s", True, [4] * 5, [1.5, 1.6, 1.4, 3.9, 1.0])
    assert not mixed.conclusive
