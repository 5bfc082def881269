"""The check's scheduling: chains of one reuse key, longest first, and a
worker with nothing left taking the back half of another's chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.check import parallel, schedule
from harness.check.testbench import RunSpec
from harness.qemu.builds import QemuBuild
from harness.scenarios import all_scenarios


def _runs(build: QemuBuild, names: list[str]) -> list[RunSpec]:
    return [RunSpec(build, all_scenarios()[n], "q35") for n in names]


def test_chains_group_runs_by_reuse_key_and_image(qemu_build: QemuBuild) -> None:
    """``reset-values-v2`` and ``register-masks-v2`` build the same machine
    (``sd-spec-version=2``), the other two the default one: two chains;
    within each, runs costliest first; the costliest chain first."""
    names = ["access-sizes", "reset-values-v2", "w1c-interrupt-status", "register-masks-v2"]
    cost = [0.1, 0.2, 0.3, 0.4]
    got = schedule.chains(_runs(qemu_build, names), cost)
    assert got == [[3, 1], [2, 0]]


def test_a_run_that_launches_its_own_qemu_is_a_chain_of_its_own(
        qemu_build: QemuBuild) -> None:
    """A migration run builds its own processes: it shares with nothing."""
    mig = [n for n, s in all_scenarios().items() if s.migrates][:2]
    got = schedule.chains(_runs(qemu_build, mig), [1.0, 2.0])
    assert got == [[1], [0]]


def test_every_run_is_handed_out_once_and_a_chain_to_one_worker() -> None:
    plan = schedule.Schedule([[0, 1, 2], [3, 4], [5]], [0.1] * 6, 2)
    got: list[list[int]] = [[], []]
    busy = [True, True]
    while any(busy):
        for w in (0, 1):
            i = plan.next(w) if busy[w] else None
            busy[w] = i is not None
            if i is not None:
                got[w].append(i)
    assert sorted(got[0] + got[1]) == list(range(6)) and plan.steals == 0
    assert got == [[0, 1, 2], [3, 4, 5]]


def test_an_idle_worker_takes_the_back_half_of_a_long_chain() -> None:
    """Worker 0 holds a chain of ten 1 s runs, worker 1 has nothing left:
    it takes the last five (5 s, worth a launch), worker 0 keeps the rest."""
    plan = schedule.Schedule([list(range(10))], [1.0] * 10, 2)
    assert plan.next(0) == 0
    assert plan.next(1) == 5 and plan.steals == 1
    assert list(plan.own[0]) == [1, 2, 3, 4] and list(plan.own[1]) == [6, 7, 8, 9]


def test_a_short_remainder_is_not_split() -> None:
    """Half of 0.3 s is less than a launch costs: the idle worker stops."""
    plan = schedule.Schedule([[0, 1, 2, 3]], [0.1] * 4, 2)
    assert plan.next(0) == 0
    assert plan.next(1) is None and plan.steals == 0


def test_costs_kept_round_trip_and_merge(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    schedule.save_costs({("7.2", "q35", "a"): 1.5}, f)
    schedule.save_costs({("11.1", "q35", "b"): 0.25}, f)
    assert schedule.load_costs(f) == {("7.2", "q35", "a"): 1.5, ("11.1", "q35", "b"): 0.25}
    f.write_text("{not json")
    assert schedule.load_costs(f) == {}


def test_estimate_is_the_measured_time_else_the_group_figure(qemu_build: QemuBuild) -> None:
    (r,) = _runs(qemu_build, ["access-sizes"])
    assert schedule.estimate(r, {schedule.cost_key(r): 0.7}) == 0.7
    assert schedule.estimate(r, {}) == schedule.GROUP_SECONDS["registers"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_chain_is_launched_once(qemu_build: QemuBuild, jobs: int) -> None:
    """Runs of two machine descriptions, interleaved: each description is
    launched once and its other runs reuse it, on one worker or two (the
    runs handed out in their given order launched three or four times on
    two workers); the results come back in the order given."""
    names = ["access-sizes", "reset-values-v2", "w1c-interrupt-status", "register-masks-v2"]
    runs = _runs(qemu_build, names)
    results, stats = parallel.run_all(runs, parallel.SharedOptions(), jobs)
    assert [r.scenario for r in results] == names
    assert all(r.ok for r in results)
    assert (stats.launched, stats.reused) == (2, 2)


def _fails(r: RunSpec) -> None:
    raise ValueError(f"no QEMU for {r.scenario.name}")


def _dies(r: RunSpec) -> None:
    import os

    os._exit(3)


def test_a_run_that_raises_in_a_worker_raises_in_the_check(
        qemu_build: QemuBuild, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_run_one", _fails)  # the forked workers inherit it
    with pytest.raises(ValueError, match="no QEMU for access-sizes"):
        parallel.run_all(_runs(qemu_build, ["access-sizes", "reset-values-v2"]),
                         parallel.SharedOptions(), 2)


def test_a_worker_that_dies_is_an_error_not_a_hang(
        qemu_build: QemuBuild, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_run_one", _dies)
    with pytest.raises(RuntimeError, match="exit code 3"):
        parallel.run_all(_runs(qemu_build, ["access-sizes", "reset-values-v2"]),
                         parallel.SharedOptions(), 2)


def _qemus_under(marker: str) -> list[int]:
    """PIDs of live processes whose command line names ``marker``."""
    import os

    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    with open(f"/proc/{pid}/stat") as g:
                        if g.read().rsplit(")", 1)[1].split()[0] != "Z":
                            out.append(int(pid))
        except OSError:
            continue
    return out


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupted_parallel_check_leaves_no_qemu(qemu_build: QemuBuild,
                                                      sig: str) -> None:
    """Ctrl-C (the whole process group) or SIGTERM of the check itself in
    the middle of its runs on two workers: it exits, and no QEMU it
    started (their sockets under its own TMPDIR) is left."""
    import shutil
    import tempfile

    # A short directory: QEMU's sockets must fit a unix socket path (a
    # pytest tmp_path under xdist is too long for them).
    tmp = Path(tempfile.mkdtemp(prefix="sdq-"))
    try:
        _interrupt(qemu_build, tmp, sig)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _interrupt(qemu_build: QemuBuild, tmp: Path, sig: str) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[3]
    p = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "check", "-j", "2", "--qemu",
         str(qemu_build.binary), "--group", "data,commands", "--no-boards"],
        cwd=root, env=dict(os.environ, TMPDIR=str(tmp)), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_qemus_under(str(tmp))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _qemus_under(str(tmp)), "the check started no QEMU within 60 s"
    if sig == "SIGINT":
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError(f"the check did not exit within 60 s of {sig}") from None
    deadline = time.monotonic() + 10
    while _qemus_under(str(tmp)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _qemus_under(str(tmp)), f"QEMU survived {sig} of the check"
