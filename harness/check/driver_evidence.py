"""Measure which ledger entries the recorded real drivers meet (``sdqtest drivers evidence``).

Per build, the drivers group runs twice:

* as in the default check: each phase's note (:func:`harness.scenarios.drivers.
  evidence_note`) names the model's switches consulted and the quirks that
  explained a difference so far; an adopted value (the RCA) is a step of the
  run.  A switch consulted is *reached*; a quirk or an adoption is *shown*;
* as ``check --strict`` does (:func:`harness.check.strict.findings_for`): each
  deviation the model following the specification finds is *shown*, at the
  step that places it in a phase.

The uses are merged over the builds into ``harness/ledger/driver_evidence.json``
(:mod:`harness.ledger.drivers` reads it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.check import session, strict
from harness.check.runner import Result
from harness.hwdefs.boards import by_name, run_key
from harness.ledger import adopting
from harness.qemu.builds import QemuBuild
from harness.scenarios import drivers
from harness.scenarios.registry import REGISTRY, Scenario

Phases = list[tuple[str, int, int]]


@dataclass
class RecordingUse:
    """What is known of one entry met by one recording: phases, how, builds."""

    phases: set[str] = field(default_factory=set)
    shown: bool = False
    builds: set[str] = field(default_factory=set)


#: key -> recording -> use
Evidence = dict[str, dict[str, RecordingUse]]


def _phase_of(phases: Phases, step: int) -> str:
    for name, start, end in phases:
        if start <= step < end:
            return name
    return phases[-1][0] if phases else "?"


def _note(ev: Evidence, key: str, rec: str, phase: str, build: str, shown: bool) -> None:
    use = ev.setdefault(key, {}).setdefault(rec, RecordingUse())
    use.phases.add(phase)
    use.builds.add(build)
    use.shown = use.shown or shown


def from_result(ev: Evidence, r: Result, build: str) -> Phases:
    """The uses one default-mode run shows; the steps of its phases."""
    phases: Phases = []
    seen_c: set[str] = set()
    seen_q: set[str] = set()
    for n in r.notes:
        parsed = drivers.parse_note(n)
        if parsed is None:
            continue
        name, start, end, consulted, quirks = parsed
        phases.append((name, start, end))
        for k in set(consulted) - seen_c:
            _note(ev, k, r.scenario, name, build, False)
        for k in set(quirks) - seen_q:
            _note(ev, k, r.scenario, name, build, True)
        seen_c |= set(consulted)
        seen_q |= set(quirks)
    for step, what, _value in r.adoptions():
        _note(ev, adopting(what).key, r.scenario, _phase_of(phases, step), build, True)
    return phases


def measure(builds: list[QemuBuild], arm_builds: list[QemuBuild], report_dir: Path,
            progress: Callable[[str], None] | None = None) -> Evidence:
    """Both runs of the drivers group on each build, merged: the PC recordings on
    ``builds``, the board recordings on their boards with ``arm_builds``."""
    ev: Evidence = {}
    scs = [sc for sc in REGISTRY.values() if sc.group == drivers.GROUP]
    boards = sorted({str(sc.params["board"]) for sc in scs if sc.params.get("board")})
    for b in builds:
        req = session.CheckRequest(qemu=(b.name,), groups=(drivers.GROUP,), no_boards=True,
                                   report_dir=report_dir, jobs=1)
        _measure(ev, b, req, [sc for sc in scs if not sc.params.get("board")], "q35",
                 report_dir, progress)
    for b in arm_builds if boards else []:
        for name in boards:
            req = session.CheckRequest(qemu=(b.name,), groups=(drivers.GROUP,),
                                       boards=(name,), report_dir=report_dir, jobs=1)
            mine = [sc for sc in scs if sc.params.get("board") == name]
            _measure(ev, b, req, mine, run_key(by_name(name)), report_dir, progress)
    return ev


def _measure(ev: Evidence, b: QemuBuild, req: session.CheckRequest, scs: list[Scenario],
             machine: str, report_dir: Path, progress: Callable[[str], None] | None) -> None:
    out = session.run(session.plan(req), progress or (lambda _s: None))
    steps = {r.scenario: from_result(ev, r, b.name) for r in out.results
             if r.scenario in {sc.name for sc in scs}}
    rep = strict.findings_for(b, scs, machine, report_dir, progress=progress)
    for f in rep.findings:
        m = re.search(r"#(\d+)", f.step)
        phase = _phase_of(steps.get(f.scenario, []), int(m.group(1)) if m else -1)
        _note(ev, f.deviation.key, f.scenario, phase, b.name, True)


def to_json(ev: Evidence, builds: list[QemuBuild]) -> dict[str, Any]:
    """The evidence file's content: each entry's uses, phases in recording order."""
    order = {rec["name"]: [p["name"] for p in rec["phases"]] for rec in drivers.recordings()}
    entries: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(ev):
        entries[key] = [{"recording": rec,
                         "phases": sorted(u.phases, key=lambda p: order.get(rec, []).index(p)
                                          if p in order.get(rec, []) else 99),
                         "how": "shown" if u.shown else "reached",
                         "builds": sorted(u.builds, key=_version_key)}
                        for rec, u in sorted(ev[key].items())]
    return {"measured_at": time.strftime("%Y-%m-%d", time.gmtime()),
            "builds": {b.name: b.version for b in builds}, "entries": entries}


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", name))
