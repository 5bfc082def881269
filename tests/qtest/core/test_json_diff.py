"""``harness.check.json_diff``: equal up to timing, scope and adopted values."""

from __future__ import annotations

import copy
from typing import Any

from harness.check.json_diff import compare


def _report() -> dict[str, Any]:
    return {"builds": [{"name": "11.1"}], "quirks_applied": [], "results": [
        {"build": "11.1", "machine": "q35", "scenario": "a", "status": "agree", "seconds": 1.0,
         "adoptions": [{"step": 3, "what": "RCA", "value": 0x1234}],
         "known_deviation_misses": [{"message": "m", "deviation": "sd.x"}]},
        {"build": "11.1", "machine": "q35", "scenario": "b", "status": "agree", "seconds": 2.0,
         "adoptions": [], "known_deviation_misses": []},
    ]}


def test_timing_scope_and_adopted_values_do_not_count() -> None:
    before, after = _report(), _report()
    after["results"][0]["seconds"] = 9.0
    after["results"][0]["adoptions"][0].update(value=0x4321, scope="random")
    after["results"][0]["known_deviation_misses"][0]["scope"] = "spec"
    c = compare(before, after)
    assert c.same and c.equal == 2


def test_a_changed_verdict_or_step_is_named() -> None:
    before = _report()
    after = copy.deepcopy(before)
    after["results"][1]["status"] = "diverge"
    after["results"][0]["adoptions"][0]["step"] = 4
    after["results"].append({"build": "7.2", "machine": "q35", "scenario": "c"})
    after["quirks_applied"] = [{"key": "q"}]
    c = compare(before, after)
    assert not c.same
    assert c.differ == ["11.1 q35 a", "11.1 q35 b"] and c.only_after == ["7.2 q35 c"]
    assert c.sections == ["quirks_applied"]


def test_a_schema_2_report_against_an_older_one() -> None:
    """The keys schema version 2 added are not behaviour: the same results
    with and without them are the same; two summaries differ in their
    verdict, not in their timing."""
    before, after = _report(), _report()
    after.update(schema_version=2, command="check",
                 summary={"exit_status": 0, "verdict": "clean", "elapsed_seconds": 3.0})
    for r in after["results"]:
        r["internal_error"] = False
    assert compare(before, after).same
    again = copy.deepcopy(after)
    again["summary"]["elapsed_seconds"] = 9.0
    assert compare(after, again).same
    again["summary"]["verdict"] = "failed"
    again["results"][0]["internal_error"] = True
    c = compare(after, again)
    assert c.sections == ["summary"] and c.differ == ["11.1 q35 a"]


def test_a_schema_3_report_compares_with_a_schema_2_one() -> None:
    """Schema 3's ``known`` (ledger key -> use) is schema 2's lists: the same
    behaviour is the same, a use that differs differs."""
    old = {"schema_version": 2, "builds": [], "results": [
        {"build": "11.1", "machine": "q35", "scenario": "a", "status": "quirk",
         "quirks": ["q.x", "q.y", "q.x"], "stale_quirks": ["q.s"],
         "known_deviation_misses": [{"message": "m", "deviation": "sd.x", "scope": "spec"}],
         "adoptions": [{"step": 3, "what": "RCA", "value": 0x1234, "scope": "random"}]}]}
    use = {"scope": "quirk", "applied": [], "stale": False, "misses": [], "met": False,
           "adopted": []}
    new = {"schema_version": 3, "builds": [], "results": [
        {"build": "11.1", "machine": "q35", "scenario": "a", "status": "quirk", "known": {
            "q.x": {**use, "applied": [5, 9]}, "q.y": {**use, "applied": [7]},
            "q.s": {**use, "stale": True}, "sd.x": {**use, "misses": ["m"]},
            "sd.rca": {**use, "adopted": [{"step": 3, "what": "RCA", "value": 0x9}]}}}]}
    assert compare(old, new).same
    moved = copy.deepcopy(new)
    moved["results"][0]["known"]["q.y"]["applied"] = [11]  # applied after the second q.x
    assert compare(old, moved).differ == ["11.1 q35 a"]
    assert compare(new, copy.deepcopy(new)).same
