"""The patched QEMU against the base QEMU, in lockstep: no model in between.

:class:`harness.check.lockstep.LockstepTarget` takes any two Targets; here
both are QEMUs (the base build as the reference side), so a change shows
even where the model has no rule for it.  Both run with the same ``-seed``
(:mod:`harness.review.wrap`), so the RCA QEMU draws at random is the same
draw on both.  A scenario's first differing step is the finding: the
operation, decoded register fields, and both builds' answers.  The
migration group is left out (it needs a migrator per build, which the
model check runs).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.check import parallel, runner, testbench
from harness.check.lockstep import Divergence, LockstepTarget, collapse
from harness.errors import QemuError, QemuGone
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, all_scenarios

SAME, DIFFERS, SKIP, ERROR = "same", "differs", "skipped", "error"
#: Groups the direct comparison does not run (see the module doc).
LEFT_OUT = ("migration",)


@dataclass
class DirectResult:
    """One scenario on base and patched: ``same``, ``differs`` (the first
    differing step), ``skipped`` or ``error``."""

    scenario: str
    machine: str
    status: str
    reason: str = ""
    #: The first differing operation, base's and patched's answers, decoded.
    lines: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    step: int = -1
    kind: str = ""
    #: ``(base, patched)`` trace files that replay the run on each build.
    traces: tuple[str, str] = ("", "")

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "machine": self.machine, "status": self.status,
                "reason": self.reason, "step": self.step, "kind": self.kind,
                "lines": self.lines, "history": self.history[-12:],
                "reproducers": {"base": self.traces[0], "patched": self.traces[1]}}


def sides(text: str) -> str:
    """A lockstep line with its sides named for a review: base, patched."""
    return (text.replace("(model ", "(base ").replace("model ", "base ")
            .replace("QEMU  ", "patched ").replace("QEMU ", "patched "))


def _found(res: DirectResult, d: Divergence, base: QemuTarget, patched: QemuTarget,
           report_dir: Path | None, stem: str) -> None:
    res.status, res.step, res.kind = DIFFERS, d.step.index, d.kind
    res.reason = sides(d.summary().replace("divergence", "first difference", 1))
    res.lines = [sides(x) for x in d.context + d.fields]
    res.history = [sides(h) for h in collapse(d.history)]
    if report_dir is not None:
        d.scenario = res.scenario
        a = runner.write_reproducer(d, base, report_dir, f"{stem}-base")
        b = runner.write_reproducer(d, patched, report_dir, f"{stem}-patched")
        res.traces = (str(a), str(b))


def run_one(base: QemuBuild, patched: QemuBuild, name: str, machine: str,
            report_dir: Path | None = None, pools: tuple[QemuPool, QemuPool] | None = None
            ) -> DirectResult:
    """Scenario ``name`` on both builds at once (base the reference side)."""
    sc = all_scenarios()[name]
    res = DirectResult(name, machine, SAME)
    why = (sc.skip_reason(base.profile, base.profile.has_qtest_accel)
           or sc.skip_reason(patched.profile, patched.profile.has_qtest_accel))
    if why is None and sc.group in LEFT_OUT:
        why = "migration scenarios run in the model check only"
    if why is None and not (base.offers(machine) and patched.offers(machine)):
        why = f"no machine type {machine} on both builds"
    if why:
        res.status, res.reason = SKIP, why
        return res
    qemu_image, fmt = images.ensure(sc.image), images.recipe(sc.image).format
    described = testbench.scenario_machine(sc, machine, qemu_image, fmt)
    pa, pb = pools or (QemuPool(enabled=False), QemuPool(enabled=False))
    a: QemuTarget | None = None
    b: QemuTarget | None = None
    healthy = True
    try:
        a = pa.acquire(base.binary, described, name="base")
        b = pb.acquire(patched.binary, described, name="patched")
        lock = LockstepTarget(a, b, recipe=images.recipe(sc.image))
        sc.fn(lock, Context(base.profile, machine, sc.image, sc.params))
        lock.compare_watched()
        runner.compare_images(lock, runner.image_spans(None, images.raw_twin(sc.image), a, b))
    except Divergence as d:
        assert a is not None and b is not None
        _found(res, d, a, b, report_dir, f"direct-{machine}-{name}".replace("/", "_"))
    except (QemuGone, QemuError) as e:
        healthy = False
        res.status, res.reason = ERROR, f"{type(e).__name__}: {e}"
    except Exception as e:  # a harness bug: say it, keep going
        healthy = False
        res.status, res.reason = ERROR, f"{type(e).__name__}: {e}"
        res.lines = traceback.format_exc().splitlines()[-6:]
    finally:
        for pool, side in ((pa, a), (pb, b)):
            if side is not None:
                pool.release(side, healthy=healthy and res.status != DIFFERS)
    return res


_pools: dict[str, tuple[QemuPool, QemuPool]] = {}


def _worker_run(base: QemuBuild, patched: QemuBuild, name: str, machine: str,
                report_dir: Path | None) -> DirectResult:
    """:func:`run_one` in a worker, on that worker's two pools (one per side:
    both see the same sequence of scenarios, so both reuse alike)."""
    key = f"{base.binary}|{patched.binary}"
    if key not in _pools:
        _pools.clear()
        _pools[key] = (QemuPool(), QemuPool())
    return run_one(base, patched, name, machine, report_dir, _pools[key])


def close_pools() -> None:
    for a, b in _pools.values():
        a.close()
        b.close()
    _pools.clear()


def _run_closing(base: QemuBuild, patched: QemuBuild, names: list[tuple[str, str]],
                 report_dir: Path | None) -> list[DirectResult]:
    """A chunk of scenarios in one worker, its pools closed at the end."""
    try:
        return [_worker_run(base, patched, n, m, report_dir) for n, m in names]
    finally:
        close_pools()


def run_all(base: QemuBuild, patched: QemuBuild, runs: list[tuple[str, str]],
            jobs: int = 1, report_dir: Path | None = None) -> list[DirectResult]:
    """Every ``(scenario, machine)`` of ``runs``, in order, on ``jobs`` workers
    (each a chunk of consecutive runs, reusing its QEMUs)."""
    if not runs:
        return []
    jobs = max(1, min(jobs, len(runs)))
    size = -(-len(runs) // (jobs * 4))
    chunks = [runs[i:i + size] for i in range(0, len(runs), size)]
    out = parallel.map_ordered(_run_closing, [(base, patched, c, report_dir) for c in chunks],
                               jobs)
    return [r for chunk in out for r in chunk]
