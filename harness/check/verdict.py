"""The verdict of a check: its exit status and why, from the runs' results.

``0`` clean; ``1`` a divergence, an error or a spec miss; ``3`` QEMU
crashed (and nothing worse); ``4`` everything skipped, or a build that
skipped more than half of its scenarios without ``--allow-skips`` (the skip
policy: :func:`harness.check.runner.skipped_too_much`).  Known differences
met (spec deviations, QEMU bugs, quirks, adoptions) never fail a check, nor
does a board the build cannot start (``cannot-run``: a ROM, machine type
or device it lacks, in QEMU's words).  ``70``
(:data:`harness.errors.EXIT_INTERNAL`) before all of them: a run ended on an
exception of sdqtest itself, or the check stopped on one; what the other
runs found is reported all the same, but the check's answer is not
QEMU's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.check import runner
from harness.check.runner import Result
from harness.errors import EXIT_INTERNAL

CLEAN, FAILED, CRASHED, SKIPPED, INTERNAL = 0, 1, 3, 4, EXIT_INTERNAL
#: The verdicts' names, as the JSON report's summary gives them.
NAMES = {CLEAN: "clean", FAILED: "failed", CRASHED: "crashed", SKIPPED: "skipped",
         INTERNAL: "internal-error"}


@dataclass(frozen=True)
class Verdict:
    """A check's exit status and the lines that say why (for stderr)."""

    status: int
    why: list[str] = field(default_factory=list)


def judge(results: Sequence[Result], *, allow_skips: bool = False) -> Verdict:
    """The check's verdict on ``results`` under the skip policy."""
    statuses = {r.status for r in results}
    internal = sum(r.internal for r in results)
    if internal:
        return Verdict(INTERNAL, [f"{internal} run{'s' if internal != 1 else ''} ended on an "
                                  "internal error of sdqtest"])
    if statuses & {runner.DIVERGE, runner.ERROR, runner.SPEC_MISS}:
        return Verdict(FAILED)
    if runner.CRASH in statuses:
        return Verdict(CRASHED)
    if results and statuses <= {runner.SKIP, runner.CANNOT_RUN}:
        return Verdict(SKIPPED, ["every scenario was skipped" if runner.SKIP in statuses
                                 else "no run could start on this build (cannot-run)"])
    too_much = runner.skipped_too_much(list(results))
    if too_much and not allow_skips:
        return Verdict(SKIPPED, [f"{line} (--allow-skips accepts that)" for line in too_much])
    return Verdict(CLEAN)
