"""Optimistic lockstep: the scenario runs on the model's answers while QEMU
answers in pipelined batches.

A lockstep run only goes on while model and QEMU agree, so until they
disagree the model's answer *is* QEMU's.  :class:`OptimisticLockstep`
answers the driver with the model's value at once and queues QEMU's
operation (its qtest lines, :meth:`harness.qemu.target.QemuTarget.op_lines`)
with the model's result as the prediction.  The queue goes to QEMU as one
pipelined write (:meth:`harness.qemu.qtest.QtestClient.send_lines`, its
answers read with ``read_answers``, every batch in flight in one go, once
:data:`IN_FLIGHT_BYTES` are in flight: QEMU runs the batches while the
model runs the next ones)

* when it holds :data:`BATCH` operations or :data:`BATCH_BYTES` of request;
* before an operation whose answer the model cannot predict, which then
  runs as in :class:`~harness.check.lockstep.LockstepTarget`, one round
  trip: a read whose value the model would adopt (``ModelTarget.may_adopt``:
  the random RCA in CMD3's response, an undefined RSPREG3), a clock step to
  "the next deadline" (QEMU's timers, not the model's), a read of the card
  image (QEMU's file), a poll of the interrupt line with nothing queued;
* at the end of the scenario (:meth:`OptimisticLockstep.flush`, before the
  runner looks at QEMU's card image).

A batch whose answers are exactly the texts the model's values predict
(:func:`expected_answers`), with no interrupt event and the line at the
model's level throughout, agrees at a glance; any other is compared
operation by operation.  Answers are compared in order: the value, the interrupt line's level after
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

import base64
from dataclasses import dataclass
from typing import Any

from harness.check.lockstep import Divergence, LockstepTarget, Step, _slim, endless
from harness.errors import QemuError
from harness.hwdefs import sdhci
from harness.model.target import ModelTarget
from harness.qemu.qtest import B64_CHUNK
from harness.qemu.target import QemuTarget
from harness.target import Target

#: Operations queued before the queue goes to QEMU: small, so that QEMU
#: runs each batch while the model runs the next and has little left to do
#: when the harness must wait for it (a sync point, the end of a scenario).
BATCH = 32
#: Most request bytes in one pipelined write.  A larger single operation (a
#: big ``mem_write``) goes alone, nothing else in flight; its answers are
#: ``OK`` lines.
BATCH_BYTES = 1 << 15
#: Most request bytes sent and not yet answered: more waits until what is
#: in flight has been read.  What QEMU has yet to read, and its answers
#: (up to 64 KiB per ``b64read``), then stay within the socket's buffers,
#: so it never waits for the harness to read while the harness waits for
#: it to read.
IN_FLIGHT_BYTES = 2 * BATCH_BYTES


#: The response registers: the only reads the model may adopt QEMU's value
#: of (``ModelTarget.may_adopt``), so the only ones it is asked about.
_RSP = (sdhci.RSPREG0.offset, sdhci.RSPREG3.offset + sdhci.RSPREG3.width)


#: The byte of the Command register whose write issues a command (2.2.7).
_CMD_BYTE = sdhci.CMDREG.offset + 1


class Fallback(Exception):
    """The optimistic attempt was abandoned (why); run step by step, or
    again optimistically with a sync point at step :attr:`at` (the step that
    differed, when one did; :attr:`read`: the register read whose value
    differed there, if it was one)."""

    def __init__(self, why: str, at: int | None = None,
                 read: tuple[int, int] | None = None) -> None:
        super().__init__(why)
        self.at = at
        self.read = read

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fallback, (str(self), self.at, self.read))


def _read_of(op: str, args: tuple[Any, ...], model: Any, qemu: Any) -> tuple[int, int] | None:
    """``(offset, size)`` of a register read whose value differed."""
    return (int(args[0]), int(args[1])) if op == "read" and model != qemu else None


#: An operation the model has run and QEMU has yet to answer: its index,
#: name, arguments, the model's answer, the step's note, the model's
#: interrupt events during it and level after it, and its qtest lines (none:
#: a poll of the interrupt line, or an operation on nothing).
_Queued = tuple[int, str, tuple[Any, ...], Any, str, tuple[bool, ...], bool, list[str]]


def expected_answers(op: str, value: Any, clock_base: int, lines: int) -> list[str] | None:
    """QEMU's qtest answers to ``op`` (sent as ``lines`` lines) if it
    answers ``value``, the model's prediction, as QEMU prints them
    (``qtest.c``: ``OK 0x%016x`` for a read, ``OK NS`` for a clock step,
    ``OK BASE64`` for each ``b64read`` chunk, ``OK`` for a write);
    ``None``: not predicted as text.  A batch whose answers are exactly
    these texts, with no interrupt event, agrees without parsing one; any
    other text (a build that prints them otherwise, too) is parsed and
    compared operation by operation."""
    if op == "read":
        return [f"OK 0x{value:016x}"]
    if op in ("write", "mem_write"):
        return ["OK"] * lines
    if op == "clock_step":
        return [f"OK {value + clock_base}"]
    if op == "mem_read" and isinstance(value, bytes):
        return [f"OK {base64.b64encode(value[pos:pos + B64_CHUNK]).decode()}"
                for pos in range(0, len(value), B64_CHUNK)]
    return None


@dataclass
class Counters:
    """What the optimistic target did: batches sent, operations queued,
    operations run one round trip at a time (sync points), and batches
    checked by comparing QEMU's answers as text in one go."""

    batches: int = 0
    queued: int = 0
    synced: int = 0
    exact: int = 0


