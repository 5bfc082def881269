"""Run scenarios on a QEMU build and on the model mirroring it, in lockstep."""

from __future__ import annotations

import bisect
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from harness import images
from harness.check import known
from harness.check.known import Use
from harness.check.lockstep import Divergence, LockstepTarget, ModelStopped, StopRun
from harness.check.optimistic import Fallback, OptimisticLockstep
from harness.check.quirks import QUIRKS, QuirkSet, bound_to_scenario
from harness.check.recording import Recording
from harness.check.reproducer import write_reproducer
from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES as DEFAULT_MAX_DIFFERENCES
from harness.check.scoreboard import Difference, Stopped
from harness.check.step import Step
from harness.check.testbench import QemuSide as QemuSide
from harness.check.testbench import RunSpec, Testbench
from harness.check.testbench import UserImage as UserImage
from harness.errors import QemuError, QemuGone
from harness.hwdefs import sdhci
from harness.images import merge_extents
from harness.ledger import LEDGER, KnownDifference, adopting
from harness.machine import Machine
from harness.model.deviations import Strictness
from harness.model.target import ModelTarget
from harness.profile import DEVICE_ABSENT
from harness.qemu import sanitizer
from harness.qemu.builds import QemuBuild
from harness.qemu.cannot_run import lacks
from harness.qemu.pool import QemuPool
from harness.qemu.session import QemuLaunchError
from harness.qemu.target import QemuTarget
from harness.scenarios import Context, Miss, Scenario

#: Most card bytes compared at the end of a scenario.  Only a huge
#: ``--image`` card reaches it; what is left is named in the result.
IMAGE_COMPARE_LIMIT = 1 << 30
_CHUNK = 1 << 20

AGREE, DIVERGE, QUIRK, SKIP, CRASH, ERROR, SPEC_MISS = (
    "agree", "diverge", "quirk", "skipped", "crash", "error", "spec-miss")
#: The build cannot start the run's machine: a ROM, machine type or device
#: it lacks, in QEMU's words (:mod:`harness.qemu.cannot_run`); counted apart,
#: never unexplained.
CANNOT_RUN = "cannot-run"

#: Lockstep modes (:func:`run`'s ``lockstep``): step by step, or optimistic
#: (:mod:`harness.check.optimistic`); a fallback is an optimistic run that
#: was run again step by step.
STEP, OPTIMISTIC, FALLBACK, RESYNC = "step", "optimistic", "fallback", "resync"
#: Optimistic attempts of one run that goes on past differences: each
#: after the first syncs at one more step where the last one differed;
#: past these, the run goes step by step.
RESYNC_ATTEMPTS = 3
LOCKSTEP_MODES = (OPTIMISTIC, STEP)
#: A command whose answer shows what QEMU's card keeps across
#: ``system_reset`` (``sd_reset`` leaves it; :mod:`harness.fuzz.residue`),
#: and the ledger entry that says so: ACMD22 sends ``blk_written``, the
#: count of the last write command, which a reused process has from the
#: scenario before (PLS 4.3.9; a fresh launch has 0).
RESET_RESIDUE = {"ACMD22 ": "sd.acmd22-count-survives-reset"}


