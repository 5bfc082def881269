"""One fuzz input on the model and on QEMU, in lockstep.

QEMU builds the fuzz machine (q35, sdhci-pci, an sd-card on a private copy
of the sdsc-16m recipe image); the model mirrors it; every operation of the
input runs through the host driver on a :class:`LockstepTarget`, which
compares each register answer, the interrupt line and the DMA arena.  At
the end the arena and the card blocks the model touched are compared once
more.  The outcome says whether the two agreed, where they first differed,
or how QEMU died (signal, assertion text) or hung (no qtest answer within
the timeout); the QEMU side's qtest trace is kept for the reproducer.

With ``strict``, QEMU's side is recorded and the specification-following
model then runs against the recording (no second QEMU): a run that agrees
with the QEMU-following model but not with the strict one shows a spec
deviation, attributed to one deviation key as ``sdqtest check --strict``
does.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.check.lockstep import Divergence, LockstepTarget, ModelStopped, endless
from harness.check.optimistic import Fallback, OptimisticLockstep
from harness.check.recording import Recording
from harness.check.runner import CRASH as CRASH
from harness.check.runner import DIVERGE as DIVERGE
from harness.check.runner import ERROR as ERROR
from harness.check.testbench import RunSpec, Testbench, scenario_machine
from harness.driver.host import HostDriver
from harness.errors import QemuGone
from harness.fuzz import residue
from harness.fuzz.ops import Op, apply
from harness.machine import Machine
from harness.model.deviations import Strictness
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from harness.qemu import sanitizer
from harness.qemu.argv import replay_argv
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.qemu.qtest import QtestTimeout
from harness.qemu.session import QemuDied
from harness.qemu.target import QemuTarget
from harness.scenarios import Scenario
from harness.target import Target

#: The card image recipe every fuzz input runs on.
IMAGE = "sdsc-16m"
#: Seconds QEMU may take to answer one qtest command before it counts as hung.
HANG_TIMEOUT = 5.0
#: Polls the driver makes before giving up a wait (each steps 10 us).
DRIVER_POLLS = 64
#: Most bytes of the card compared at the end of an input.
IMAGE_LIMIT = 4 << 20
#: ADMA timer steps (100 ns each) without guest interaction after which the
#: model gives up an endless chain (``SDHCI.step_budget``): lower than the
#: check's, so that such an input costs a second, not a minute.
STEP_BUDGET = 5000

#: An input's status: the check's words (:mod:`harness.check.runner`) where
#: they mean the same, and the fuzzer's own for what only an input has
#: (agreeing to the end, a hang told apart from a crash, a stop the model
#: predicted).
OK, HANG, PREDICTED = "ok", "hang", "predicted"


@dataclass
class FuzzOutcome:
    """What one input did."""

    status: str
    reason: str = ""
    divergence: Divergence | None = None
    #: Index of the operation during which the run stopped (None: it ran to the end).
    op_index: int | None = None
    trace: list[str] = field(default_factory=list)
    replay_argv: list[str] = field(default_factory=list)
    machine: Machine | None = None
    steps: int = 0
    seconds: float = 0.0
    #: ``step``, ``optimistic`` or ``fallback`` (optimistic, then step by step).
    lockstep: str = "step"
    #: QEMU's assertion line, or ``signal NAME``, for a crash.
    crash_site: str = ""
    #: ``Type at file:function`` of a harness or model exception.
    error_site: str = ""
    #: What the run reached, for the corpus (a stand-in for line coverage).
    features: set[tuple[Any, ...]] = field(default_factory=set)
    #: Deviation keys a strict run showed (``--strict``).
    spec: list[str] = field(default_factory=list)
    #: The IOAPIC input QEMU routes the controller's INTx to.
    irq_line: int | None = None
    #: What the pooled process's card held from earlier inputs when this
    #: one started, and which of it the input may have seen
    #: (:mod:`harness.fuzz.residue`; empty on a fresh launch).
    carried: frozenset[str] = frozenset()
    seen: frozenset[str] = frozenset()

    @property
    def finding(self) -> bool:
        return self.status in (DIVERGE, CRASH, HANG, ERROR)


#: The fuzz input's scenario for the testbench: the :data:`IMAGE` card on
#: the machine's own controller; the stimulus is the input's operations
#: (:func:`_drive`), not a function of the library.
FUZZ = Scenario("fuzz", "fuzz", lambda _t, _c: None, "a fuzz input", image=IMAGE)


def fuzz_machine(machine_type: str = "q35") -> Machine:
    """The fuzz machine: ``machine_type`` with sdhci-pci and an SD card on
    the :data:`IMAGE` recipe, or a board's machine type with the board's own
    controller and card (:mod:`harness.hwdefs.boards`)."""
    fmt = images.recipe(IMAGE).format
    return scenario_machine(FUZZ, machine_type, images.ensure(IMAGE), fmt)


def _features(model: ModelTarget, op: Op) -> set[tuple[Any, ...]]:
    s = model.sdhci
    card = model.card
    return {(op["op"], str(getattr(card, "state", "")), s.norintsts, s.errintsts,
             s.prnsts & 0x30F)}


def _qemu_dies(model: ModelTarget) -> bool:
    """Whether the model's ``hung`` is a QEMU abort (card assertion, buffer
    index assertion), rather than an endless transfer QEMU keeps running."""
    return endless(model) is None


def _drive(lock: LockstepTarget, model: ModelTarget, qemu: Target, ops: Sequence[Op],
           out: FuzzOutcome, polls: int = DRIVER_POLLS) -> None:
    d = HostDriver(lock, timeout_steps=polls)
    for i, op in enumerate(ops):
        out.op_index = i
        try:
            apply(d, lock, op)
        except ModelStopped:  # the lockstep's word for what is seen below
            pass
        out.features |= _features(model, op)
        if model.hung:
            if not _qemu_dies(model):
                # An endless ADMA chain: QEMU keeps stepping it, the model
                # stopped; nothing after this point can be compared.
                out.status, out.reason = PREDICTED, f"the model stopped: {model.hung}"
                return
            # QEMU would have died by now: one more access tells.
            lock.read(0xFE, 2)
            lock.flush()
            out.status, out.reason = DIVERGE, (
                f"the model says QEMU would stop here ({model.hung}); QEMU still answers")
            return
    out.op_index = None
    lock.compare_watched()
    lock.flush()
    spans = images.merge_extents(model.image_touched())
    budget = IMAGE_LIMIT
    for off, n in spans:
        n = min(n, budget)
        for pos in range(off, off + n, 1 << 20):
            lock.image_read(pos, min(1 << 20, off + n - pos))
        budget -= n
    out.features |= {("deviation", k) for k in model.deviations_consulted()}


def launch(binary: str | Path, machine_type: str = "q35", *, timeout: float = HANG_TIMEOUT,
           name: str = "qemu") -> QemuTarget:
    """A fresh QEMU building the fuzz machine, ready for :func:`execute`."""
    return QemuTarget(binary, fuzz_machine(machine_type), name=name, timeout=timeout)


def execute(binary: str | Path, profile: BuildProfile, ops: Sequence[Op], *,
            machine_type: str = "q35", strict: bool = False,
            timeout: float = HANG_TIMEOUT, name: str = "qemu",
            fresh: QemuTarget | None = None, pool: QemuPool | None = None,
            polls: int = DRIVER_POLLS,
            lockstep: str = "optimistic") -> FuzzOutcome:
    """Run ``ops`` on a fresh QEMU ``binary`` and the model of ``profile``.
    ``fresh`` is a QEMU :func:`launch` started for this input (it is
    closed here); else ``pool`` lends one, reset to a fresh launch's state
    (not with ``strict``, whose recording wants its own process); without
    either one is started.  ``polls``: the driver's waits (the explore
    corpus replays with its own value).  ``lockstep="optimistic"`` runs the input ahead
    on the model's answers (:mod:`harness.check.optimistic`) on a pooled
    QEMU; any outcome but agreement runs it again step by step, so every
    finding is exactly the step-by-step one (``FuzzOutcome.lockstep`` says which
    way it ran)."""
    def once(optimistic: bool) -> FuzzOutcome:
        return _execute_once(binary, profile, ops, machine_type=machine_type, strict=strict,
                             timeout=timeout, name=name, fresh=fresh, pool=pool, polls=polls,
                             optimistic=optimistic)

    if pool is None or fresh is not None or strict:
        return once(False)
    out = _pooled(once, lockstep)
    if out.seen or (out.carried and out.status != OK):
        # What earlier inputs left on the process may have shown: the input
        # again on a fresh launch (its process was closed), whose outcome a
        # run without reuse gives.
        again = _pooled(once, lockstep)
        again.seconds += out.seconds
        return again
    return out


def _pooled(once: Callable[[bool], FuzzOutcome], lockstep: str) -> FuzzOutcome:
    """One input on a pooled QEMU: optimistic, then step by step unless it
    agreed (``lockstep="optimistic"``), or step by step."""
    if lockstep != "optimistic":
        return once(False)
    first = once(True)
    if first.status == OK and first.lockstep == "optimistic":
        return first
    again = once(False)
    again.lockstep, again.seconds = "fallback", again.seconds + first.seconds
    return again


def fuzz_bench(binary: str | Path, profile: BuildProfile, machine_type: str = "q35", *,
               name: str = "qemu", **kw: Any) -> Testbench:
    """The check's testbench for one fuzz input: the fuzz machine (the
    :data:`IMAGE` card; a board's own controller on a board's machine
    type), the ledger's quirks, the model's ADMA :data:`STEP_BUDGET`, no
    recipe lines; ``kw``: the rest of :class:`Testbench`'s options."""
    spec = RunSpec(QemuBuild(name, Path(binary), profile), FUZZ, machine_type)
    return Testbench(spec, step_budget=STEP_BUDGET, recipe=False, **kw)


