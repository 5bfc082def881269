"""``sdqtest check --strict``: each spec deviation of a build, as a finding.

Each scenario runs on QEMU once, with the model following QEMU, and QEMU's
side of that run is recorded (:mod:`harness.check.recording`): it gives the
non-strict verdict.  The model then runs against the recording in its
specification-following mode and, when that diverges at step N, once more
for each deviation the strict run consulted up to N, the specification
followed for that one alone, stopping after N.  A deviation is a finding of
a scenario when its run diverges at a step where the non-strict run still
agrees.  The deviations found then follow QEMU and the strict run is
repeated, to find the scenario's next divergence ("peeling"), until it
agrees.  A strict divergence that no single deviation reproduces at its
step, or where the non-strict model diverges too (a model bug, not a spec
deviation), is unexplained.

Each retry stops at the divergence it has to explain and sees only the
keys consulted before it, which keeps the strict check near twice the
normal one: QEMU runs once per scenario, and the model replays are short.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.check import parallel, runner
from harness.check.recording import Recording
from harness.ledger import KnownDifference, entry, toggles
from harness.model.deviations import Strictness
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario

#: Every switch of the model (the ledger's ``toggle`` entries).
SWITCHES: frozenset[str] = frozenset(d.key for d in toggles("sd", "sdhci", "emmc", "s3c"))


@dataclass
class SpecFinding:
    """A deviation shown by a scenario, first seen at ``step``."""

    build: str
    deviation: KnownDifference
    scenario: str
    step: str
    reproducer: str
    #: Every scenario whose run showed it, the first one included.
    scenarios: list[str] = field(default_factory=list)


@dataclass
class Unexplained:
    """A strict divergence no single deviation accounts for, and why."""

    result: runner.Result
    why: str


@dataclass
class StrictReport:
    findings: list[SpecFinding]
    unexplained: list[Unexplained]
    results: list[runner.Result]


def _step(r: runner.Result) -> int | None:
    """The step ``r`` diverged at, or None when it did not diverge."""
    if r.status == runner.DIVERGE and r.divergence is not None:
        return r.divergence.step.index
    return None


@dataclass
class _ScenarioOutcome:
    """One scenario's part of a strict report: its first strict run, the
    deviations its retries credited (key, step, reproducer), in order, and
    its unexplained divergences."""

    result: runner.Result
    credits: list[tuple[str, str, str]] = field(default_factory=list)
    unexplained: list[Unexplained] = field(default_factory=list)


def findings_for(
    build: QemuBuild,
    scenarios: list[Scenario],
    machine: str,
    report_dir: Path,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
) -> StrictReport:
    """Run ``scenarios`` once each on ``build``, then every strict variant
    of the model against the recording; findings and unexplained divergences.
    Scenarios run on ``jobs`` forked workers; the report is in their order."""
    items = [(build, sc, machine, report_dir) for sc in scenarios]
    try:
        outcomes = parallel.map_ordered(
            _scenario, items, jobs,
            progress=(lambda done, it: progress(
                f"strict {build.name} [{done}/{len(items)}] "
                f"{it[1].name}")) if progress else None)
    finally:
        parallel.close_worker_pool()  # this process's; a worker's closes as it exits
    found: dict[str, SpecFinding] = {}
    unexplained: list[Unexplained] = []
    for sc, out in zip(scenarios, outcomes, strict=True):
        for key, step, trace in out.credits:
            if key in found:
                if sc.name not in found[key].scenarios:
                    found[key].scenarios.append(sc.name)
            else:
                found[key] = SpecFinding(build.name, entry(key), sc.name, step, trace,
                                     [sc.name])
        unexplained += out.unexplained
    return StrictReport(list(found.values()), unexplained, [o.result for o in outcomes])


def _scenario(build: QemuBuild, sc: Scenario, machine: str,
              report_dir: Path) -> _ScenarioOutcome:
    """One scenario: QEMU once (recorded), then the strict model peeled."""
    rec = Recording()
    try:
        base = runner.run(build, sc, machine, runner.RunOptions(
            strict=False, record=rec, report_dir=report_dir / "non-strict",
            pool=parallel.worker_pool()))
        if base.status in (runner.SKIP, runner.CRASH, runner.ERROR):
            return _ScenarioOutcome(base)
        base_at = _step(base)
        out: _ScenarioOutcome | None = None
        # Peel: the strict model's first divergence is explained by the
        # deviations whose run alone diverges at that very step; those
        # then follow QEMU, and the next divergence is looked for.
        explained_keys: set[str] = set()
        while True:
            keys: Strictness = (SWITCHES - explained_keys
                                if explained_keys else True)
            full = runner.run(build, sc, machine, runner.RunOptions(
                strict=keys, replay=rec, report_dir=report_dir))
            if out is None:
                out = _ScenarioOutcome(full)
            at = _step(full)
            if at is None:
                break
            if base_at is not None and base_at <= at:
                out.unexplained.append(Unexplained(
                    full, f"the non-strict model diverges too, at step {base_at}"))
                break
            credited: set[str] = set()
            explains = False
            for key in sorted(full.consulted() - explained_keys):
                # a key consulted only after ``at`` cannot explain it; the
                # retry stops there (later divergences are the next round's)
                one = runner.run(build, sc, machine,
                                 runner.RunOptions(strict=frozenset({key}), replay=rec,
                                                   report_dir=report_dir / "by-deviation",
                                                   stop_after=at))
                one_at = _step(one)
                if one_at is None or one.divergence is None or (
                        base_at is not None and base_at <= one_at):
                    continue
                out.credits.append((key, one.divergence.step.describe(),
                                    one.divergence.trace_file))
                credited.add(key)
                explains |= one_at == at
            if not explains:
                out.unexplained.append(Unexplained(
                    full, f"no single deviation reproduces it at step {at}"))
                break
            explained_keys |= credited
        return out
    finally:
        rec.cleanup()