@dataclass
class Result:
    build: str
    scenario: str
    group: str
    machine: str
    status: str
    reason: str = ""
    divergence: Divergence | None = None
    #: Ledger key -> how the run met that known difference (quirk applied,
    #: stale quirk, switch consulted, misses it explains, values adopted,
    #: met outside the lockstep: :mod:`harness.check.known`), in the order met.
    known: dict[str, Use] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0
    #: Recipe or spec expectations QEMU did not meet, no listed deviation
    #: explaining them: each makes an agreeing run a ``spec-miss``.
    spec_misses: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: What of the card image was not compared (a huge card), if anything.
    not_compared: str = ""
    #: How the lockstep ran: ``step`` (one round trip per operation),
    #: ``optimistic`` (:mod:`harness.check.optimistic`) or ``fallback``
    #: (optimistic, abandoned at a difference, then run step by step), and
    #: for a fallback why; not in the JSON (the verdict is the same).
    #: ``resync``: optimistic again, one round trip at each step where an
    #: earlier attempt differed (a run that went on past differences).
    lockstep: str = "step"
    fallback: str = ""
    #: The step an abandoned optimistic attempt differed at, if one did, and
    #: the register read whose value differed there, if it was one.
    fallback_at: int | None = None
    fallback_read: tuple[int, int] | None = None
    #: Every lockstep step and QEMU's qtest trace, when ``run(keep=True)``
    #: (the reuse equivalence test compares them); not in the JSON.
    history: list[Step] | None = None
    trace: list[str] | None = None
    #: Every distinct difference of the run, the first one first (that one
    #: is :attr:`divergence`); empty when it agreed.  A run that went on
    #: past its first difference (``max_differences`` above 1) has the rest.
    differences: list[Difference] = field(default_factory=list)
    #: Why the run stopped recording differences early, if it did.
    stopped: str = ""
    #: The run's QEMU was a reused process (:meth:`QemuTarget.reuse`); not in
    #: the JSON.
    reused: bool = False
    #: The run ended on an exception of sdqtest itself (a harness or model
    #: bug, status ``error``): its traceback is the first of :attr:`notes`,
    #: and the check's exit status is 70, never a QEMU verdict.
    internal: bool = False

    @property
    def ok(self) -> bool:
        return self.status in (AGREE, QUIRK, SKIP, CANNOT_RUN)

    def use(self, d: KnownDifference) -> Use:
        """How the run met ``d`` (made empty the first time)."""
        return known.use(self.known, d)

    def quirks(self) -> list[KnownDifference]:
        """The quirks the lockstep applied."""
        return [u.entry for u in self.known.values() if u.applied]

    def stale(self) -> list[KnownDifference]:
        """The quirks bound to the scenario that the run never met."""
        return [u.entry for u in self.known.values() if u.stale]

    def consulted(self) -> set[str]:
        """Keys of the model's switches the run consulted."""
        return {k for k, u in self.known.items() if u.consulted}

    def known_misses(self) -> list[tuple[str, str]]:
        """``(message, key)`` of each miss a consulted switch explains."""
        got = sorted((i, m, k) for k, u in self.known.items() for i, m in u.misses)
        return [(m, k) for _, m, k in got]

    def adoptions(self) -> list[tuple[int, str, int]]:
        """``(step, what, value)`` of each value the model adopted, by step."""
        return sorted((a for u in self.known.values() for a in u.adopted), key=lambda a: a[0])

    def known_met(self) -> list[str]:
        """Ledger keys of every known difference the run showed: the quirks
        applied, the misses a switch explains, the values adopted, and those
        met outside the lockstep; each once, in that order."""
        us = self.known.values()
        keys = [u.entry.key for u in us if u.applied] + [u.entry.key for u in us if u.misses]
        keys += [adopting(w).key for _, w, _ in self.adoptions()]
        return list(dict.fromkeys(keys + [u.entry.key for u in us if u.met]))

    def to_json(self) -> dict[str, Any]:
        return {
            "build": self.build,
            "scenario": self.scenario,
            "group": self.group,
            "machine": self.machine,
            "status": self.status,
            "reason": self.reason,
            "divergence": self.divergence.to_json() if self.divergence else None,
            "differences": [d.to_json() for d in self.differences],
            "stopped": self.stopped,
            "known": {k: u.to_json() for k, u in self.known.items() if u.shown},
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "spec_misses": self.spec_misses,
            "not_compared": self.not_compared,
            "internal_error": self.internal,
        }


def image_spans(model: ModelTarget | None, source: Path,
                *qemus: QemuSide) -> list[tuple[int, int]]:
    """Where two cards may differ: every extent the model (if one is a side)
    wrote, erased or filled, wherever it lies, and every extent where the
    source image or a QEMU's copy of it holds data (card offsets, for a
    container too)."""
    spans = (model.image_touched() if model is not None else []) + images.data_extents(source)
    for qemu in qemus:
        if qemu.image is not None:
            spans += images.guest_extents(qemu.image, qemu.image_format)
    return images.merge_extents(spans)