def _execute_once(binary: str | Path, profile: BuildProfile, ops: Sequence[Op], *,
                  machine_type: str, strict: bool, timeout: float, name: str,
                  fresh: QemuTarget | None, pool: QemuPool | None, polls: int,
                  optimistic: bool) -> FuzzOutcome:
    """:func:`execute`'s one run, optimistic (on a pooled QEMU) or step by step."""
    t0 = time.monotonic()
    out = FuzzOutcome(OK)
    rec = Recording() if strict else None
    pooled = pool if rec is None and fresh is None else None
    bench = fuzz_bench(binary, profile, fresh.machine.type if fresh is not None
                       else machine_type, name=name, fresh=fresh, pool=pooled, record=rec,
                       timeout=timeout)
    out.machine = bench.described
    carried: frozenset[str] = frozenset()
    seen: set[str] = set()
    try:
        lock = bench.start(optimistic)
        assert bench.model is not None and bench.qemu is not None
        if pooled is not None and bench.live is not None:
            carried = bench.live.residue
        seen = residue.watch(bench.model, carried)
        out.lockstep = "optimistic" if bench.optimistic else out.lockstep
        _drive(lock, bench.model, bench.qemu, ops, out, polls)
    except Exception as e:  # every outcome but agreement (a harness bug too)
        _failed(out, e, bench.model)
    finally:
        _finish(bench, out, carried, seen)
    if rec is not None:
        try:
            if out.status == OK:
                out.spec = _strict_keys(rec, profile, out.machine, ops)
                if out.spec:
                    out.reason = ("the specification-following model diverges where QEMU "
                                  f"follows deviation {', '.join(out.spec)}")
        finally:
            rec.cleanup()
    out.seconds = time.monotonic() - t0
    return out


