"""The verdict of a check: its exit status and why, from the runs' results.

``0`` clean; ``1`` a divergence, an error or a spec miss; ``3`` QEMU
crashed (and nothing worse); ``4`` everything skipped, or a build that
skipped more than half of its scenarios without ``--allow-skips`` (the skip
policy: :func:`harness.check.runner.skipped_too_much`).  Known differences
met (spec deviations, QEMU bugs, quirks, adoptions) never fail a check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.check import runner
from harness.check.runner import Result

CLEAN, FAILED, CRASHED, SKIPPED = 0, 1, 3, 4


@dataclass(frozen=True)
class Verdict:
    """A check's exit status and the lines that say why (for stderr)."""

    status: int
    why: list[str] = field(default_factory=list)


def judge(results: Sequence[Result], *, allow_skips: bool = False) -> Verdict:
    """The check's verdict on ``results`` under the skip policy."""
    statuses = {r.status for r in results}
    if statuses & {runner.DIVERGE, runner.ERROR, runner.SPEC_MISS}:
        return Verdict(FAILED)
    if runner.CRASH in statuses:
        return Verdict(CRASHED)
    if results and statuses == {runner.SKIP}:
        return Verdict(SKIPPED, ["every scenario was skipped"])
    too_much = runner.skipped_too_much(list(results))
    if too_much and not allow_skips:
        return Verdict(SKIPPED, [f"{line} (--allow-skips accepts that)" for line in too_much])
    return Verdict(CLEAN)
