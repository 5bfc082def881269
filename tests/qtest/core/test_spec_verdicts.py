"""Recipe and spec expectations are verdicts: a miss where model and QEMU
agree is a note only when a listed deviation the model consulted explains
it; otherwise the run fails (``spec-miss``) and ``check`` exits 1."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import cli
from harness.check import inputs, report, runner, session, testbench
from harness.check.lockstep import LockstepTarget
from harness.ledger import LEDGER
from harness.model.target import ModelTarget
from harness.profile import NEWEST
from harness.qemu.builds import QemuBuild
from harness.scenarios import Context, Scenario
from harness.target import Target
from tests.qtest.fakes import fake_qemu

KEY = "sdhci.swrst-single-bit"  # any listed key


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
         fn: Callable[[Target, Context], None]) -> runner.Result:
    monkeypatch.setattr(runner, "QemuTarget", fake_qemu())
    monkeypatch.setattr(testbench, "QemuTarget", fake_qemu())  # the bench launches it
    image = tmp_path / "card.img"
    with open(image, "wb") as f:
        f.truncate(1 << 20)
    profile = dataclasses.replace(NEWEST, machine_types=("q35", "pc-q35-11.1"))
    build = QemuBuild("fake", Path("/nonexistent"), profile)
    return runner.run(build, Scenario("recipe-check", "data", fn), "q35",
                      runner.RunOptions(image=runner.UserImage(image, "raw", image)))


def _consult(t: Target) -> None:
    """What the controller model does when it follows QEMU for :data:`KEY`."""
    assert isinstance(t, LockstepTarget) and isinstance(t.model, ModelTarget)
    t.model.sdhci.deviations.qemu(KEY)


def test_an_unattributed_miss_fails_the_run(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    def fn(t: Target, ctx: Context) -> None:
        ctx.expect(True, "holds")
        ctx.expect(False, "data read differs from the image's pattern")

    res = _run(monkeypatch, tmp_path, fn)
    assert res.status == runner.SPEC_MISS and not res.ok
    assert res.spec_misses == ["data read differs from the image's pattern"]
    assert res.known_misses() == []


def test_a_miss_naming_an_unlisted_key_fails_the_run(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    def fn(t: Target, ctx: Context) -> None:
        ctx.expect(False, "bad data", "sd.no-such-deviation")

    res = _run(monkeypatch, tmp_path, fn)
    assert res.status == runner.SPEC_MISS
    assert "sd.no-such-deviation" in res.spec_misses[0]
    assert "no deviation table lists" in res.spec_misses[0]


def test_a_listed_key_the_model_never_consulted_fails_the_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def fn(t: Target, ctx: Context) -> None:
        ctx.expect(False, "bad data", KEY)

    res = _run(monkeypatch, tmp_path, fn)
    assert res.status == runner.SPEC_MISS
    assert "did not consult" in res.spec_misses[0]


def test_a_listed_consulted_deviation_is_a_note(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    def fn(t: Target, ctx: Context) -> None:
        _consult(t)
        ctx.expect(False, "bad data", KEY)

    res = _run(monkeypatch, tmp_path, fn)
    assert res.status == runner.AGREE and res.ok, res.reason
    assert res.spec_misses == [] and res.known_misses() == [("bad data", KEY)]
    got = res.to_json()["known"][KEY]
    assert (got["misses"], got["scope"], got["applied"]) == (["bad data"], "spec", [])


def _results() -> list[runner.Result]:
    bad = runner.Result("11.1", "sdma-boundaries", "data", "q35", runner.SPEC_MISS)
    bad.spec_misses = ["SDMA across a 32768-byte boundary: data read differs"]
    known = runner.Result("7.2", "erase-seq", "erase", "q35", runner.AGREE)
    known.use(LEDGER[KEY]).misses.append((0, "erase start survived CMD13"))
    return [bad, known]


def test_the_report_names_scenario_message_build_and_deviation() -> None:
    buf = io.StringIO()
    report.print_report(_results(), buf)
    text = buf.getvalue()
    assert "[11.1 q35] sdma-boundaries: SPEC-MISS" in text
    assert "    SDMA across a 32768-byte boundary: data read differs" in text
    assert f"[7.2] erase-seq: erase start survived CMD13 -- {KEY} (SDHC 3.00 2.2.16" in text
    assert "1 agreed, 1 unexplained" in text


def test_check_exits_1_on_a_spec_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    results = iter(_results())

    class FakeBuild:
        name = "11.1"
        profile = NEWEST
        binary = "/nonexistent/qemu-system-x86_64"  # the schedule's reuse keys name it

        def offers(self, machine: str) -> bool:
            return True

    monkeypatch.setattr(session, "select_builds", lambda specs: [FakeBuild()])
    monkeypatch.setattr(session, "select_board_builds", lambda specs: [])  # no boards
    monkeypatch.setattr(inputs, "check_build", lambda b: None)
    monkeypatch.setattr(runner, "run", lambda *a, **k: next(results))
    argv = ["check", "-j", "1", "--scenario", "sdma-boundaries",
            "--scenario", "write-protect-groups"]
    assert cli.main(argv) == 1
