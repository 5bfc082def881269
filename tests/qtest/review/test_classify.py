"""Classification of a scenario from both model checks and the direct comparison."""

from __future__ import annotations

from harness.review import classify as C
from harness.review.direct import DIFFERS, SAME, SKIP, DirectResult

AGREE = C.ModelEvidence("agree")
DIVERGE = C.ModelEvidence("diverge", "divergence at step 7")
SKIPPED = C.ModelEvidence("skipped", "no such property")


def d(status: str) -> DirectResult:
    return DirectResult("sc", "q35", status, "first difference at step 9")


def test_patched_diverges_where_base_agrees_is_changed_and_says_the_model_sides_with_base(
) -> None:
    row = C.classify_one("sc@q35", AGREE, DIVERGE, d(DIFFERS))
    assert row.category == C.CHANGED
    assert "agrees with base" in row.note


def test_a_difference_the_model_has_no_rule_for_is_still_changed() -> None:
    row = C.classify_one("sc@q35", AGREE, AGREE, d(DIFFERS))
    assert row.category == C.CHANGED
    assert "no rule" in row.note


def test_a_difference_a_new_default_explains_is_intended_not_changed() -> None:
    row = C.classify_one("sc@q35", AGREE, AGREE, d(DIFFERS), "sd-card x=on")
    assert row.category == C.INTENDED
    assert row.note == "sd-card x=on"


def test_base_diverging_and_patched_agreeing_is_fixed() -> None:
    assert C.classify_one("k", DIVERGE, AGREE, d(SAME)).category == C.FIXED


def test_both_diverging_alike_is_the_models_problem() -> None:
    row = C.classify_one("k", DIVERGE, DIVERGE, d(SAME))
    assert row.category == C.BOTH
    assert "model's problem" in row.note


def test_a_model_verdict_change_without_a_difference_is_unstable_not_changed() -> None:
    assert C.classify_one("k", AGREE, DIVERGE, d(SAME)).category == C.UNSTABLE


def test_without_a_direct_comparison_the_model_verdict_decides() -> None:
    assert C.classify_one("k", AGREE, DIVERGE, None).category == C.CHANGED
    assert C.classify_one("k", AGREE, AGREE, None).category == C.SAME


def test_skips_and_sameness() -> None:
    assert C.classify_one("k", SKIPPED, SKIPPED, d(SKIP)).category == C.SKIPPED
    assert C.classify_one("k", AGREE, AGREE, d(SAME)).category == C.SAME


def test_classify_keeps_order_and_counts() -> None:
    rows = C.classify({"a": AGREE, "b": DIVERGE}, {"a": DIVERGE, "b": DIVERGE},
                      {"a": d(DIFFERS), "b": d(SAME)})
    assert [(r.key, r.category) for r in rows] == [("a", C.CHANGED), ("b", C.BOTH)]
    n = C.counts(rows)
    assert n[C.CHANGED] == 1 and n[C.BOTH] == 1 and n[C.SAME] == 0


def test_a_scenario_the_direct_comparison_left_out_is_judged_by_the_model() -> None:
    assert C.classify_one("k", AGREE, DIVERGE, d(SKIP)).category == C.CHANGED
