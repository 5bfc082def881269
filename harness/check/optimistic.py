"""Optimistic lockstep: the scenario runs on the model's answers while QEMU
answers in pipelined batches.

A lockstep run only goes on while model and QEMU agree, so until they
disagree the model's answer *is* QEMU's.  :class:`OptimisticLockstep`
answers the driver with the model's value at once and queues QEMU's
operation (its qtest lines, :meth:`harness.qemu.target.QemuTarget.op_lines`)
with the model's result as the prediction.  The queue goes to QEMU as one
pipelined write (:meth:`harness.qemu.qtest.QtestClient.send_lines`, its
answers read with ``read_marked``; two batches in flight at most, so that
QEMU answers one while the model runs the next)

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
#: Most request bytes in one pipelined write.  Two batches are in flight at
#: most (QEMU answers one while the model runs the next), so what is sent
#: and not yet read stays within the socket's buffers and QEMU's answers
#: (up to 64 KiB per ``b64read``) never wait for it to read more while we
#: wait for it to read.  A larger single operation (a big ``mem_write``)
#: goes alone, nothing else in flight; its answers are ``OK`` lines.
BATCH_BYTES = 1 << 15


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
        #: Batches sent and not yet answered (at most two), with their lines.
        self._inflight: list[tuple[list[_Queued], int]] = []
        #: QEMU's interrupt level after the last batch checked (None: read it).
        self._level: bool | None = None
        super().__init__(model, qemu, **kw)
        self.model_target = model
        self.qemu_target = qemu
        self.batch = batch
        self.counters = Counters()
        self._bytes = 0
        #: A register read's qtest line and its length, by (offset, size).
        self._lines: dict[tuple[Any, ...], tuple[list[str], int]] = {}
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
        if self.stop_after is not None:
            return True
        if op == "read":
            return self.model_target.may_adopt(op, args)
        if op == "clock_step":
            return args[0] is None or not self.qemu_target.session.has_clock
        return op not in ("write", "mem_read", "mem_write")

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
        cached = self._lines.get(args[:2]) if op == "read" else None
        if cached is None:
            lines = self.qemu_target.op_lines(op, args)
            size = sum(len(line) + 1 for line in lines)
            if op == "read" and len(self._lines) < 4096:
                self._lines[args[:2]] = (lines, size)
        else:
            lines, size = cached
        em = tuple(self.model_target.irq_events()) if self._events is not None else ()
        irq = self.model.irq_level()
        if size > BATCH_BYTES:  # a large write: alone, nothing else in flight
            self.flush()
        elif self._queue and self._bytes + size > BATCH_BYTES:
            self._full()
        self._queue.append((self.count, op, args, m, note, em, irq, lines))
        self._bytes += size
        self._last = (irq, note, em)
        self.count += 1
        self.tracker.after_op(op, args, m)
        if size > BATCH_BYTES:
            self.flush()
        elif len(self._queue) >= self.batch:
            self._full()
        return m

    def irq_level(self) -> bool:
        if not self._queue and not self._inflight:
            return super().irq_level()
        m = self.model.irq_level()
        self._queue.append((self.count, "irq_level", (), m, "", (), m, []))
        return m

    def flush(self) -> None:
        """Send what is queued, then read and compare every batch in flight
        with its predictions, in order: QEMU has then answered everything.
        :class:`Fallback` at the first difference or failure."""
        if self._queue:
            self._send()
        while self._inflight:
            self._receive()
        self._level = None

    def _full(self) -> None:
        """The queue is full: send it, and check the batch sent before it
        (QEMU ran that one while the model ran this one)."""
        self._send()
        while len(self._inflight) > 1:
            self._receive()

    def abandon(self) -> None:
        """Read and drop every answer still due, so that the QEMU process can
        be reset and reused; nothing is compared."""
        self._queue, self._bytes = [], 0
        q = getattr(self.qemu_target, "qtest", None)  # None: it never got that far
        while q is not None and self._inflight and not q.closed:
            _, n = self._inflight.pop(0)
            try:
                q.read_marked(n)
            except QemuError:
                pass
        self._inflight.clear()
        if q is not None:
            del q.irq_events[:]

    def _send(self) -> None:
        queue = self._queue
        self._queue, self._bytes = [], 0
        lines = [text for e in queue for text in e[7]]
        self._inflight.append((queue, len(lines)))
        try:
            self.qemu_target.qtest.send_lines(lines)
        except QemuError as err:  # QEMU gone or hung
            self.abandon()
            raise Fallback(f"QEMU during a batch: {err}") from err

    def _receive(self) -> None:
        """Read the answers to the oldest batch in flight and compare them."""
        queue, n = self._inflight[0]
        q, line = self.qemu_target.qtest, self.qemu_target.irq_line
        level = q.irq_levels.get(line, False) if self._level is None else self._level
        mark = len(q.irq_events)
        try:
            answers = q.read_marked(n)
        except QemuError as err:  # a FAIL answer, QEMU gone or hung
            self._inflight.pop(0)
            self.abandon()
            raise Fallback(f"QEMU during a batch: {err}") from err
        self._inflight.pop(0)
        events = q.irq_events
        self.counters.batches += 1
        self.counters.queued += len(queue)
        # Only the last steps stay in a bounded history: make only those.
        keep_from = len(queue) - (self._history.maxlen or len(queue))
        with_events = self._events is not None
        i = 0
        for k, (index, op, args, m, note, em, irq, lines) in enumerate(queue):
            if op == "irq_level":
                if m != level:
                    self.abandon()
                    raise Fallback(f"interrupt line polled before step {index}: model "
                                   f"{int(m)}, QEMU {int(level)}")
                continue
            nl = len(lines)
            if nl == 1:  # a register access, a clock step, a small memory access
                answer, end = answers[i]
                value = int(answer[3:], 16) if op == "read" else \
                    None if op == "write" else self.qemu_target.op_value(op, (answer,))
            else:
                got = answers[i:i + nl]
                value = self.qemu_target.op_value(op, [a for a, _ in got])
                end = got[-1][1] if got else mark
            i += nl
            eq: tuple[bool, ...] = ()
            if end != mark:
                eq = tuple(lv for num, lv in events[mark:end] if num == line)
                mark = end
                if eq:
                    level = eq[-1]
            if not with_events:
                eq = ()
            if m != value or irq != level or em != eq:
                step = Step(index, op, args, m, value, irq, level, note, em, eq)
                self.abandon()
                raise Fallback(f"step {index} differs: {step.describe()}")
            if k >= keep_from:
                st = Step(index, op, args, m, value, irq, level, note, em, eq)
                self._history.append(_slim(st) if op == "mem_read" else st)
        del events[:]
        self._level = level