def _finish(bench: Testbench, out: FuzzOutcome, carried: frozenset[str],
            seen: set[str]) -> None:
    """What the run leaves in ``out`` (a sanitizer's report, steps, QEMU's
    trace and command line), the bench closed: a pooled QEMU handed back
    with its card's residue."""
    if isinstance(bench.lock, OptimisticLockstep) and out.status != OK:
        bench.lock.abandon()  # run again step by step: the stream must be in step
    qemu = bench.live
    report = (sanitizer.since(qemu, bench.err_at) if qemu is not None
              and out.status in (OK, DIVERGE, PREDICTED) else None)
    if report is not None:  # QEMU went on after it (halt_on_error=0, UBSan)
        out.status, out.reason = CRASH, f"{report.summary()} (QEMU went on)"
        out.crash_site = report.signature
    if bench.lock is not None:
        out.steps = bench.lock.count
    if qemu is not None:
        out.trace = list(qemu.qtest.trace) if hasattr(qemu, "qtest") else []
        out.replay_argv = qemu.replay_argv() if hasattr(qemu, "session") else []
        out.irq_line = getattr(qemu, "irq_line", None)
    if bench.pool is not None and qemu is not None:
        _release(qemu, bench.model, out, carried, seen)
        bench.close(healthy=not (qemu.residue & residue.NOT_REUSABLE or out.seen))
    else:
        bench.close(healthy=False)
    if not out.replay_argv:  # QEMU did not start: the command line is the same
        out.replay_argv = replay_argv(bench.spec.build.binary, bench.described)


