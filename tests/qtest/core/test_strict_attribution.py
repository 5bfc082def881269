"""``check --strict`` credits a divergence to a deviation honestly: only
where the non-strict model agrees, for every scenario, and a divergence no
single deviation reproduces is reported as unexplained."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.check import runner, strict
from harness.check.lockstep import Divergence
from harness.check.step import Step
from harness.ledger import LEDGER
from harness.profile import NEWEST
from harness.qemu.builds import QemuBuild
from harness.scenarios import Context, Scenario
from harness.target import Target

KEY = "sd.ocr-reserved-voltage-bits"

#: scenario -> strictness ("off", "all" or a key) -> step it diverges at (None: agrees)
Plan = dict[str, dict[str, int | None]]


def _nothing(t: Target, ctx: Context) -> None:
    pass


def _build() -> QemuBuild:
    return QemuBuild("fake", Path("/nonexistent"), dataclasses.replace(NEWEST))


def _fake_run(plan: Plan, calls: list[tuple[str, str]]) -> Callable[..., runner.Result]:
    def run(build: QemuBuild, sc: Scenario, machine: str = "q35",
            opts: runner.RunOptions | None = None) -> runner.Result:
        strict = opts.strict if opts is not None else False
        mode = "off" if strict is False else "all" if strict is True else ",".join(sorted(strict))
        calls.append((sc.name, mode))
        res = runner.Result(build.name, sc.name, sc.group, machine, runner.AGREE)
        res.use(LEDGER[KEY]).consulted = True
        at = plan[sc.name].get(mode)
        if at is not None:
            step = Step(at, "read", (0x10, 4), 1, 2, False, False)
            res.status, res.divergence = runner.DIVERGE, Divergence(step, "result", [])
            res.reason = res.divergence.summary()
        return res
    return run


def _check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, plan: Plan
           ) -> tuple[strict.StrictReport, list[tuple[str, str]]]:
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(strict.runner, "run", _fake_run(plan, calls))
    scenarios = [Scenario(name, "card", _nothing) for name in plan]
    return strict.findings_for(_build(), scenarios, "q35", tmp_path), calls


def test_non_strict_divergence_at_the_same_step_is_no_finding(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rep, _ = _check(monkeypatch, tmp_path, {"a": {"off": 5, "all": 5, KEY: 5}})
    assert rep.findings == []
    assert [u.result.scenario for u in rep.unexplained] == ["a"]
    assert "non-strict" in rep.unexplained[0].why


def test_a_key_found_in_one_scenario_is_retried_for_the_next(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rep, calls = _check(monkeypatch, tmp_path, {"a": {"all": 3, KEY: 3},
                                                "b": {"all": 7, KEY: 7}})
    assert ("b", KEY) in calls
    assert [(f.deviation.key, f.scenario, f.scenarios) for f in rep.findings] == [
        (KEY, "a", ["a", "b"])]
    assert rep.unexplained == []


def test_a_divergence_no_single_key_reproduces_is_unexplained(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The key shows in "a"; in "b" the strict model diverges but the key
    # alone does not reproduce it.
    rep, _ = _check(monkeypatch, tmp_path, {"a": {"all": 3, KEY: 3}, "b": {"all": 7}})
    assert [f.scenarios for f in rep.findings] == [["a"]]
    assert [u.result.scenario for u in rep.unexplained] == ["b"]
    assert "no single deviation" in rep.unexplained[0].why


def test_a_key_diverging_elsewhere_is_a_finding_but_explains_nothing(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rep, _ = _check(monkeypatch, tmp_path, {"a": {"all": 3, KEY: 9}})
    assert [f.deviation.key for f in rep.findings] == [KEY]
    assert [u.result.scenario for u in rep.unexplained] == ["a"]
