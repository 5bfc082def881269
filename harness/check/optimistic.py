"""Optimistic lockstep: the scenario runs on the model's answers while QEMU
answers in pipelined batches.

A lockstep run only goes on while model and QEMU agree, so until they
disagree the model's answer *is* QEMU's.  :class:`OptimisticLockstep`
answers the driver with the model's value at once and queues QEMU's
operation (its qtest lines, :meth:`harness.qemu.target.QemuTarget.op_lines`)
with the model's result as the prediction.  The queue goes to QEMU as one
pipelined write (:meth:`harness.qemu.qtest.QtestClient.pipeline_marked`)

* when it holds :data:`BATCH` operations or :data:`BATCH_BYTES` of request;
* before an operation whose answer the model cannot predict, which then
  runs as in :class:`~harness.check.lockstep.LockstepTarget`, one round
  trip: a read whose value the model would adopt (``ModelTarget.may_adopt``:
  the random RCA in CMD3's response, an undefined RSPREG3), a clock step to
  "the next deadline" (QEMU's timers, not the model's), a read of the card
  image (QEMU's file), a poll of the interrupt line with nothing queued;
* at the end of the scenario (:meth:`OptimisticLockstep.flush`, before the
  runner looks at QEMU's card image).

Answers are compared in order: the value, the interrupt line's level after
each operation and its raise/lower events during it (QEMU sends the ``IRQ``
lines a command causes before that command's answer, so each event is
attributed to the command it precedes, as one command at a time would have
it).  At the first difference of any kind, even one a quirk or an adoption
would explain (the driver has already gone on with the model's value), the
attempt is abandoned with :class:`Fallback` and the runner runs the scenario
again step by step on a reset QEMU: every divergence report, reproducer,
adoption and trace is then exactly the step-by-step one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.check.lockstep import LockstepTarget, Step, _slim
from harness.errors import QemuError
from harness.model.target import ModelTarget
from harness.qemu.target import QemuTarget
from harness.target import Target

#: Most operations queued before the queue goes to QEMU.
BATCH = 1024
#: Most request bytes in one pipelined write: the whole write then fits in
#: the socket's buffers, so QEMU's answers (up to 64 KiB per ``b64read``)
#: never wait for it to finish reading while we wait for it to read.  A
#: larger single operation (a big ``mem_write``) goes alone; its answers are
#: ``OK`` lines.
BATCH_BYTES = 1 << 16


class Fallback(Exception):
    """The optimistic attempt was abandoned (why); run step by step."""


#: An operation the model has run and QEMU has yet to answer: its index,
#: name, arguments, the model's answer, the step's note, the model's
#: interrupt events during it and level after it, and its qtest lines (none:
#: a poll of the interrupt line, or an operation on nothing).
_Queued = tuple[int, str, tuple[Any, ...], Any, str, tuple[bool, ...], bool, list[str]]


@dataclass
class Counters:
    """What the optimistic target did: batches sent, operations queued,
    operations run one round trip at a time (sync points)."""

    batches: int = 0
    queued: int = 0
    synced: int = 0


class OptimisticLockstep(LockstepTarget):
    """A :class:`LockstepTarget` over the model and a live QEMU that runs
    ahead on the model's answers (see the module docstring)."""

    def __init__(self, model: ModelTarget, qemu: QemuTarget, *, batch: int = BATCH,
                 **kw: Any) -> None:
        self._queue: list[_Queued] = []
        super().__init__(model, qemu, **kw)
        self.model_target = model
        self.qemu_target = qemu
        self.batch = batch
        self.counters = Counters()
        self._bytes = 0
        self._lines: dict[tuple[str, int, int], list[str]] = {}
        self._last: tuple[bool, str, tuple[bool, ...]] = (False, "", ())

    @property
    def qemu(self) -> Target:
        """QEMU's side, once it has answered everything queued: a scenario
        that looks at QEMU directly (its card file, QMP) sees it as step by
        step would have left it."""
        self.flush()
        return self._qemu

    @qemu.setter
    def qemu(self, target: Target) -> None:
        self._qemu = target

    def _sync(self, op: str, args: tuple[Any, ...]) -> bool:
        """Must ``op`` wait for QEMU (its answer is not the model's to give)?"""
        if op == "image_read" or self.stop_after is not None:
            return True
        if op == "clock_step":
            return args[0] is None or not self.qemu_target.session.has_clock
        return self.model_target.may_adopt(op, args)

    def _step(self, op: str, *args: Any, compare: bool = True) -> Step:
        if self._sync(op, args):
            self.flush()
            self.counters.synced += 1
            return super()._step(op, *args, compare=compare)
        index = self.count
        m = self._ahead(op, args)
        return Step(index, op, args, m, m, self._last[0], self._last[0], self._last[1],
                    self._last[2], self._last[2])

    def _do(self, op: str, *args: Any, compare: bool = True) -> Any:
        if self._sync(op, args):
            self.flush()
            self.counters.synced += 1
            return super()._step(op, *args, compare=compare).qemu
        return self._ahead(op, args)

    def _ahead(self, op: str, args: tuple[Any, ...]) -> Any:
        """Run ``op`` on the model, queue it for QEMU; the model's answer."""
        note = self.tracker.before(op, args, self.count)
        m = getattr(self.model, op)(*args)
        key = (op, args[0], args[1]) if op == "read" else None
        lines = self._lines.get(key) if key is not None else None
        if lines is None:
            lines = self.qemu_target.op_lines(op, args)
            if key is not None and len(self._lines) < 4096:
                self._lines[key] = lines
        em = tuple(self.model_target.irq_events()) if self._events is not None else ()
        irq = self.model.irq_level()
        size = sum(len(line) + 1 for line in lines)
        if self._queue and self._bytes + size > BATCH_BYTES:
            self.flush()
        self._queue.append((self.count, op, args, m, note, em, irq, lines))
        self._bytes += size
        self._last = (irq, note, em)
        self.count += 1
        self.tracker.after_op(op, args, m)
        if len(self._queue) >= self.batch:
            self.flush()
        return m

    def irq_level(self) -> bool:
        if not self._queue:
            return super().irq_level()
        m = self.model.irq_level()
        self._queue.append((self.count, "irq_level", (), m, "", (), m, []))
        return m

    def flush(self) -> None:
        """Send the queue as one pipelined batch and compare every answer
        with its prediction, in order; :class:`Fallback` at the first
        difference or failure."""
        queue = self._queue
        if not queue:
            return
        self._queue, self._bytes = [], 0
        q, line = self.qemu_target.qtest, self.qemu_target.irq_line
        events = q.irq_events
        mark = len(events)
        level = q.irq_levels.get(line, False)
        try:
            answers = q.pipeline_marked([text for e in queue for text in e[7]])
        except QemuError as err:  # a FAIL answer, QEMU gone or hung
            raise Fallback(f"QEMU during a batch: {err}") from err
        self.counters.batches += 1
        self.counters.queued += len(queue)
        # Only the last steps stay in a bounded history: make only those.
        keep_from = len(queue) - (self._history.maxlen or len(queue))
        with_events = self._events is not None
        i = 0
        for k, (index, op, args, m, note, em, irq, lines) in enumerate(queue):
            if op == "irq_level":
                if m != level:
                    raise Fallback(f"interrupt line polled before step {index}: model "
                                   f"{int(m)}, QEMU {int(level)}")
                continue
            n = len(lines)
            got = answers[i:i + n]
            i += n
            value = self.qemu_target.op_value(op, [a for a, _ in got])
            eq: tuple[bool, ...] = ()
            if got:
                end = got[-1][1]
                if end != mark:
                    eq = tuple(lv for num, lv in events[mark:end] if num == line)
                    mark = end
                    if eq:
                        level = eq[-1]
            if not with_events:
                eq = ()
            if m != value or irq != level or em != eq:
                step = Step(index, op, args, m, value, irq, level, note, em, eq)
                raise Fallback(f"step {index} differs: {step.describe()}")
            if k >= keep_from:
                self._history.append(_slim(Step(index, op, args, m, value, irq, level, note,
                                                em, eq)))
        del events[:]
