"""The patched QEMU against the base QEMU, in lockstep: no model in between.

:class:`harness.check.lockstep.LockstepTarget` takes any two Targets; here
both are QEMUs (the base build as the reference side), so a change shows
even where the model has no rule for it.  Both run with the same ``-seed``
(:mod:`harness.review.wrap`), so the RCA QEMU draws at random is the same
draw on both.

A run goes on past a difference (a :class:`DirectScoreboard`, the check's
:class:`~harness.check.scoreboard.Scoreboard` with the review's
``--max-differences``): base takes patched's guest memory where that
differed (a QEMU's registers cannot be set: those are compared as they
come, a value read again is a repeat), and each distinct difference is
kept with its signature, step, decoded lines and a reproducer per build,
that build's qtest trace up to the step.  ``--first-only`` stops at the
first difference, as before.  A QEMU that dies or hangs ends the run with
a ``crash`` difference.  The migration group is left out (it needs a
migrator per build, which the model check runs).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.check import parallel, reproducer, runner, testbench
from harness.check.lockstep import Divergence, LockstepTarget, collapse
from harness.check.runner import ERROR as ERROR
from harness.check.runner import SKIP as SKIP
from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES, Difference, Scoreboard, Stopped
from harness.check.step import Sides, Step
from harness.errors import QemuError, QemuGone
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, Scenario, all_scenarios
from harness.target import Target

#: A direct run's status: the check's words (:mod:`harness.check.runner`)
#: for a skip and an error, the review's own for the two builds' answers.
SAME, DIFFERS = "same", "differs"
#: Groups the direct comparison does not run (see the module doc).
LEFT_OUT = ("migration",)
#: History lines kept per difference (the first difference keeps all).
HISTORY = 12


#: A review's sides: base (the reference) and patched.
BASE_PATCHED = Sides("base", "patched")


@dataclass
class DirectDifference:
    """One distinct difference of a run: the scoreboard's :class:`Difference`
    (its signature, whether it was the run's first, repeats, what base
    took; the divergence's sides base and patched), with the decoded lines,
    the history and the reproducers (``(base, patched)``, each build's
    trace up to the step)."""

    difference: Difference
    lines: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    #: base's and patched's qtest trace lengths at the step
    trace_lens: tuple[int, int] = (0, 0)
    traces: tuple[str, str] = ("", "")

    @property
    def signature(self) -> str:
        return self.difference.signature

    @property
    def first(self) -> bool:
        return self.difference.first

    @property
    def step(self) -> int:
        return self.difference.divergence.step.index

    @property
    def kind(self) -> str:
        return self.difference.divergence.kind

    @property
    def run_steps(self) -> int:
        """Steps the whole run took (the shortest example is the shortest run)."""
        return self.difference.run_steps

    @property
    def reason(self) -> str:
        d = self.difference.divergence
        return d.fields[0] if d.kind == "crash" else d.summary("difference", where=False)

    @property
    def repeats(self) -> int:
        """Times it was seen again later in the run (not a new finding)."""
        return self.difference.repeats

    @property
    def harm(self) -> str:
        return self.difference.harm

    def to_json(self) -> dict[str, Any]:
        diff = self.difference
        return {"signature": self.signature, "harm": self.harm, "first": self.first,
                "step": self.step, "kind": self.kind, "reason": self.reason,
                "lines": self.lines, "repeats": diff.repeats, "adopted": diff.adopted,
                "run_steps": self.run_steps,
                "reproducers": {"base": self.traces[0], "patched": self.traces[1]}}


@dataclass
class DirectResult:
    """One scenario on base and patched: ``same``, ``differs`` (the first
    differing step here, every distinct difference in :attr:`differences`),
    ``skipped`` or ``error``."""

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
    differences: list[DirectDifference] = field(default_factory=list)
    #: why the run stopped recording early (the limit), if it did
    stopped: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "machine": self.machine, "status": self.status,
                "reason": self.reason, "step": self.step, "kind": self.kind,
                "lines": self.lines, "history": self.history[-12:],
                "reproducers": {"base": self.traces[0], "patched": self.traces[1]},
                "differences": [d.to_json() for d in self.differences],
                "stopped": self.stopped}


class DirectScoreboard(Scoreboard):
    """A direct comparison's scoreboard: base (the reference) takes
    patched's guest memory where it differed, and each new difference
    notes base's trace length too (the lockstep gives patched's)."""

    def __init__(self, limit: int, base: Target) -> None:
        super().__init__(limit, self._adopt, BASE_PATCHED)
        self.base = base
        self.base_lens: list[int] = []

    def _adopt(self, kind: str, step: Step) -> list[str]:
        if step.op == "mem_read" and isinstance(step.qemu, bytes):
            self.base.mem_write(int(step.args[0]), step.qemu)
            return [f"guest memory {int(step.args[0]):#x}+{len(step.qemu):#x}"]
        return []

    def record(self, d: Any, trace_len: int) -> None:
        n, at = len(self.differences), getattr(self.base, "trace_len", 0)
        try:
            super().record(d, trace_len)
        finally:
            if len(self.differences) > n:
                self.base_lens.append(at)


def _difference(diff: Difference, lens: tuple[int, int]) -> DirectDifference:
    """A difference of the run, its lines decoded (the first one's history
    too: the operations that led to it)."""
    d = diff.divergence
    keep = 400 if diff.first else 0
    return DirectDifference(diff, d.context + d.fields,
                            collapse(d.history, d.sides)[-keep:] if keep else [], lens)


def _gone(e: Exception, a: Target, b: Target) -> str:
    """``crash:base``, ``crash:patched`` (its process ended) or ``hang``."""
    for name, t in (("base", a), ("patched", b)):
        proc = getattr(getattr(t, "session", None), "proc", None)
        if proc is not None and proc.poll() is not None:
            return f"crash:{name}"
    return "hang" if "hung" in str(e) or "timeout" in type(e).__name__.lower() else "crash:?"


def _ended(res: DirectResult, lock: LockstepTarget, e: Exception) -> Divergence:
    """A run a QEMU or the harness ended: ``error``, with a difference
    naming it (its reproducers the whole traces)."""
    res.status, res.reason = ERROR, f"{type(e).__name__}: {e}"
    what = _gone(e, lock.model, lock.qemu) if isinstance(e, QemuGone) else \
        f"error:{type(e).__name__}"
    hist = lock.history()
    step = hist[-1] if hist else Step(lock.count, "launch", (), None, None, False, False)
    command = getattr(getattr(lock.tracker, "command", None), "name", "") or "no command"
    return Divergence(step, "crash", hist[:-1], [res.reason],
                      signature=f"{what} | {command} | -", sides=BASE_PATCHED)


def _settle(res: DirectResult, lock: LockstepTarget, board: DirectScoreboard,
            raised: Divergence | None, report_dir: Path | None, stem: str) -> None:
    """Every difference of the run into ``res`` (the first one also in its
    own fields, as a first-only run has it), with reproducers."""
    a, b = lock.model, lock.qemu
    found = [_difference(diff, (board.base_lens[i], diff.trace_len))
             for i, diff in enumerate(board.differences)]
    if raised is not None:  # first-only, or a QEMU or the harness ended the run
        lens = (getattr(a, "trace_len", 0), getattr(b, "trace_len", 0))
        found.append(_difference(Difference(raised, raised.signature, not found), lens))
    for i, dd in enumerate(found):
        d = dd.difference.divergence
        dd.difference.run_steps = lock.count
        if report_dir is not None and isinstance(a, QemuTarget) and isinstance(b, QemuTarget):
            d.scenario = res.scenario
            s = stem if i == 0 else f"{stem}-d{i + 1}"
            dd.traces = (str(reproducer.write_reproducer(d, a, report_dir, f"{s}-base",
                                                         upto=dd.trace_lens[0])),
                         str(reproducer.write_reproducer(d, b, report_dir, f"{s}-patched",
                                                         upto=dd.trace_lens[1])))
    res.differences = found
    if not found:
        return
    first = found[0]
    if res.status != ERROR:
        res.status = DIFFERS
        res.reason = first.reason.replace("difference", "first difference", 1) + (
            f" (+{len(found) - 1} more distinct differences)" if len(found) > 1 else "")
    res.step, res.kind, res.lines, res.history = first.step, first.kind, first.lines, \
        first.history
    res.traces = first.traces


def compare(res: DirectResult, lock: LockstepTarget, sc: Scenario, ctx: Context,
            spans: Callable[[], list[tuple[int, int]]] = list,
            report_dir: Path | None = None) -> bool:
    """Scenario ``sc`` through ``lock`` (base, the reference, against
    patched; its scoreboard a :class:`DirectScoreboard`), then the card
    images over ``spans()``; the differences into ``res``.  Whether both
    sides are fit for reuse."""
    board = lock.scoreboard
    assert isinstance(board, DirectScoreboard)
    raised: Divergence | None = None
    healthy = True
    try:
        sc.fn(lock, ctx)
        lock.compare_watched()
        runner.compare_images(lock, spans())
    except Divergence as d:
        raised = d
    except Stopped as e:
        res.stopped = str(e)
    except Exception as e:  # a QEMU gone or refusing, or a harness bug: say it, keep going
        healthy = False
        raised = _ended(res, lock, e)
        if not isinstance(e, QemuError):
            raised.fields += traceback.format_exc().splitlines()[-6:]
    _settle(res, lock, board, raised, report_dir,
            f"direct-{res.machine}-{res.scenario}".replace("/", "_"))
    return healthy and not res.differences


def run_one(base: QemuBuild, patched: QemuBuild, name: str, machine: str,
            report_dir: Path | None = None, pools: tuple[QemuPool, QemuPool] | None = None,
            limit: int = DEFAULT_MAX_DIFFERENCES) -> DirectResult:
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
    pa, pb = pools or (QemuPool(enabled=False), QemuPool(enabled=False))
    bench = testbench.Testbench(
        testbench.RunSpec(replace(patched, name="patched"), sc, machine), quirks=(), pool=pb,
        reference=replace(base, name="base"), reference_pool=pa,
        scoreboard=lambda ref: DirectScoreboard(limit, ref))
    healthy = False
    try:
        lock = bench.start(False)
        healthy = compare(res, lock, sc, Context(base.profile, machine, sc.image, sc.params),
                          lambda: runner.image_spans(None, bench.model_image, *(
                              q for q in (bench.base, bench.live) if q is not None)),
                          report_dir)
    except (QemuGone, QemuError) as e:  # one of them would not start
        res.status, res.reason = ERROR, f"{type(e).__name__}: {e}"
    finally:
        bench.close(healthy)
    return res


_pools: dict[str, tuple[QemuPool, QemuPool]] = {}


def _worker_run(base: QemuBuild, patched: QemuBuild, name: str, machine: str,
                report_dir: Path | None, limit: int) -> DirectResult:
    """:func:`run_one` in a worker, on that worker's two pools (one per side:
    both see the same sequence of scenarios, so both reuse alike)."""
    key = f"{base.binary}|{patched.binary}"
    if key not in _pools:
        _pools.clear()
        _pools[key] = (QemuPool(), QemuPool())
    return run_one(base, patched, name, machine, report_dir, _pools[key], limit)


def close_pools() -> None:
    for a, b in _pools.values():
        a.close()
        b.close()
    _pools.clear()


def _run_closing(base: QemuBuild, patched: QemuBuild, names: list[tuple[str, str]],
                 report_dir: Path | None, limit: int) -> list[DirectResult]:
    """A chunk of scenarios in one worker, its pools closed at the end."""
    try:
        return [_worker_run(base, patched, n, m, report_dir, limit) for n, m in names]
    finally:
        close_pools()


def run_all(base: QemuBuild, patched: QemuBuild, runs: list[tuple[str, str]],
            jobs: int = 1, report_dir: Path | None = None,
            limit: int = DEFAULT_MAX_DIFFERENCES) -> list[DirectResult]:
    """Every ``(scenario, machine)`` of ``runs``, in order, on ``jobs`` workers
    (each a chunk of consecutive runs, reusing its QEMUs), each run up to
    ``limit`` distinct differences."""
    if not runs:
        return []
    jobs = max(1, min(jobs, len(runs)))
    size = -(-len(runs) // (jobs * 4))
    chunks = [runs[i:i + size] for i in range(0, len(runs), size)]
    out = parallel.map_ordered(
        _run_closing, [(base, patched, c, report_dir, limit) for c in chunks], jobs)
    return [r for chunk in out for r in chunk]
