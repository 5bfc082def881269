"""The check's summary: every skip reason with its count, adoptions with
--verbose, and the exit status when a build skipped most scenarios."""

from __future__ import annotations

import io

import pytest

from harness import cli
from harness.check import inputs, report, runner, session
from harness.check.runner import Result
from harness.ledger import adopting
from harness.profile import NEWEST

NO_CLOCK = "needs virtual time (qtest accelerator), which this build lacks"
NO_PROP = "sd-card has no property erase-blocks-as-zero in this build"


def _results() -> list[Result]:
    out = [Result("old", f"s{i}", "commands", "q35", runner.SKIP, NO_CLOCK) for i in range(3)]
    out.append(Result("old", "e1", "erase", "q35", runner.SKIP, NO_PROP))
    out.append(Result("old", "r1", "registers", "q35", runner.AGREE))
    out.append(Result("new", "e1", "erase", "q35", runner.SKIP, NO_PROP))
    ok = Result("new", "cmd-all-in-stby", "commands", "q35", runner.AGREE)
    ok.use(adopting("RCA")).adopted.append((125, "RCA", 0xB0C3))
    out.append(ok)
    return out


def test_each_distinct_skip_reason_is_printed_with_its_count_without_verbose() -> None:
    buf = io.StringIO()
    report.print_report(_results(), buf)
    text = buf.getvalue()
    assert f"3 x {NO_CLOCK} (old)" in text
    assert f"2 x {NO_PROP} (old, new)" in text
    assert "[old q35] s0" not in text  # each skipped scenario only with --verbose
    assert "cmd-all-in-stby step 125" not in text


def test_verbose_lists_every_adoption() -> None:
    buf = io.StringIO()
    report.print_report(_results(), buf, verbose=True)
    assert "[new q35] cmd-all-in-stby step 125: RCA 0xb0c3" in buf.getvalue()
    assert "[old q35] s0: " + NO_CLOCK in buf.getvalue()


def test_a_build_that_skipped_most_scenarios_is_named() -> None:
    assert runner.skipped_too_much(_results()) == ["QEMU old skipped 4 of 5 scenarios"]


def test_skips_for_a_device_the_build_lacks_do_not_count() -> None:
    from harness.profile import EMMC_NOT_PLUGGABLE

    rs = [Result("10.0", f"emmc{i}", "emmc-rpmb", "q35", runner.SKIP, EMMC_NOT_PLUGGABLE)
          for i in range(5)]
    rs.append(Result("10.0", "r1", "registers", "q35", runner.AGREE))
    assert runner.skipped_too_much(rs) == []
    rs.append(Result("10.0", "s1", "commands", "q35", runner.SKIP, NO_CLOCK))
    rs.append(Result("10.0", "s2", "commands", "q35", runner.SKIP, NO_CLOCK))
    assert runner.skipped_too_much(rs) == ["QEMU 10.0 skipped 2 of 3 scenarios"]


def test_check_exits_non_zero_on_mostly_skipped_unless_allowed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    results = iter(_results())

    class FakeBuild:
        name = "old"
        profile = NEWEST  # a known version: no "defaults unverified" note
        binary = "/nonexistent/qemu-system-x86_64"  # the schedule's reuse keys name it

        def offers(self, machine: str) -> bool:
            return True

    monkeypatch.setattr(session, "select_builds", lambda specs: [FakeBuild()])
    monkeypatch.setattr(session, "select_board_builds", lambda specs: [])  # no boards
    monkeypatch.setattr(inputs, "check_build", lambda b: None)
    monkeypatch.setattr(runner, "run", lambda *a, **k: next(results))
    argv = ["check", "-j", "1", "--scenario", "cmd-all-in-stby", "--scenario", "card-registers",
            "--scenario", "access-sizes", "--scenario", "reset-values-v2",
            "--scenario", "erase-as-zero-on"]
    assert cli.main(argv) == 4
    results = iter(_results())
    assert cli.main([*argv, "--allow-skips"]) == 0


def _outcome(shard: tuple[int, int] = (1, 1)) -> session.CheckOutcome:
    """An outcome with just what :func:`session.summary` reads."""
    from types import SimpleNamespace
    from typing import cast

    rs = _results()
    for r in rs:
        r.lockstep = "optimistic"
    plan = SimpleNamespace(runs=rs, request=SimpleNamespace(shard=shard), jobs=2, total=14,
                           matrix_here=True)
    return cast(session.CheckOutcome, SimpleNamespace(
        plan=plan, aborted="", elapsed=2.0, ran=rs, results=rs,
        stats=SimpleNamespace(launched=2, reused=5, fallbacks=[])))


def test_the_default_summary_leaves_out_the_checks_own_counters() -> None:
    """Workers, launches, reuses and lockstep modes are how sdqtest ran, not
    what it found: only with --verbose or --profile."""
    plain = session.summary(_outcome(), counters=False)
    assert plain == "7 scenario runs in 2.0 s"
    full = session.summary(_outcome())
    assert full.startswith(plain) and "QEMU launched 2 times, reused 5 times" in full
    assert "optimistic lockstep 7, fell back to step by step 0" in full
    assert session.summary(_outcome((2, 3)), counters=False).endswith("; shard 2/3: 7 of 14 runs")