def unwritten_equal(spans: list[tuple[int, int]], touched: list[tuple[int, int]],
                    model_source: Path, qemu: QemuSide) -> list[tuple[int, int]]:
    """The parts of ``spans`` still to compare through the lockstep: those
    the model touched, and those where QEMU's raw copy may differ from the
    file the model's card started from.  Outside what it touched the
    model's card is that file, unchanged, and QEMU's holds the same bytes:
    comparing them through both targets (1 MiB at a time, a digest each,
    the model's side through its block store) would find them equal.  So a
    span is cut at the model's extents: the pieces inside go through the
    lockstep, the pieces between are compared with the source file directly
    and go through the lockstep only where they differ.  QEMU's copy is
    known unchanged past the highest offset QEMU wrote (QMP
    ``wr_highest_offset``)."""
    machine: Machine | None = getattr(qemu, "machine", None)
    image: Path | None = getattr(qemu, "image", None)
    source = machine.image.path if machine is not None and machine.image is not None else None
    if image is None or getattr(qemu, "image_format", "raw") != "raw" or source is None \
            or source.resolve() != model_source.resolve():
        return spans
    # A live QEMU says how far it wrote; a recording's copy of its final card
    # is compared whole, which drops the same spans (bytes past that offset
    # are the source's).
    upto = qemu.written_upto() if isinstance(qemu, QemuTarget) else None
    marks = merge_extents(touched)
    out: list[tuple[int, int]] = []
    with open(model_source, "rb") as a, open(image, "rb") as b:
        for piece, inside in _cut(spans, marks):
            off, length = piece
            if inside:
                out.append(piece)
            elif upto is None or off < upto:
                n = length if upto is None else min(length, upto - off)
                if not _same_bytes(a, b, off, n):
                    out.append(piece)
    return out


def _cut(spans: list[tuple[int, int]], marks: list[tuple[int, int]]
         ) -> list[tuple[tuple[int, int], bool]]:
    """``spans`` cut at ``marks`` (merged, sorted): each piece, and whether
    it lies inside a mark."""
    starts = [o for o, _ in marks]
    out: list[tuple[tuple[int, int], bool]] = []
    for off, length in spans:
        end, pos = off + length, off
        k = max(bisect.bisect_right(starts, off) - 1, 0)
        for o, n in marks[k:]:
            if o >= end:
                break
            lo, hi = max(o, pos), min(o + n, end)
            if hi <= lo:
                continue
            if lo > pos:
                out.append(((pos, lo - pos), False))
            out.append(((lo, hi - lo), True))
            pos = hi
        if pos < end:
            out.append(((pos, end - pos), False))
    return out


def _same_bytes(a: BinaryIO, b: BinaryIO, off: int, length: int) -> bool:
    for pos in range(off, off + length, _CHUNK):
        n = min(_CHUNK, off + length - pos)
        a.seek(pos)
        b.seek(pos)
        if a.read(n) != b.read(n):
            return False
    return True


def compare_images(t: LockstepTarget, spans: list[tuple[int, int]],
                   limit: int = IMAGE_COMPARE_LIMIT) -> str:
    """Compare the card contents over ``spans``, up to ``limit`` bytes.

    Returns what was left uncompared, as a sentence ("" when nothing was)."""
    budget = limit
    left: list[tuple[int, int]] = []
    for off, length in spans:
        n = min(length, budget)
        for pos in range(off, off + n, _CHUNK):
            t.image_read(pos, min(_CHUNK, off + n - pos))
        budget -= n
        if n < length:
            left.append((off + n, length - n))
    if not left:
        return ""
    total = sum(n for _, n in left)
    return (f"card image compared only up to the {limit >> 20} MiB limit: {total} bytes in "
            f"{len(left)} extents not compared, the first at {left[0][0]:#x}")


@dataclass(frozen=True)
class RunOptions:
    """How :func:`run` runs one scenario, beside the build, scenario and machine.

    ``image`` replaces the scenario's recipe image with a user's card image
    (never written: QEMU gets a copy, the model a copy-on-write view).
    ``record`` keeps QEMU's side of the run; ``replay`` runs the model
    against such a recording instead of a live QEMU.  ``stop_after`` ends
    the run after that step, agreeing if nothing diverged up to it (the
    final memory and image comparisons are not made).  ``migrator`` is
    called once both sides exist (it sets the context's migration points
    up: :mod:`harness.check.migration`; not with ``pool``).  ``pool``
    lends the QEMU process (reused, reset to a fresh launch's state; not
    with ``replay``; a recording keeps its trace and image as it ends);
    ``keep`` keeps every step and the qtest trace in the result.
    ``lockstep``: ``optimistic`` runs ahead of QEMU on the model's answers
    where the run allows it (a live QEMU, no recording, replay, migration or
    ``stop_after``) and, at any difference, runs the scenario again step by
    step; ``step`` always goes one round trip per operation.
    ``max_differences``: distinct differences a run records, the model
    taking QEMU's value at each, before it stops (1: the first one ends
    the run, ``--first-only``; :mod:`harness.check.scoreboard`).
    ``reproducer_c``: each reproducer has its C test too
    (:func:`harness.check.reproducer.write_reproducer`)."""

    strict: Strictness = False
    report_dir: Path | None = None
    quirks: tuple[KnownDifference, ...] = QUIRKS
    image: UserImage | None = None
    record: Recording | None = None
    replay: Recording | None = None
    stop_after: int | None = None
    migrator: Callable[[Context, QemuSide, ModelTarget], None] | None = None
    pool: QemuPool | None = None
    keep: bool = False
    lockstep: str = OPTIMISTIC
    max_differences: int = DEFAULT_MAX_DIFFERENCES
    #: a divergence's reproducer has the C test beside its trace and script
    reproducer_c: bool = False


