"""A real review of two builds (skipped, with the reason, when they are absent).

The same build on both sides must give nothing to report; the demonstration
series' builds (docs/review.md), when given through
``SDQTEST_REVIEW_BASE`` and ``SDQTEST_REVIEW_DATABUG``, must show the erase
bug in the erase scenarios and, with the series' new property at its base
value, nothing in the others.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.qemu import builds
from harness.review import classify, direct, report, run, wrap
from harness.scenarios import all_scenarios

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

SCENARIOS = ("card-registers", "erase-ranges-sdsc-16m", "erase-ranges-sdhc-4g")


def _installed() -> Path | None:
    inst = builds.installed()
    for name in ("11.1", "10.0", "7.2"):
        if name in inst:
            return inst[name]
    return None


def _scenarios() -> list[str]:
    have = all_scenarios()
    return [n for n in SCENARIOS if n in have]


def test_the_same_build_on_both_sides_has_nothing_to_report(tmp_path: Path) -> None:
    binary = _installed()
    if binary is None:
        pytest.skip("no Debian QEMU build installed (sdqtest qemu install)")
    opts = run.ReviewOptions([all_scenarios()[n] for n in _scenarios()], jobs=1,
                       report_dir=tmp_path, bench=False, reuse_base_check=False)
    rv = run.review(binary, binary, opts, lambda s: None)
    assert rv.props == []
    assert {r.category for r in rv.rows} <= {classify.SAME, classify.SKIPPED, classify.BOTH}
    assert not [f for f in report.findings(rv) if f.problem]
    assert "nothing differs" in report.render(rv)


def _env_binary(var: str) -> Path | None:
    v = os.environ.get(var)
    return Path(v) if v and Path(v).is_file() else None


def test_the_demonstration_erase_bug_is_a_changed_erase_scenario(tmp_path: Path) -> None:
    base, bug = _env_binary("SDQTEST_REVIEW_BASE"), _env_binary("SDQTEST_REVIEW_DATABUG")
    if base is None or bug is None:
        pytest.skip("set SDQTEST_REVIEW_BASE and SDQTEST_REVIEW_DATABUG to the base and "
                    "databug-series binaries of docs/review.md's demonstration")
    a = builds.probe(wrap.seeded(base, tmp_path), "base")
    # scr-cmd23 (the series' intended SCR change) at its base value: what is
    # left is the erase bug
    b = builds.probe(wrap.seeded(bug, tmp_path, ["sd-card.scr-cmd23=off"]), "patched")
    got = {r.scenario: r for r in direct.run_all(a, b, [(n, "q35") for n in _scenarios()])}
    assert got["card-registers"].status == direct.SAME
    erase = [r for n, r in got.items() if n.startswith("erase")]
    assert erase and any(r.status == direct.DIFFERS for r in erase)
