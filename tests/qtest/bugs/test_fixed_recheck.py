"""harness.check.fixed: a divergence the qemu-bug rules explain is a stale entry."""

from __future__ import annotations

from harness.check import fixed, runner
from harness.ledger import LEDGER


def _res(status: str, consulted: set[str]) -> runner.Result:
    res = runner.Result("b", "sc", "g", "q35", status)
    for key in consulted:
        res.use(LEDGER[key]).consulted = True
    return res


def test_agreeing_or_unswitched_runs_are_left_alone() -> None:
    calls: list[frozenset[str]] = []

    def rerun(keys: frozenset[str]) -> runner.Result:
        calls.append(keys)
        return _res(runner.AGREE, set())

    first = _res(runner.AGREE, {"sd.lock-pwd-len"})
    assert fixed.recheck(first, rerun) is first
    first = _res(runner.DIVERGE, {"sd.cmd8-vhs"})  # a spec deviation, not a qemu-bug
    assert fixed.recheck(first, rerun) is first
    assert calls == []


def test_a_rerun_following_the_rule_that_agrees_names_the_entry() -> None:
    keys = {"sd.lock-pwd-len", "sd.wide-data-byte-order"}

    def rerun(k: frozenset[str]) -> runner.Result:
        ok = "sd.wide-data-byte-order" in k
        return _res(runner.AGREE if ok else runner.DIVERGE, set())

    res = fixed.recheck(_res(runner.DIVERGE, keys | {"sd.cmd8-vhs"}), rerun)
    assert res.status == runner.AGREE
    assert res.notes == [f"{fixed.NOTE}: sd.wide-data-byte-order"]


def test_a_rerun_that_still_diverges_keeps_the_divergence() -> None:
    first = _res(runner.DIVERGE, {"sd.lock-pwd-len"})
    res = fixed.recheck(first, lambda k: _res(runner.DIVERGE, set()))
    assert res is first and res.status == runner.DIVERGE
