"""Speed ratios and noise; property compat verdicts (synthetic values)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

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


def test_the_guest_benchmark_pairs_each_fio_job_across_builds(monkeypatch: object) -> None:
    """``review --guest``: the figures of each build's guest run pair by
    table and labels (the accelerator apart), rounds alternate the builds,
    and a figure without samples is an error with its side."""
    import pytest

    from harness.bench import guest as bench_guest
    from harness.bench.output import Figure, Run
    from harness.review import speed

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    calls: list[str] = []

    def fake_run(builds: list[Any], opts: bench_guest.Options, **kw: object) -> Run:
        (b,) = builds
        calls.append(b.name)
        fast = b.name == "patched"
        accel = "KVM" if fast else "TCG"
        return Run("guest", figures=[
            Figure("guest fio 128 KiB", b.name, {"rw": "read", "block_kib": 128, "accel": accel},
                   "MiB/s", [20.0 if fast else 10.0]),
            Figure("guest erase", b.name, {"range": "64 MiB", "accel": accel}, "s",
                   [] if fast else [3.0], False, status="over budget"),
            Figure("guest end-to-end integrity", b.name, {"check": "pattern present"}, "", [],
                   status="NO" if fast else "yes"),
            Figure("guest end-to-end integrity", b.name, {"check": "guards intact"}, "", [],
                   status="yes")])

    monkeypatch.setattr(bench_guest, "run", fake_run)
    base: Any = SimpleNamespace(name="base")
    patched: Any = SimpleNamespace(name="patched")
    fio, erase, pattern, guards = speed.guest(base, patched, rounds=2)
    assert calls == ["base", "patched", "patched", "base"]
    assert fio.base == [10.0, 10.0] and fio.patched == [20.0, 20.0]
    assert fio.name == "guest fio 128 KiB block_kib=128 rw=read"
    assert "2.00x faster" in fio.describe()
    assert erase.error == "patched: over budget" and erase.base == [3.0, 3.0]
    assert pattern.status_differs and not guards.status_differs
    assert pattern.describe().endswith("check=pattern present: base yes, patched NO")