def run(build: QemuBuild, sc: Scenario, machine: str = "q35",
        opts: RunOptions = RunOptions()) -> Result:
    """Run one scenario on ``build`` and on the model, in lockstep, as
    ``opts`` says (:class:`RunOptions`).

    A run that differed on a reused QEMU process is run again on a fresh
    one: a reproducer replays on a fresh QEMU, whose guest-visible random
    values (the RCA) start from the seed again, and a difference that only
    a reused process shows is one of ``system_reset``, noted as such."""
    res = _run(build, sc, machine, opts)
    if not (res.reused and res.differences and opts.pool is not None):
        return res
    fresh = _run(build, sc, machine, replace(opts, pool=None))
    fresh.seconds += res.seconds
    if fresh.differences:
        return fresh
    key = reset_residue([d.signature for d in res.differences])
    if key is not None and fresh.status in (AGREE, QUIRK):
        fresh.status = QUIRK
        fresh.use(LEDGER[key]).met = True
        fresh.notes.append(f"on a reused QEMU process (after system_reset), "
                           f"{res.reason or 'a difference'}: what QEMU's card kept from the "
                           f"scenario before ({key}); a fresh launch agrees")
        return fresh
    res.notes.append("differed only on a reused QEMU process (after system_reset): a "
                     "fresh launch agrees, so its reproducer may not replay there")
    return res


def reset_residue(signatures: list[str]) -> str | None:
    """The ledger key of :data:`RESET_RESIDUE` when every difference (finding
    signatures, ``what | command | state``) of a reused process's run, which
    a fresh launch ran in agreement, was at that command; else None."""
    commands = [(sig.split(" | ") + ["", ""])[1] for sig in signatures]
    keys = {k for c in commands for prefix, k in RESET_RESIDUE.items() if c.startswith(prefix)}
    if not commands or len(keys) != 1 or not all(
            c.startswith(tuple(RESET_RESIDUE)) for c in commands):
        return None
    return keys.pop()


def _run(build: QemuBuild, sc: Scenario, machine: str, opts: RunOptions) -> Result:
    """:func:`run` on the process ``opts`` lends, as it comes."""
    if opts.lockstep not in LOCKSTEP_MODES:
        raise ValueError(f"lockstep mode {opts.lockstep!r} is not one of "
                         f"{', '.join(LOCKSTEP_MODES)}")
    if opts.lockstep == OPTIMISTIC and (opts.replay is None and opts.record is None
                                        and opts.migrator is None and opts.stop_after is None):
        learned = frozenset(_LEARNED.get(str(build.binary), ())) \
            if opts.max_differences > 1 else frozenset()
        first = _run_once(build, sc, machine, opts, True, sync_reads=learned)
        if first.lockstep != FALLBACK:
            if first.differences:
                first.lockstep = RESYNC
            return first
        spent = first.seconds
        if opts.max_differences > 1:
            done, spent = _resync(build, sc, machine, opts, first, learned)
            if done is not None:
                return done
        again = _run_once(build, sc, machine, opts, False)
        again.lockstep, again.fallback = FALLBACK, first.fallback
        again.seconds += spent
        return again
    return _run_once(build, sc, machine, opts, False)


#: Register reads whose value differed in an earlier run of a build (by its
#: binary), in this process: a later run of the build syncs them from its
#: first attempt (a status bit a build sets after every transfer differs in
#: most runs).  The data port is left out: it is read hundreds of times a
#: run, and a data difference is the run's own.
_LEARNED: dict[str, set[tuple[int, int]]] = {}


