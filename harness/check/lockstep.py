"""Run one operation sequence on the model and on QEMU at once.

``LockstepTarget`` is itself a Target: a scenario (usually through the host
driver) runs once against it, and every operation goes to both targets.
After each operation the results, the interrupt levels and, when both
targets report them (:class:`harness.target.IrqEvents`), the interrupt
line's raise/lower events during the operation are compared; guest memory
is compared where the driver reads it back and, range by range, where it
asks (:meth:`LockstepTarget.compare_memory`: the DMA arena).  A difference
that no quirk explains is a :class:`Divergence` naming the differing step,
the SD command in progress and, inside a PIO transfer, the block and byte
the differing word belongs to; it goes to the run's
:class:`~harness.check.scoreboard.Scoreboard`, which either stops the
scenario there (first-only) or records it, has the model take QEMU's value
for what differed, and lets the run go on.  When they agree, or a quirk
explains the difference, the scenario goes on with QEMU's answer.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from harness.check.divergence import HISTORY_LINES as HISTORY_LINES
from harness.check.divergence import Divergence as Divergence
from harness.check.divergence import collapse as collapse
from harness.check.omap_transfer import OmapTracker
from harness.check.pl181_transfer import Pl181Tracker
from harness.check.quirks import QuirkSet
from harness.check.recording import Departed
from harness.check.scoreboard import Scoreboard, signature
from harness.check.sdhost_transfer import SdhostTracker
from harness.check.spi_transfer import SifiveSpiTracker, SpiTracker
from harness.check.step import MODEL_QEMU, Sides, StepTracker
from harness.check.step import TRACKERS as TRACKERS
from harness.check.step import Step as Step
from harness.check.sunxi_transfer import SunxiTracker
from harness.check.transfer import CommandTracker
from harness.hwdefs.boards import Board
from harness.hwdefs.layouts import layout, layout_of
from harness.images import Recipe
from harness.ledger import KnownDifference
from harness.target import IrqEvents, Target, board_of


def decode_difference(step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
    """Which named register fields differ between the model's and QEMU's value
    (the registers of the step's layout; the sides named by ``sides``)."""
    ref, other = sides.reference, sides.other
    out: list[str] = []
    if step.op == "read" and isinstance(step.model, int) and isinstance(step.qemu, int):
        offset, size = step.args[0], step.args[1]
        for reg in layout(step.layout).registers_in(offset, size):
            m, q = reg.part(offset, step.model), reg.part(offset, step.qemu)
            if m == q:
                continue
            out.append(f"{reg.name}: {ref} {reg.describe(m)}")
            out.append(f"{' ' * len(reg.name)}  {sides.value(other)}{reg.describe(q)}")
            for name, a, b in reg.diff(m, q):
                out.append(f"    {name}: {ref} {a:#x}, {other} {b:#x}")
    elif isinstance(step.model, bytes) and isinstance(step.qemu, bytes):
        for i, (a, b) in enumerate(zip(step.model, step.qemu, strict=False)):
            if a != b:
                out.append(f"first differing byte at +{i:#x}: {ref} {a:#04x}, {other} {b:#04x}")
                break
        else:
            out.append(f"lengths differ: {ref} {len(step.model)}, {other} {len(step.qemu)}")
    return out


def memory_difference(addr: int, model: bytes, qemu: bytes, zone_of: Callable[[int], str],
                      sides: Sides = MODEL_QEMU) -> list[str]:
    """The first and last differing guest address, the zone each lies in,
    and the bytes around the first on both sides (named by ``sides``)."""
    ref, other = sides.reference, sides.other
    diff = [i for i, (a, b) in enumerate(zip(model, qemu, strict=False)) if a != b]
    if not diff:
        return [f"lengths differ: {ref} {len(model)}, {other} {len(qemu)}"]
    first, last = diff[0], diff[-1]
    lo, hi = first & ~7, (first & ~7) + 16
    out = [
        f"first differing byte at {addr + first:#x}: {ref} {model[first]:#04x}, "
        f"{other} {qemu[first]:#04x}",
        f"  in {zone_of(addr + first)}",
        f"{len(diff)} bytes differ, the last at {addr + last:#x}",
    ]
    if last != first:
        out.append(f"  in {zone_of(addr + last)}")
    out.append(f"bytes at {addr + lo:#x}: {ref} {model[lo:hi].hex(' ')}")
    out.append(f"{' ' * len(f'bytes at {addr + lo:#x}:')} {sides.value(other)}"
               f"{qemu[lo:hi].hex(' ')}")
    return out


def _slim(step: Step) -> Step:
    """``step`` for the history: large contents (memory, image) replaced by
    digests, which keep what a report shows (lengths are in the arguments,
    and whether the two sides or two repetitions are equal)."""
    if isinstance(step.model, bytes) and isinstance(step.qemu, bytes) and (
            len(step.model) > 64 or len(step.qemu) > 64):
        model = _digest(step.model)
        qemu = model if step.qemu == step.model else _digest(step.qemu)
        return replace(step, model=model, qemu=qemu)
    return step


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class StopRun(Exception):
    """The run reached the step it was asked to stop after (``stop_after``)."""


class ModelStopped(Exception):
    """The model stopped a transfer QEMU keeps running (an ADMA chain that
    never ends, stepped for longer than the model's budget): what follows
    that step can no longer be compared.  ``args``: the step, and why."""


def endless(model: Any) -> str | None:
    """Why ``model`` stopped a transfer that QEMU keeps running, if it did;
    None when it runs on, or when what it predicts is QEMU aborting (a card
    assertion, the buffer index past the buffer: the run goes on to see
    QEMU die)."""
    hung = getattr(getattr(model, "sdhci", None), "hung", None)
    card = getattr(model, "card", None)
    if not hung or getattr(card, "fatal", None) is not None or "QEMU asserts" in hung:
        return None
    return str(hung)


#: The trackers, each bound to its ``Board.variant`` by its class
#: (``@TRACKERS.controller``); imported above so that all are bound.
_BOUND = (SpiTracker, SifiveSpiTracker, Pl181Tracker, SunxiTracker, SdhostTracker, OmapTracker)


def tracker_for(board: Board | None, recipe: Recipe | None) -> StepTracker:
    """The follower of the commands of ``board``'s controller (the PC's: ``None``)."""
    if board is not None and board.variant in TRACKERS:
        return TRACKERS[board.variant]()
    return CommandTracker(recipe)


class LockstepTarget:
    """A Target that drives ``model`` and ``qemu`` together and compares them.

    ``stop_after`` ends the run (:class:`StopRun`) before the step after that
    index: a strict retry needs no more than the steps up to the divergence
    it is trying to explain.  ``scoreboard`` takes the differences no quirk
    explains (default: the first one ends the run)."""

    def __init__(
        self,
        model: Target,
        qemu: Target,
        *,
        quirks: QuirkSet | None = None,
        history: int | None = 400,
        recipe: Recipe | None = None,
        stop_after: int | None = None,
        scoreboard: Scoreboard | None = None,
    ) -> None:
        self.name = f"lockstep({model.name}, {qemu.name})"
        self.scoreboard = scoreboard or Scoreboard(1)
        #: what the reports call the two sides: the scoreboard's
        self.sides = self.scoreboard.sides
        self.stop_after = stop_after
        self.model = model
        self.qemu = qemu
        self.quirks = quirks or QuirkSet(())
        self.applied: list[tuple[KnownDifference, Step]] = []
        self.reconciled: list[Step] = []
        self._history: deque[Step] = deque(maxlen=history)
        self.count = 0
        self.mem_regions: list[tuple[int, int]] = []
        #: Guest memory ranges compared with :meth:`compare_memory`, by start.
        self.watched: dict[int, tuple[int, Callable[[int], str]]] = {}
        #: The command in progress and the data port position, for reports;
        #: ``recipe`` is the card image's, when the scenario's image has one.
        self.tracker = tracker_for(board_of(model), recipe)
        #: The layout that names the registers of this board's steps.
        self.layout = layout_of(board_of(model)).name
        # Interrupt events are compared when both sides report them; what
        # happened before the lockstep started is not part of the run.
        self._events: tuple[IrqEvents, IrqEvents] | None = None
        if isinstance(model, IrqEvents) and isinstance(qemu, IrqEvents):
            self._events = (model, qemu)
            model.irq_events()
            qemu.irq_events()

    @property
    def board(self) -> Board | None:
        """The board both sides mirror (the model's), for the driver."""
        return board_of(self.model)

    def _do(self, op: str, *args: Any, compare: bool = True) -> Any:
        return self._step(op, *args, compare=compare).qemu

    def _step(self, op: str, *args: Any, compare: bool = True) -> Step:
        """Run ``op`` on both sides, compare, record; the step (full contents)."""
        if self.stop_after is not None and self.count > self.stop_after:
            raise StopRun(self.count)
        note = self.tracker.before(op, args, self.count)
        m = getattr(self.model, op)(*args)
        try:
            q = getattr(self.qemu, op)(*args)
        except Departed as e:  # a replayed QEMU: the run left the recorded path
            step = Step(self.count, op, args, m, None, self.model.irq_level(), False, note,
                        layout=self.layout)
            raise Divergence(step, "path", list(self._history), [str(e)],
                             context=self.tracker.context(step, self.sides),
                             sides=self.sides) from None
        em: tuple[bool, ...] = ()
        eq: tuple[bool, ...] = ()
        if self._events is not None:
            em, eq = tuple(self._events[0].irq_events()), tuple(self._events[1].irq_events())
        step = Step(self.count, op, args, m, q, self.model.irq_level(), self.qemu.irq_level(),
                    note, em, eq, self.layout)
        self.count += 1
        if compare and m != q:
            self._differs(step, "result")
        if step.irq_differs:
            self._differs(step, "irq")
        self.tracker.after(step)
        self._history.append(_slim(step))
        if op == "clock_step" and (why := endless(self.model)):
            raise ModelStopped(step.index, why)
        return step

    def compare_memory(self, addr: int, length: int, zone_of: Callable[[int], str]) -> None:
        """Read ``length`` bytes of guest memory at ``addr`` on both sides;
        a difference no quirk explains is a "memory" divergence naming the
        first differing address, its zone (``zone_of``) and the bytes.  The
        range is remembered for :meth:`compare_watched` (replacing ranges it
        covers)."""
        for start, (n, _) in list(self.watched.items()):
            if addr <= start and start + n <= addr + length:
                del self.watched[start]
        self.watched[addr] = (length, zone_of)
        step = self._step("mem_read", addr, length, compare=False)
        if step.model == step.qemu:
            return
        quirk = self.quirks.explain(step, "result")
        if quirk is not None:
            self.applied.append((quirk, step))
            return
        self._diverged(Divergence(step, "memory", list(self._history)[:-1],
                                  memory_difference(addr, step.model, step.qemu, zone_of,
                                                    self.sides),
                                  context=self.tracker.context(step, self.sides),
                                  sides=self.sides))

    def compare_watched(self) -> None:
        """Compare every range :meth:`compare_memory` has seen, again."""
        for addr, (length, zone_of) in sorted(self.watched.items()):
            self.compare_memory(addr, length, zone_of)

    def _differs(self, step: Step, kind: str) -> None:
        # Values QEMU draws at random (the RCA since QEMU 9.x) cannot be
        # predicted; the model says which, and adopts QEMU's draw.
        reconcile = getattr(self.model, "reconcile", None)
        if kind == "result" and reconcile is not None and reconcile(
            step.op, step.args, step.model, step.qemu
        ):
            self.reconciled.append(step)
            return
        quirk = self.quirks.explain(step, kind)
        if quirk is not None:
            self.applied.append((quirk, step))
            return
        self._diverged(Divergence(step, kind, list(self._history),
                                  decode_difference(step, self.sides),
                                  context=self.tracker.context(step, self.sides),
                                  sides=self.sides))

    def _diverged(self, d: Divergence) -> None:
        """A difference nothing explains: the scoreboard's (first-only: raised)."""
        command = getattr(self.tracker, "command", None)
        state = getattr(getattr(self.model, "card", None), "state", None)
        d.signature = signature(d, command.name if command is not None else "",
                                state.name.lower() if state is not None else "")
        if self.scoreboard.first_only:
            raise d
        # the reproducer's prefix: QEMU's qtest commands so far (none for a model)
        self.scoreboard.record(d, getattr(self.qemu, "trace_len", 0))

    # -- Target ------------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        return int(self._do("read", offset, size))

    def write(self, offset: int, size: int, value: int) -> None:
        self._do("write", offset, size, value)

    def mem_read(self, addr: int, length: int) -> bytes:
        self.mem_regions.append((addr, length))
        return bytes(self._do("mem_read", addr, length))

    def mem_write(self, addr: int, data: bytes) -> None:
        self.mem_regions.append((addr, len(data)))
        self._do("mem_write", addr, data)

    def clock_step(self, ns: int | None = None) -> int:
        # Stepping to "the next deadline" depends on every timer of the
        # machine, which the model does not have: only explicit steps compare.
        return int(self._do("clock_step", ns, compare=ns is not None))

    def irq_level(self) -> bool:
        m = self.model.irq_level()
        try:
            q = self.qemu.irq_level()
        except Departed as e:
            step = Step(self.count, "irq_level", (), m, None, m, False, layout=self.layout)
            raise Divergence(step, "path", list(self._history), [str(e)]) from None
        if m != q:
            step = Step(self.count, "irq_level", (), m, q, m, q, layout=self.layout)
            self._differs(step, "irq")
        return q

    def image_read(self, offset: int, length: int) -> bytes:
        return bytes(self._do("image_read", offset, length))

    def flush(self) -> None:
        """Nothing waits for QEMU here: every step has been compared (see
        :class:`harness.check.optimistic.OptimisticLockstep`)."""

    def close(self) -> None:
        self.model.close()
        self.qemu.close()

    def history(self) -> list[Step]:
        return list(self._history)
