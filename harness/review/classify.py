"""One verdict per scenario, from the model check of both builds and the
direct comparison of the two.

The direct comparison (QEMU against QEMU) says whether the patch changed
what the guest sees; the model check of each build says who the model
agrees with.  Together:

* ``changed``: base and patched differ (the direct comparison found a step)
  and no new property's default explains it -- what a reviewer must look at;
  the model's verdicts say whether it agrees with base (a regression, as far
  as the model knows), with neither, or has no rule for it;
* ``intended``: they differ, and with the new property set to the value
  that behaves as base they do not (:mod:`harness.review.props`);
* ``fixed``: base diverged from the model, patched agrees;
* ``both diverge``: both builds diverge from the model and the direct
  comparison finds them equal -- the model's problem, not the patch's;
* ``unstable``: the model's verdict changed but the builds do not differ;
* ``same``: nothing differs; ``skipped``: either side skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.review.direct import DIFFERS, ERROR, DirectResult

CHANGED, INTENDED, FIXED, BOTH, UNSTABLE, SAME, SKIPPED = (
    "changed", "intended", "fixed", "both diverge", "unstable", "same", "skipped")
#: Report order: what needs a reviewer first.
ORDER = (CHANGED, UNSTABLE, INTENDED, FIXED, BOTH, SKIPPED, SAME)
#: Model check statuses that are a verdict against the build.
BAD = ("diverge", "spec-miss", "crash", "error")
OK = ("agree", "quirk")


@dataclass(frozen=True)
class ModelEvidence:
    """A model check result as classification needs it (status, reason),
    and what differed from the model (``what | command`` of each distinct
    difference's signature: which findings the model takes a side on)."""

    status: str
    reason: str = ""
    whats: tuple[str, ...] = ()


@dataclass
class ReviewRow:
    """One scenario on one machine type: its class and the evidence."""

    key: str
    category: str
    base: ModelEvidence | None
    patched: ModelEvidence | None
    direct: DirectResult | None
    #: what the model says about a change, or which property explains it
    note: str = ""
    #: the patch that introduced the change (``--each``), as the report names it
    patch: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.key, "category": self.category, "note": self.note,
                "patch": self.patch,
                "model": {"base": self.base.status if self.base else None,
                          "patched": self.patched.status if self.patched else None,
                          "patched_reason": self.patched.reason if self.patched else ""},
                "direct": self.direct.to_json() if self.direct else None}


def _model_note(base: ModelEvidence | None, patched: ModelEvidence | None) -> str:
    b = base is not None and base.status in OK
    p = patched is not None and patched.status in OK
    if b and not p:
        return "the model agrees with base: patched diverges from it"
    if p and not b:
        return "the model agrees with patched (base diverged from it)"
    if b and p:
        return "the model has no rule for it: it agrees with both"
    return "the model agrees with neither"


def classify_one(key: str, base: ModelEvidence | None, patched: ModelEvidence | None,
                 direct: DirectResult | None, explained_by: str = "") -> ReviewRow:
    """The class of one scenario (see the module doc)."""
    if direct is not None and direct.status == "skipped" and not any(
            v is not None and v.status == "skipped" for v in (base, patched)):
        direct = None  # not compared directly (a migration scenario): the model's word only
    differs = direct is not None and direct.status in (DIFFERS, ERROR)
    skipped = any(v is not None and v.status == "skipped" for v in (base, patched)) and \
        (direct is None or direct.status == "skipped")
    if differs and explained_by:
        return ReviewRow(key, INTENDED, base, patched, direct, explained_by)
    if differs:
        return ReviewRow(key, CHANGED, base, patched, direct, _model_note(base, patched))
    if skipped:
        return ReviewRow(key, SKIPPED, base, patched, direct)
    b_bad = base is not None and base.status in BAD
    p_bad = patched is not None and patched.status in BAD
    if b_bad and not p_bad and patched is not None:
        return ReviewRow(key, FIXED, base, patched, direct)
    if b_bad and p_bad:
        return ReviewRow(key, BOTH, base, patched, direct, "the model's problem, not the patch's")
    if p_bad and direct is not None:
        return ReviewRow(key, UNSTABLE, base, patched, direct,
                   "the model's verdict changed, but base and patched answer alike")
    if p_bad:  # no direct comparison (a migration scenario): the model's word only
        return ReviewRow(key, CHANGED, base, patched, direct, _model_note(base, patched))
    return ReviewRow(key, SAME, base, patched, direct)


def classify(base: Mapping[str, ModelEvidence], patched: Mapping[str, ModelEvidence],
             direct: Mapping[str, DirectResult],
             explained: Mapping[str, str] | None = None) -> list[ReviewRow]:
    """Every scenario key of any input, in the order first seen, classified."""
    keys = list(dict.fromkeys([*base, *patched, *direct]))
    ex = explained or {}
    return [classify_one(k, base.get(k), patched.get(k), direct.get(k), ex.get(k, ""))
            for k in keys]


def counts(rows: list[ReviewRow]) -> dict[str, int]:
    out = {c: 0 for c in ORDER}
    for r in rows:
        out[r.category] += 1
    return out