#: ``(binary, machine type)`` -> why the build cannot start that machine
#: (a ROM, machine type or device it lacks, in QEMU's words), in this
#: process: the later runs on it are reported so without a launch each.
_REFUSED: dict[tuple[str, str], str] = {}


def _resync(build: QemuBuild, sc: Scenario, machine: str, opts: RunOptions,
            first: Result, learned: frozenset[tuple[int, int]] = frozenset()
            ) -> tuple[Result | None, float]:
    """A run that goes on past differences, optimistic still: again with a
    sync point at each step where the last attempt differed, where the
    scoreboard records the difference and the model takes QEMU's value.
    The result, or None (step by step must run it: an attempt that ended
    for another reason, or too many), and the seconds spent."""
    sync: set[int] = set()
    reads: set[tuple[int, int]] = set(learned)
    last, spent = first, first.seconds
    for _ in range(RESYNC_ATTEMPTS):
        at = last.fallback_at
        if at is None or at in sync:
            break
        sync.add(at)
        if last.fallback_read is not None:
            reads.add(last.fallback_read)
            if last.fallback_read[0] & ~3 != sdhci.BDATA.offset:
                _LEARNED.setdefault(str(build.binary), set()).add(last.fallback_read)
        last = _run_once(build, sc, machine, opts, True, frozenset(sync), frozenset(reads))
        spent += last.seconds
        if last.lockstep != FALLBACK:
            last.lockstep, last.fallback = RESYNC, first.fallback
            last.seconds = spent
            return last, spent
    return None, spent


def _run_once(build: QemuBuild, sc: Scenario, machine: str, opts: RunOptions,
              optimistic: bool, sync_at: frozenset[int] = frozenset(),
              sync_reads: frozenset[tuple[int, int]] = frozenset()) -> Result:
    """:func:`run`'s one run of the scenario, optimistic or step by step."""
    t0 = time.monotonic()
    spec = RunSpec(build, sc, machine)
    res = Result(build.name, sc.name, sc.group, machine, AGREE)
    why = spec.skip_reason()
    if why:
        res.status, res.reason = SKIP, why
        return res
    refused = _REFUSED.get((str(build.binary), machine))
    if refused is not None:  # this process saw the build refuse the machine
        res.status, res.reason = CANNOT_RUN, refused
        return res
    bench = Testbench(spec, strict=opts.strict, image=opts.image, record=opts.record,
                      replay=opts.replay, pool=opts.pool, quirks=opts.quirks, keep=opts.keep,
                      stop_after=opts.stop_after, max_differences=opts.max_differences)
    try:
        _drive(bench, res, optimistic, opts.migrator, sync_at, sync_reads)
    except Exception as e:
        _failed(bench, res, e, opts, optimistic)
    finally:
        healthy = res.status not in (CRASH, ERROR)  # before _settle judges the run
        res.reused = getattr(bench.qemu, "uses", 1) > 1
        _settle(bench, res, opts)
        _collect(bench, res, healthy)
    if res.lockstep == FALLBACK:
        res.seconds = time.monotonic() - t0
        return res
    _judge(res, bench.quirks, bench.context)
    res.seconds = time.monotonic() - t0
    return res


def _drive(bench: Testbench, res: Result, optimistic: bool,
           migrator: Callable[[Context, QemuSide, ModelTarget], None] | None,
           sync_at: frozenset[int] = frozenset(),
           sync_reads: frozenset[tuple[int, int]] = frozenset()) -> None:
    """The scenario through the bench, then the final memory and image comparisons."""
    lock = bench.start(optimistic, sync_at, sync_reads)
    if bench.optimistic:
        res.lockstep = OPTIMISTIC
    qemu, model = bench.qemu, bench.model
    assert qemu is not None and model is not None
    if migrator is not None:
        migrator(bench.context, qemu, model)
    bench.spec.scenario.fn(lock, bench.context)
    lock.compare_watched()  # the DMA arena, once more at the end
    lock.flush()  # QEMU has answered everything before its card is read
    spans = unwritten_equal(image_spans(model, bench.model_image, qemu), model.image_touched(),
                            bench.model_image, qemu)
    res.not_compared = compare_images(lock, spans)
    restore = getattr(qemu, "restore_image", None)  # a live QEMU's own copy
    image_differs = any(st.op == "image_read" for _, st in lock.applied) or any(
        d.divergence.step.op == "image_read" for d in lock.scoreboard.differences)
    if restore is not None and not res.not_compared and not image_differs:
        # QEMU's copy is the model's card: put the source back where the
        # model wrote, and a reuse with this image keeps the copy.
        restore(model.image_touched())


