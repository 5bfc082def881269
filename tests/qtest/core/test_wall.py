"""``check --profile``: the wall time split so that the parts add up."""

from __future__ import annotations

import time

import pytest

from harness.check import parallel, wall
from harness.qemu.builds import QemuBuild
from harness.scenarios import all_scenarios


def test_phases_and_the_unclaimed_rest_add_up_to_the_wall_time() -> None:
    clock = wall.start("first")
    time.sleep(0.05)
    clock.mark("second")
    time.sleep(0.02)
    clock.mark("first")  # a phase met again adds up
    lines = clock.lines()
    total = time.monotonic() - clock.start
    assert set(clock.phases) == {"first", "second"}
    assert clock.phases["first"] >= 0.05 and clock.phases["second"] >= 0.02
    assert sum(clock.phases.values()) == pytest.approx(total, abs=0.01)
    assert lines[0].startswith("where the check's")


def test_kinds_of_runs() -> None:
    assert wall.kind_of("explore", "q35") == "explore replay"
    assert wall.kind_of("migration", "pc") == "migration"
    assert wall.kind_of("commands", "pc-q35-9.0") == "x86 scenarios"
    assert wall.kind_of("commands", "zynq") == "boards"


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_workers_split_adds_up_to_their_wall_time(qemu_build: QemuBuild,
                                                      jobs: int) -> None:
    """Launches, resets, runs and idle time of the workers: each part at
    least 0, the runs' own time never more than the workers had (the idle
    part is what is left, not clamped), every qtest command counted."""
    names = ["access-sizes", "reset-values-v2", "w1c-interrupt-status", "register-masks-v2",
             "cmd0-reset"]
    runs = [parallel.RunSpec(qemu_build, all_scenarios()[n], "q35") for n in names
            if n in all_scenarios()]
    wall.start()
    results, stats = parallel.run_all(runs, parallel.SharedOptions(), jobs)
    w = wall.CLOCK.workers
    assert w.jobs == min(jobs, len(runs)) and sum(w.count.values()) == len(runs)
    assert w.pool.launched == stats.launched and w.pool.reused == stats.reused
    assert w.pool.launch_seconds > 0 and w.commands > 0
    busy = (sum(w.runs.values()) + w.pool.launch_seconds + w.pool.reset_seconds
            + w.pool.close_seconds)
    assert busy + w.idle_end <= w.jobs * w.elapsed + 1e-6
    assert busy >= sum(r.seconds for r in results) - 1e-6


def test_each_board_has_its_share_of_the_runs() -> None:
    """``check --profile`` names each board's seconds and runs, largest first
    (a PC run is no board's)."""
    from harness.qemu.pool import PoolStats

    clock = wall.start("runs")
    w = clock.workers
    w.jobs, w.elapsed = 2, 10.0
    for group, machine, secs in (("mmci", "vexpress-a9", 1.5), ("data", "q35", 2.0),
                                 ("sunxi", "orangepi-pc", 3.0), ("mmci", "vexpress-a9", 0.5)):
        w.add_run(group, machine, secs, PoolStats(), 0)
    assert w.by_board == {"vexpress-a9": (2.0, 2), "orangepi-pc": (3.0, 1)}
    lines = clock.lines()
    shares = [ln.split()[0] for ln in lines[lines.index(
        "  each board's runs, launches and resets included (seconds per worker):") + 1:]
        if ln.startswith("    ")]
    assert shares[:2] == ["orangepi-pc", "vexpress-a9"]