@dataclass
class _Batch:
    """Operations queued together, with what QEMU must answer for the batch
    to agree at a glance: every answer's text (``None``: some operation's
    is not predicted as text), no interrupt event, and the line at one
    level throughout (``levels``: the model's levels after each operation
    and at each poll)."""

    ops: list[_Queued]
    lines: list[str]
    expect: list[str] | None
    events: bool
    levels: set[bool]
    #: The model's answer to the batch's last clock step (ns since reset).
    clock: int | None
    #: The request's length in bytes.
    nbytes: int = 0


class OptimisticLockstep(LockstepTarget):
    """A :class:`LockstepTarget` over the model and a live QEMU that runs
    ahead on the model's answers (see the module docstring).

    A difference found at an operation that ran one round trip (a sync
    point) is a :class:`Fallback` too, not a divergence report: the report
    is step mode's, so this target keeps no history of its own but with
    ``history=None`` (every step kept, for the equivalence test)."""

    def __init__(self, model: ModelTarget, qemu: QemuTarget, *, batch: int = BATCH,
                 sync_at: frozenset[int] = frozenset(),
                 sync_reads: frozenset[tuple[int, int]] = frozenset(), **kw: Any) -> None:
        self._new_batch()
        #: Batches sent and not yet answered, and their request bytes.
        self._inflight: list[_Batch] = []
        self._inflight_bytes = 0
        #: QEMU's interrupt level after the last batch checked (None: read it).
        self._level: bool | None = None
        super().__init__(model, qemu, **kw)
        self.model_target = model
        self.qemu_target = qemu
        self.batch = batch
        self.counters = Counters()
        #: A register read's qtest line, its length, the model's reader of
        #: that register and whether the command tracker follows it, by
        #: (offset, size) (:meth:`read`'s every call).
        self._hot: dict[tuple[int, int], tuple[list[str], int, Any, bool]] = {}
        #: Response register reads that ran one round trip since the last
        #: command was issued: the model has QEMU's value (adopted or
        #: agreed), so the same read is predicted until the next command
        #: (a wrong prediction is a fall back like any other).
        self._confirmed: set[tuple[int, int]] = set()
        #: A register write's qtest line but its value, the value's mask, and
        #: whether the command tracker follows it, by (offset, size).
        self._writes: dict[tuple[int, int], tuple[str, int, bool]] = {}
        self._last: tuple[bool, str, tuple[bool, ...]] = (False, "", ())
        #: Steps that run one round trip whatever they are: where an earlier
        #: attempt of the same run differed.  There the scoreboard records
        #: the difference and the model takes QEMU's value (a run that goes on
        #: past differences, :mod:`harness.check.scoreboard`); every step is
        #: then kept in the (bounded) history, for those reports.
        self.sync_at = sync_at
        #: Register reads that run one round trip throughout: one whose
        #: value differed in an earlier attempt (a status bit a build sets
        #: after every transfer would otherwise cost an attempt each time).
        self.sync_reads = sync_reads
        self._keep = self._history.maxlen is None or bool(sync_at) or bool(sync_reads)
        #: The model's interrupt events during the operation just run (none
        #: when they are not compared) and its level after it.
        self._irq_state = model.irq_state if self._events is not None else self._level_only

    def _new_batch(self) -> None:
        self._queue: list[_Queued] = []
        self._qlines: list[str] = []
        self._expect: list[str] | None = []
        self._qevents = False
        self._qlevels: set[bool] = set()
        self._qclock: int | None = None
        self._bytes = 0

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
        if self.stop_after is not None or (self.sync_at and self.count in self.sync_at):
            return True
        if op == "read":
            return args[:2] in self.sync_reads or self.model_target.may_adopt(op, args)
        if op == "clock_step":
            return args[0] is None or not self.qemu_target.session.has_clock
        return op not in ("write", "mem_read", "mem_write")

    def _synced(self, op: str, *args: Any, compare: bool = True) -> Step:
        """``op`` one round trip, once QEMU has answered everything queued;
        a divergence there is a :class:`Fallback` (step mode reports it)."""
        self.flush()
        self.counters.synced += 1
        try:
            return super()._step(op, *args, compare=compare)
        except Divergence as d:
            s = d.step
            raise Fallback(f"step {s.index} differs: {s.describe()}", s.index,
                           _read_of(s.op, s.args, s.model, s.qemu)) from None

    def _step(self, op: str, *args: Any, compare: bool = True) -> Step:
        if self._sync(op, args):
            return self._synced(op, *args, compare=compare)
        index = self.count
        m = self._ahead(op, args)
        return Step(index, op, args, m, m, self._last[0], self._last[0], self._last[1],
                    self._last[2], self._last[2], self.layout)

    def _do(self, op: str, *args: Any, compare: bool = True) -> Any:
        if self._sync(op, args):
            return self._synced(op, *args, compare=compare).qemu
        return self._ahead(op, args)

    # The driver's hot path, a register access, without the generic dispatch.

    def read(self, offset: int, size: int) -> int:
        """:meth:`_ahead` for a register read, without the generic dispatch
        (the data port is read 128 times a block)."""
        args = (offset, size)
        if (self.sync_at and self.count in self.sync_at) or args in self.sync_reads:
            return int(self._synced("read", offset, size).qemu)
        if (self.stop_after is not None or _RSP[0] - size < offset < _RSP[1]) \
                and args not in self._confirmed and self._sync("read", args):
            value = int(self._synced("read", offset, size).qemu)
            if offset + size <= sdhci.RSPREG3.offset:  # not an Auto CMD12's
                self._confirmed.add(args)
            return value
        lines, nbytes, mread, follows = self._hot.get(args) or self._line_of(args)
        values = [mread(offset, size)]
        self._queue_reads(args, lines, nbytes, values, *self._irq_state())
        if follows:
            self.tracker.after_reads(offset, size, values)
        return int(values[0])

    def _level_only(self) -> tuple[tuple[bool, ...], bool]:
        """:attr:`_irq_state` where interrupt events are not compared."""
        return (), self.model_target.irq_level()

    def read_burst(self, offset: int, size: int, count: int) -> list[int]:
        """``count`` reads of one register (the driver's block through the
        data port), each queued and counted as :meth:`read` would, in one
        loop: the same steps, qtest lines and predictions."""
        args = (offset, size)
        if self.stop_after is not None or _RSP[0] - size < offset < _RSP[1] \
                or args in self.sync_reads or (self.sync_at and any(
                    self.count <= i < self.count + count for i in self.sync_at)):
            return [self.read(offset, size) for _ in range(count)]
        return self._queue_read(args, self._line_of(args), count)

    def _line_of(self, args: tuple[int, int]) -> tuple[list[str], int, Any, bool]:
        """A register read's qtest line(s), their length, the model's reader
        of it and whether the command tracker follows it: made once."""
        cached = self._hot.get(args)
        if cached is None:
            lines = self.qemu_target.op_lines("read", args)
            cached = (lines, sum(len(line) + 1 for line in lines),
                      self.model_target.reader(*args), self.tracker.follows(*args))
            if len(self._hot) < 4096:
                self._hot[args] = cached
        return cached

    def _queue_read(self, args: tuple[int, int], line: tuple[list[str], int, Any, bool],
                    count: int) -> list[int]:
        """Run ``count`` reads of ``args`` on the model and queue each for
        QEMU with its prediction, interrupt level and events.  Reads that
        only take bytes from inside a data port block (``read_run``) are
        taken from the model at once: they leave the line as it was."""
        offset, size = args
        lines, nbytes, mread, follows = line
        out: list[int] = []
        while len(out) < count:
            values = self.model_target.read_run(offset, size, count - len(out)) \
                if count - len(out) > 1 else []
            if not values:
                values = [mread(offset, size)]
            self._queue_reads(args, lines, nbytes, values, *self._irq_state())
            if follows:
                self.tracker.after_reads(offset, size, values)
            out += values
        return out

    def _queue_reads(self, args: tuple[int, int], lines: list[str], nbytes: int,
                     values: list[int], em: tuple[bool, ...], irq: bool) -> None:
        """Queue a read of ``args`` for each of ``values`` (the model's
        answers, in order): the line at ``irq`` after each, the events
        ``em`` during the first."""
        for m in values:
            if self._queue and self._bytes + nbytes > BATCH_BYTES:
                self._full()
            self._queue.append((self.count, "read", args, m, "", em, irq, lines))
            self._qlines += lines
            if self._expect is not None:
                self._expect.append(f"OK 0x{m:016x}")
            if em:
                self._qevents = True
            self._qlevels.add(irq)
            self._bytes += nbytes
            self._last = (irq, "", em)
            self.count += 1
            if len(self._queue) >= self.batch:
                self._full()
            em = ()

    def write_burst(self, offset: int, size: int, values: list[int]) -> None:
        """:meth:`write` of each of ``values`` to one register (a block
        through the data port), in order."""
        for v in values:
            self.write(offset, size, v)

    def image_read(self, offset: int, length: int) -> bytes:
        """Both cards' bytes, compared here once QEMU has answered everything
        queued: equal, the step is counted (and kept, with every step kept)
        without the digests a bounded history would make; else a
        :class:`Fallback`."""
        if self._keep or self.stop_after is not None:
            return bytes(self._do("image_read", offset, length))
        self.flush()
        self.counters.synced += 1
        m = self.model.image_read(offset, length)
        q = self._qemu.image_read(offset, length)
        if m != q:
            raise Fallback(f"step {self.count} differs: the card images at {offset:#x}",
                           self.count)
        self.count += 1
        return bytes(q)

    def write(self, offset: int, size: int, value: int) -> None:
        """:meth:`_ahead` for a register write, its qtest line made from
        the one :meth:`QemuTarget.op_lines` gives for that register."""
        if self.stop_after is not None or (self.sync_at and self.count in self.sync_at):
            self._synced("write", offset, size, value)
            return
        args = (offset, size, value)
        shape = self._writes.get((offset, size))
        if shape is None:
            head = self.qemu_target.op_lines("write", (offset, size, 0))[0]
            shape = (head[:-len("0x0")], (1 << (8 * size)) - 1,
                     self.tracker.follows(offset, size))
            if len(self._writes) < 4096:
                self._writes[(offset, size)] = shape
        note = self.tracker.before("write", args, self.count)
        if offset <= _CMD_BYTE < offset + size:
            self._confirmed.clear()
        self.model.write(offset, size, value)
        lines = [f"{shape[0]}{value & shape[1]:#x}"]
        nbytes = len(lines[0]) + 1
        em, irq = self._irq_state()
        if self._queue and self._bytes + nbytes > BATCH_BYTES:
            self._full()
        self._queue.append((self.count, "write", args, None, note, em, irq, lines))
        self._qlines += lines
        if self._expect is not None:
            self._expect.append("OK")
        if em:
            self._qevents = True
        self._qlevels.add(irq)
        self._bytes += nbytes
        self._last = (irq, note, em)
        self.count += 1
        if shape[2]:
            self.tracker.after_op("write", args, None)
        if len(self._queue) >= self.batch:
            self._full()

    def _ahead(self, op: str, args: tuple[Any, ...]) -> Any:
        """Run ``op`` on the model, queue it for QEMU; the model's answer."""
        note = self.tracker.before(op, args, self.count) if op == "write" else ""
        m = getattr(self.model, op)(*args)
        if op == "read":
            lines, size = self._line_of(args[:2])[:2]
        else:
            lines = self.qemu_target.op_lines(op, args)
            size = sum(len(line) + 1 for line in lines)
        em, irq = self._irq_state()
        if size > BATCH_BYTES:  # a large write: alone, nothing else in flight
            self.flush()
        elif self._queue and self._bytes + size > BATCH_BYTES:
            self._full()
        self._queue.append((self.count, op, args, m, note, em, irq, lines))
        self._qlines += lines
        if self._expect is not None:
            if op == "read":
                self._expect.append(f"OK 0x{m:016x}")
            else:
                more = expected_answers(op, m, self.qemu_target.clock_base, len(lines))
                if more is None:
                    self._expect = None
                else:
                    self._expect += more
        if op == "clock_step":
            self._qclock = m
            if why := endless(self.model):  # where it stopped is step mode's to say
                raise Fallback(f"the model stopped at step {self.count}: {why}")
        if em:
            self._qevents = True
        self._qlevels.add(irq)
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
        if self.sync_at and self.count in self.sync_at:
            self.flush()
        if not self._queue and not self._inflight:
            try:
                return super().irq_level()
            except Divergence as d:
                raise Fallback(f"interrupt line polled at step {d.step.index}: "
                               f"{d.step.describe()}", d.step.index) from None
        m = self.model.irq_level()
        self._queue.append((self.count, "irq_level", (), m, "", (), m, []))
        self._qlevels.add(m)
        return m

    def flush(self) -> None:
        """Send what is queued, then read and compare every batch in flight
        with its predictions, in order: QEMU has then answered everything.
        :class:`Fallback` at the first difference or failure."""
        if self._queue:
            self._send()
        if self._inflight:
            self._receive()
        self._level = None

    def _full(self) -> None:
        """The queue holds a batch: send it, QEMU runs it while the model
        runs the next.  What is in flight is read and checked first where
        this batch would take it past :data:`IN_FLIGHT_BYTES`."""
        if self._inflight and self._inflight_bytes + self._bytes > IN_FLIGHT_BYTES:
            self._receive()
        self._send()

    def abandon(self) -> None:
        """Read and drop every answer still due, so that the QEMU process can
        be reset and reused; nothing is compared."""
        self._new_batch()
        q = getattr(self.qemu_target, "qtest", None)  # None: it never got that far
        while q is not None and self._inflight and not q.closed:
            b = self._inflight.pop(0)
            try:
                q.read_answers(len(b.lines))
            except QemuError:
                pass
        self._inflight.clear()
        self._inflight_bytes = 0
        if q is not None:
            del q.irq_events[:]

    def _send(self) -> None:
        b = _Batch(self._queue, self._qlines, self._expect, self._qevents, self._qlevels,
                   self._qclock, self._bytes)
        self._new_batch()
        self._inflight.append(b)
        self._inflight_bytes += b.nbytes
        try:
            self.qemu_target.qtest.send_lines(b.lines)
        except QemuError as err:  # QEMU gone or hung
            self.abandon()
            raise Fallback(f"QEMU during a batch: {err}") from err

    def _receive(self) -> None:
        """Read the answers to every batch in flight, in one go, and compare
        each batch's with its predictions, in order."""
        batches, self._inflight, self._inflight_bytes = self._inflight, [], 0
        q, line = self.qemu_target.qtest, self.qemu_target.irq_line
        level = q.irq_levels.get(line, False) if self._level is None else self._level
        mark = len(q.irq_events)
        try:
            texts, marks = q.read_answers(sum(len(b.lines) for b in batches))
        except QemuError as err:  # a FAIL answer, QEMU gone or hung
            self.abandon()
            raise Fallback(f"QEMU during a batch: {err}") from err
        pos = 0
        for b in batches:
            end = pos + len(b.lines)
            level, mark = self._check(b, texts[pos:end], None if marks is None else marks[pos:end],
                                      level, mark)
            pos = end
        del q.irq_events[:]
        self._level = level

    def _check(self, b: _Batch, texts: list[str], marks: list[int] | None, level: bool,
               mark: int) -> tuple[bool, int]:
        """Compare one batch's answers (``marks``: the count of interrupt
        events before each, from ``mark`` on; ``None``: no event among them)
        with its predictions; QEMU's level and the event count after it."""
        self.counters.batches += 1
        self.counters.queued += len(b.ops)
        if (b.expect is not None and not b.events and (not marks or marks[-1] == mark)
                and b.levels <= {level} and texts == b.expect):
            # Every answer as predicted, no interrupt event, the line steady.
            self.counters.exact += 1
            if b.clock is not None:
                self.qemu_target.now = b.clock + self.qemu_target.clock_base
            if self._keep:
                self._history.extend(
                    _slim(st) if st.op == "mem_read" else st
                    for st in (Step(index, op, args, m, m, irq, irq, note, em, em, self.layout)
                               for index, op, args, m, note, em, irq, _ in b.ops
                               if op != "irq_level"))
            return level, mark
        return self._compare(b.ops, list(zip(texts, marks or [mark] * len(texts), strict=True)),
                             level, mark)

    def _compare(self, queue: list[_Queued], answers: list[tuple[str, int]], level: bool,
                 mark: int) -> tuple[bool, int]:
        """Compare a batch's answers with its predictions operation by
        operation (:class:`Fallback` at the first difference); with every
        step kept, record them.  QEMU's interrupt level and the event count
        after the batch."""
        q, line = self.qemu_target.qtest, self.qemu_target.irq_line
        events = q.irq_events
        with_events = self._events is not None
        i = 0
        for index, op, args, m, note, em, irq, lines in queue:
            if op == "irq_level":
                if m != level:
                    self.abandon()
                    raise Fallback(f"interrupt line polled before step {index}: model "
                                   f"{int(m)}, QEMU {int(level)}", index)
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
                step = Step(index, op, args, m, value, irq, level, note, em, eq, self.layout)
                self.abandon()
                raise Fallback(f"step {index} differs: {step.describe()}", index,
                               _read_of(op, args, m, value))
            if self._keep:
                st = Step(index, op, args, m, value, irq, level, note, em, eq, self.layout)
                self._history.append(_slim(st) if op == "mem_read" else st)
        return level, mark