def _failed(bench: Testbench, res: Result, e: Exception, opts: RunOptions,
            optimistic: bool) -> None:
    """How the run ended early: a fallback, a stop asked for, a divergence
    (its reproducer written), QEMU gone or refusing, or a harness bug.
    ``optimistic``: the run was asked to be (until the scoreboard exists,
    which says whether it is)."""
    spec, model = bench.spec, bench.model
    if isinstance(e, Fallback):
        res.lockstep, res.fallback, res.fallback_at = FALLBACK, str(e), e.at
        res.fallback_read = e.read
    elif isinstance(e, ModelStopped):
        step, why = e.args
        res.status = SKIP
        res.reason = (f"compared up to step {step}, where the model stopped a transfer QEMU "
                      f"keeps running: {why}")
        bench.context.misses.clear()  # the scenario did not finish
    elif isinstance(e, Stopped):
        res.stopped = str(e)
    elif isinstance(e, StopRun):
        res.reason = f"stopped before step {e.args[0]}, as asked"
        bench.context.misses.clear()  # the scenario did not finish: its verdicts are not final
    elif isinstance(e, Divergence):
        e.scenario = spec.scenario.name
        if model is not None and model.refused and e.kind == "result" and e.step.op == "read":
            e.fields.append(model.refused[-1])  # why QEMU's value was not adopted
        res.status, res.divergence = DIVERGE, e
        res.reason = e.summary()
        if bench.lock is not None and not bench.lock.scoreboard.differences:
            # first-only: the one difference, as a finding like any other
            res.differences = [Difference(e, e.signature, True, run_steps=bench.lock.count)]
        if bench.qemu is not None and opts.report_dir is not None:
            stem = f"{spec.build.name}-{spec.machine}-{spec.scenario.name}".replace("/", "_")
            e.trace_file = str(write_reproducer(e, bench.qemu, opts.report_dir, stem,
                                                c=opts.reproducer_c))
    elif isinstance(e, QemuLaunchError) and bench.lock is None and lacks(str(e)):
        res.status, res.reason = CANNOT_RUN, f"cannot run on this build: {lacks(str(e))}"
        _REFUSED[(str(spec.build.binary), spec.machine)] = res.reason
    elif bench.optimistic if bench.lock is not None else optimistic:
        # where step by step would have stopped is for it to say
        res.lockstep, res.fallback = FALLBACK, f"{type(e).__name__}: {e}"
        if isinstance(bench.lock, OptimisticLockstep):
            bench.lock.abandon()  # answers still due are read: the process can be reset
    elif isinstance(e, QemuGone):  # died, closed the qtest stream, or hung (and was stopped)
        res.status, res.reason = CRASH, str(e)
        predicted = model.hung if model is not None else None
        key = model.stop_key if model is not None else None
        if predicted and key:  # a QEMU bug of the ledger, where the model says it strikes
            res.status = QUIRK
            res.use(LEDGER[key]).met = True
            res.reason = f"QEMU stopped where the model says it does ({predicted}): {e}"
        elif predicted:
            res.reason = f"{e} (the model predicted it: {predicted}; no ledger entry names it)"
    elif isinstance(e, QemuError):
        res.status, res.reason = ERROR, str(e)
    else:  # a harness or model bug: report it, keep going
        res.status, res.internal = ERROR, True
        res.reason = f"internal error of sdqtest: {type(e).__name__}: {e}"
        res.notes.insert(0, traceback.format_exc())


