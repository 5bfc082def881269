"""``sdqtest check --strict``: each spec deviation of a build, as a finding.

The model runs in its specification-following mode.  A scenario that then
diverges is run again with the specification followed for one deviation at
a time (only those the scenario made the model consult); each deviation
whose spec side alone reproduces a divergence is a finding: the spec rule,
what QEMU does instead, and the reproducer of that divergence.  Divergences
that no single deviation explains are listed as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.check import runner
from harness.model.deviations import Deviation
from harness.model.sd_deviations import sd_deviations
from harness.model.sdhci_deviations import SDHCI_DEVIATIONS
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario

ALL_DEVIATIONS: dict[str, Deviation] = {d.key: d for d in (*sd_deviations, *SDHCI_DEVIATIONS)}


@dataclass
class Finding:
    build: str
    deviation: Deviation
    scenario: str
    step: str
    reproducer: str


@dataclass
class StrictReport:
    findings: list[Finding]
    unexplained: list[runner.Result]
    results: list[runner.Result]


def findings_for(
    build: QemuBuild,
    scenarios: list[Scenario],
    machine: str,
    report_dir: Path,
    progress: Callable[[str], None] | None = None,
) -> StrictReport:
    found: dict[str, Finding] = {}
    unexplained: list[runner.Result] = []
    results: list[runner.Result] = []
    for sc in scenarios:
        if progress:
            progress(f"strict {build.name} {sc.name}")
        full = runner.run(build, sc, machine, strict=True, report_dir=report_dir)
        results.append(full)
        if full.status != runner.DIVERGE:
            continue
        explained = False
        for key in sorted(full.consulted - set(found)):
            if progress:
                progress(f"strict {build.name} {sc.name} {key}")
            one = runner.run(build, sc, machine, strict=frozenset({key}),
                             report_dir=report_dir / "by-deviation")
            if one.status == runner.DIVERGE and one.divergence is not None:
                explained = True
                found[key] = Finding(build.name, ALL_DEVIATIONS[key], sc.name,
                                     one.divergence.step.describe(), one.divergence.trace_file)
        if not explained and not (full.consulted & set(found)):
            unexplained.append(full)
    return StrictReport(list(found.values()), unexplained, results)