def _release(qemu: QemuTarget, model: ModelTarget | None, out: FuzzOutcome,
             carried: frozenset[str], seen: set[str]) -> None:
    """Set the residue the pooled ``qemu``'s card now holds
    (:mod:`harness.fuzz.residue`), before it goes back to its pool: kept for
    reuse unless that residue is unknown (the model lost QEMU's card: any
    outcome but agreement) or unclearable, or the input may have ``seen``
    what it ``carried`` (then it runs again on a fresh launch)."""
    qemu.residue = carried | (residue.left(model) if out.status == OK and model is not None
                              else {residue.UNKNOWN})
    out.carried, out.seen = carried, frozenset(seen)


def _failed(out: FuzzOutcome, e: Exception, model: ModelTarget | None) -> None:
    """Record in ``out`` how the run ended when it raised ``e``: a fall-back
    to step by step, a divergence, a hang or crash (PREDICTED where the
    model said QEMU would stop), or an error (a model or harness bug, a
    finding too)."""
    hung = model is not None and model.hung is not None
    if isinstance(e, Fallback):
        out.status, out.reason, out.lockstep = ERROR, str(e), "fallback"
    elif isinstance(e, Divergence):
        out.status, out.divergence, out.reason = DIVERGE, e, e.summary()
    elif isinstance(e, QtestTimeout):
        out.status, out.reason = (PREDICTED if hung else HANG), str(e)
    elif isinstance(e, QemuGone):
        predicted = hung and model is not None and _qemu_dies(model)
        out.status, out.reason = (PREDICTED if predicted else CRASH), str(e)
        if isinstance(e, QemuDied) and e.sanitizer is not None:
            out.crash_site = e.sanitizer.signature  # the top hw/sd frame names it
        elif isinstance(e, QemuDied):
            out.crash_site = e.assertion or (
                f"signal {e.signal}" if e.signal else f"exit {e.returncode}")
        else:
            out.crash_site = "qtest stream closed"
    else:
        out.status, out.reason = ERROR, f"{type(e).__name__}: {e}"
        out.error_site = error_site(e)


def _strict_run(rec: Recording, profile: BuildProfile, machine: Machine, ops: Sequence[Op],
                strict: Strictness) -> tuple[int | None, set[str]]:
    """The step a model of ``strict`` diverges at against the recording
    (None: it agrees), and the deviation keys it consulted."""
    bench = fuzz_bench("", profile, machine.type, replay=rec, strict=strict)
    lock = bench.start(False)
    model = bench.model
    assert model is not None
    scratch = FuzzOutcome(OK)
    try:
        _drive(lock, model, lock.qemu, ops, scratch)
    except Divergence as d:
        return d.step.index, model.deviations_consulted()
    except Exception:  # noqa: BLE001 - a strict model leaving the recorded path
        return lock.count, model.deviations_consulted()
    finally:
        bench.close(healthy=False)
    return None, model.deviations_consulted()


def _strict_keys(rec: Recording, profile: BuildProfile, machine: Machine,
                 ops: Sequence[Op]) -> list[str]:
    """Deviation keys whose spec-following rule alone makes the run diverge
    at the step the fully strict model does."""
    at, consulted = _strict_run(rec, profile, machine, ops, True)
    if at is None:
        return []
    found = []
    for key in sorted(consulted):
        one, _ = _strict_run(rec, profile, machine, ops, frozenset({key}))
        if one == at:
            found.append(key)
    return found or ["unexplained"]


def error_site(e: BaseException) -> str:
    """``Type at file:function`` of the innermost harness frame of ``e``."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/harness/" in f.filename]
    if not frames:
        return type(e).__name__
    f = frames[-1]
    path = f.filename[f.filename.rindex("/harness/") + 1:]
    return f"{type(e).__name__} at {path}:{f.name}"
