"""The bisect helper against real QEMU runs.

A git repository made at run time "builds" each commit by writing a wrapper
around an installed QEMU build (:mod:`harness.bisect.synthetic`).  From one
commit on, the wrapper changes a real device default with ``-global
sd-card.spec_version=N`` (a value other than the build's), or sleeps before
QEMU starts; the bisect must name that commit, in at most log2(N)+1 steps,
from the real check's verdict: the ``card-registers`` scenario diverging
from the model, a pytest node failing, or the ``launch-ms`` figure crossing
a threshold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.bisect import BAD, GOOD
from harness.bisect.checks import BenchCheck, PytestCheck, ScenarioCheck
from harness.bisect.driver import bisect
from harness.bisect.progress import BisectProgress
from harness.bisect.synthetic import Commit, make_repo
from harness.cli import main as bisect_main
from harness.provision.build import make_builder
from harness.qemu import builds

pytestmark = [pytest.mark.qemu, pytest.mark.slow]
FAST_PYTEST = "-p no:hypothesispytest -p no:benchmark -p no:xdist"


@pytest.fixture(scope="module")
def real_qemu() -> builds.QemuBuild:
    """The newest selected build with sdhci-pci ($QTEST_QEMU_BINARY or installed ones)."""
    try:
        found = [b for b in builds.selected() if b.has_sdhci_pci]
    except builds.BuildError as e:
        pytest.skip(f"no usable QEMU build: {e}")
    if not found:
        pytest.skip("no QEMU build installed: run 'sdqtest qemu install' (or set "
                    "QTEST_QEMU_BINARY) to run the bisect against real QEMU")
    return found[-1]


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # after real_qemu has been resolved from the real cache
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path_factory.getbasetemp() / "bisect-cache"))


def _other_spec_version(b: builds.QemuBuild) -> str:
    default = b.profile.sd_card_properties.get("spec_version") or "3"
    return "2" if default != "2" else "3"


def _repo(tmp_path: Path, qemu: Path, n: int, first_bad: int, *, globals_: Sequence[str] = (),
          delay: float = 0.0) -> list[str]:
    commits = [
        Commit(f"sd: change {i}" if i else "base",
               list(globals_) if i >= first_bad else [],
               delay=delay if i >= first_bad else 0.0)
        for i in range(n + 1)
    ]
    return make_repo(tmp_path / "repo", qemu, commits)


def _max_steps(n: int) -> int:
    return math.floor(math.log2(n)) + 1


def _scenario_listed(name: str) -> bool:
    try:
        import harness.scenarios as scenario
    except ImportError:
        return False
    return name in scenario.all_scenarios()


def test_scenario_bisect_finds_spec_version_change(
    tmp_path: Path, real_qemu: builds.QemuBuild, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sdqtest bisect --scenario card-registers`` names the commit that flips spec_version."""
    if not _scenario_listed("card-registers"):
        pytest.skip("the check engine has no card-registers scenario")
    with open(tmp_path / "plain.log", "w") as log:
        plain = ScenarioCheck("card-registers").run(real_qemu.binary, log, timeout=300)
    assert plain.code == GOOD, (
        f"card-registers must agree on the unmodified build {real_qemu.name} for this bisect "
        f"to mean anything; it says: {plain.summary}")
    n, first_bad = 6, 4
    mark = f"sd-card.spec_version={_other_spec_version(real_qemu)}"
    shas = _repo(tmp_path, real_qemu.binary, n, first_bad, globals_=[mark])
    rc = bisect_main(["bisect", "--qemu-src", str(tmp_path / "repo"), "--good", shas[0],
                      "--bad", shas[-1], "--scenario", "card-registers",
                      "--log-dir", str(tmp_path / "logs")])
    out = capsys.readouterr()
    assert rc == 0, out
    lines = out.out.splitlines()
    assert lines[0] == f"first bad commit: {shas[first_bad]} sd: change {first_bad}"
    assert "card-registers" in lines[1]  # the first divergence, in words
    steps = [ln for ln in lines if re.match(r"\s+\d+\. [0-9a-f]{12} (good|bad|skip) ", ln)]
    assert 1 <= len(steps) <= _max_steps(n), out.out
    assert f"logs: {tmp_path / 'logs'}" in out.out
    assert "[step 1" in out.err and "build: ok" in out.err and "check: " in out.err


def test_pytest_bisect_real_qemu(tmp_path: Path, real_qemu: builds.QemuBuild) -> None:
    """``--pytest NODEID``: a node that reads the card's spec_version through QOM."""
    n, first_bad = 3, 2
    want = real_qemu.profile.sd_card_properties.get("spec_version") or "3"
    mark = f"sd-card.spec_version={_other_spec_version(real_qemu)}"
    shas = _repo(tmp_path, real_qemu.binary, n, first_bad, globals_=[mark])
    node = tmp_path / "test_spec_version.py"
    node.write_text(
        "import os\nfrom harness.qemu.target import QemuTarget\n\n"
        "def test_spec_version_is_the_class_default():\n"
        "    with QemuTarget(os.environ['QTEST_QEMU_BINARY']) as t:\n"
        "        got = t.qom_get('/machine/peripheral/card', 'spec_version')\n"
        f"    assert str(got) == {want!r}\n")
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 PytestCheck(str(node), extra_args=FAST_PYTEST.split()),
                 progress=BisectProgress(live=False))
    assert res.code == 0, res.report()
    assert res.first_bad == shas[first_bad]
    assert len(res.steps) <= _max_steps(n)
    assert res.outcome is not None and res.outcome.code == BAD
    assert "test_spec_version_is_the_class_default" in res.outcome.summary


def test_bench_bisect_finds_slowdown(tmp_path: Path, real_qemu: builds.QemuBuild) -> None:
    """``--bench launch-ms``: the commit whose wrapper sleeps 2 s crosses the threshold
    (1 s above the unchanged launch: wide enough for a loaded machine)."""
    from harness.bench.metrics import METRICS

    base = METRICS["launch-ms"].measure(real_qemu.binary)
    threshold = base + 1000
    n, first_bad = 5, 2
    shas = _repo(tmp_path, real_qemu.binary, n, first_bad, delay=2.0)
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 BenchCheck("launch-ms", threshold), progress=BisectProgress(live=False))
    assert res.code == 0, res.report()
    assert res.first_bad == shas[first_bad]
    assert len(res.steps) <= _max_steps(n)
    o = res.outcome
    assert o is not None and o.figure is not None and o.figure > threshold
    assert o.summary.startswith("launch-ms = ") and "threshold" in o.summary
    for s in res.steps:
        assert s.figure is not None
        assert (s.code == GOOD) == (s.figure <= threshold)
