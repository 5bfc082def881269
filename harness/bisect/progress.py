"""The bisect's progress display: step, steps left (~log2), phase, elapsed.

Each step and each phase's outcome is a line of its own; while a phase
runs, the shared status line (:mod:`harness.progress`) shows it: ticking
its elapsed time on a terminal, a plain line at least every 30 s elsewhere
(a QEMU build of many minutes is never silent in a CI log).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import IO

from harness.progress import StatusLine
from harness.progress import fmt_duration as fmt_duration


class BisectProgress:
    """Prints to ``stream`` (stderr by default); ``live`` ticks on a terminal."""

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.line = StatusLine(self.stream, live=live, prefix="")  # type: ignore[arg-type]
        self.live = self.line.is_live()
        self.t0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, text: str) -> None:
        self.line.say(text)

    def step(self, number: int, left: int | None, commit: str, subject: str) -> None:
        """A step begins: ``[step 3 of ~5, 0:41 elapsed] 1a2b3c4d5e6f subject``.

        ``left`` is how many steps git expects after this one (about log2 of
        the commits still in range).
        """
        total = f" of ~{number + left}" if left is not None else ""
        self.say(f"[step {number}{total}, {fmt_duration(self.elapsed())} elapsed] "
                 f"{commit[:12]} {subject}")

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[list[str]]:
        """Show ``name`` running; the caller appends the outcome text to the list."""
        result: list[str] = []
        t0 = time.monotonic()
        self.line.show(f"    {name} ...")
        try:
            yield result
        finally:
            self.line.clear()
            outcome = result[0] if result else "interrupted"
            self.say(f"    {name}: {outcome} ({fmt_duration(time.monotonic() - t0)})")