def _settle(bench: Testbench, res: Result, opts: RunOptions) -> None:
    """A run that went on past differences: its first is the run's
    divergence, as a first-only run would report it; each distinct one gets
    a reproducer, QEMU's trace up to its step."""
    lock = bench.lock
    if lock is None or not lock.scoreboard.differences \
            or res.lockstep == FALLBACK:  # an abandoned attempt: the next one reports
        return
    if res.status in (CRASH, ERROR):  # QEMU died, or the model could not go on
        # after its first difference: the run's verdict is that difference,
        # as when it stopped there; what ended it is said
        res.notes.append(f"after its differences the run stopped: {res.reason}")
        res.stopped = res.stopped or f"QEMU or the model stopped: {res.reason.splitlines()[0]}"
    diffs = res.differences = list(lock.scoreboard.differences)
    res.stopped = res.stopped or lock.scoreboard.stopped
    spec, first = bench.spec, diffs[0].divergence
    res.status, res.divergence = DIVERGE, first
    for d in diffs:
        d.divergence.scenario = spec.scenario.name
        d.run_steps = lock.count
    res.reason = first.summary() + (f" (+{len(diffs) - 1} more distinct differences)"
                                    if len(diffs) > 1 else "")
    if bench.qemu is None or opts.report_dir is None:
        return
    stem = f"{spec.build.name}-{spec.machine}-{spec.scenario.name}".replace("/", "_")
    for i, d in enumerate(diffs):
        d.divergence.trace_file = str(write_reproducer(
            d.divergence, bench.qemu, opts.report_dir, stem if i == 0 else f"{stem}-d{i + 1}",
            upto=d.trace_len, c=opts.reproducer_c))


def _collect(bench: Testbench, res: Result, healthy: bool) -> None:
    """What the run leaves in its result, whatever happened; the sides
    closed (QEMU's process given back for reuse when ``healthy``)."""
    qemu, model, lock = bench.qemu, bench.model, bench.lock
    report = (sanitizer.since(qemu, bench.err_at) if qemu is not None and healthy else None)
    if report is not None:  # a sanitizer build that went on (halt_on_error=0, UBSan)
        res.status, res.reason = CRASH, f"{report.summary()} (QEMU went on)"
    if lock is not None:
        res.steps = lock.count
        for q, st in lock.applied:
            res.use(q).applied.append(st.index)
        if model is not None:
            for st, (what, value) in zip(lock.reconciled, model.adoptions, strict=True):
                res.use(adopting(what)).adopted.append((st.index, what, value))
    if bench.keep and lock is not None and qemu is not None:
        res.history, res.trace = lock.history(), list(qemu.trace)
    bench.close(healthy=healthy and res.status not in (CRASH, ERROR))
    if model is not None:
        for key in sorted(model.deviations_consulted()):
            res.use(LEDGER[key]).consulted = True


def _judge(res: Result, qset: QuirkSet, ctx: Context) -> None:
    """The verdict of a run that ended: quirks, stale quirks, the misses."""
    if res.status == AGREE and res.quirks():
        res.status = QUIRK
    if res.status in (AGREE, QUIRK):
        for q in qset.expected_here():
            if q.key not in qset.used and bound_to_scenario(q):
                res.use(q).stale = True
    res.notes += ctx.notes
    res.spec_misses, explained = judge_misses(ctx.misses, res.consulted())
    for i, (message, key) in enumerate(explained):
        res.use(LEDGER[key]).misses.append((i, message))
    if res.spec_misses and res.status in (AGREE, QUIRK):
        res.status = SPEC_MISS
        res.reason = "; ".join(res.spec_misses)


def judge_misses(misses: list[Miss], consulted: set[str]
                 ) -> tuple[list[str], list[tuple[str, str]]]:
    """Split ``misses`` into unexplained ones (messages, saying why) and
    ``(message, key)`` of those a listed deviation the model consulted
    explains."""
    unexplained: list[str] = []
    known: list[tuple[str, str]] = []
    for m in misses:
        if m.deviation is None:
            unexplained.append(m.message)
        elif m.deviation not in LEDGER or not LEDGER[m.deviation].toggle:
            unexplained.append(f"{m.message} (names {m.deviation}, which no deviation "
                               "table lists)")
        elif m.deviation not in consulted:
            unexplained.append(f"{m.message} (names {m.deviation}, which the model did "
                               "not consult in this run)")
        else:
            known.append((m.message, m.deviation))
    return unexplained, known


def skipped_too_much(results: list[Result]) -> list[str]:
    """Why a check that skipped this much is not a pass: one line per build
    that skipped more than half of its scenarios (a build without the qtest
    accelerator skips every scenario that needs virtual time).  Scenarios for
    a device the build does not offer (an eMMC on 7.2 or 10.0) do not count."""
    by: dict[str, list[Result]] = {}
    for r in results:
        if r.status == SKIP and r.reason in DEVICE_ABSENT or r.status == CANNOT_RUN:
            continue
        by.setdefault(r.build, []).append(r)
    out = []
    for build, rs in by.items():
        n = sum(r.status == SKIP for r in rs)
        if 2 * n > len(rs):
            out.append(f"QEMU {build} skipped {n} of {len(rs)} scenarios")
    return out
