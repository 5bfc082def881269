"""Virtual time for the model, moved only by ``clock_step`` like qtest's."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True)
class _Timer:
    deadline: int
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class TimerHandle:
    """A pending timer; ``cancel()`` it to drop it."""

    def __init__(self, timer: _Timer) -> None:
        self._timer = timer

    def cancel(self) -> None:
        self._timer.cancelled = True

    @property
    def pending(self) -> bool:
        return not self._timer.cancelled

    @property
    def deadline(self) -> int:
        return self._timer.deadline


class VirtualClock:
    """QEMU_CLOCK_VIRTUAL for the model: nanoseconds, timers, no real time.

    ``step(ns)`` fires every timer whose deadline falls within the step, in
    deadline order, with ``now`` set to each deadline as it fires (as qtest's
    ``clock_step`` does); ``step(None)`` moves to the next deadline.
    """

    def __init__(self, now: int = 0) -> None:
        self.now = now
        self._heap: list[_Timer] = []
        self._seq = itertools.count()

    def schedule(self, delay_ns: int, callback: Callable[[], None]) -> TimerHandle:
        t = _Timer(self.now + max(0, delay_ns), next(self._seq), callback)
        heapq.heappush(self._heap, t)
        return TimerHandle(t)

    def next_deadline(self) -> int | None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0].deadline if self._heap else None

    def step(self, ns: int | None = None) -> int:
        if ns is None:
            nd = self.next_deadline()
            target = self.now if nd is None else max(nd, self.now)
        else:
            if ns < 0:
                raise ValueError("clock_step takes a non-negative step")
            target = self.now + ns
        while True:
            nd = self.next_deadline()
            if nd is None or nd > target:
                break
            t = heapq.heappop(self._heap)
            self.now = max(self.now, t.deadline)
            t.cancelled = True
            t.callback()
        self.now = target
        return self.now
