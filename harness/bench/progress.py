"""The benchmarks' progress: ``part build [i/n] step`` on the shared status
line (:mod:`harness.progress`: live on a terminal, a plain line at least
every 30 s elsewhere)."""

from __future__ import annotations

from typing import TextIO

from harness.progress import StatusLine


class BenchProgress:
    """Counts a benchmark's steps and shows the current one; ``force``:
    live (True) or plain lines (False) whatever ``stream`` is.  :meth:`clear`
    takes the line down (call it before printing a table)."""

    def __init__(self, part: str, total: int, *, stream: TextIO | None = None,
                 force: bool | None = None, tick: float = 1.0) -> None:
        self.part = part
        self.total = max(total, 1)
        self.done = 0
        self.last = ""
        self.line = StatusLine(stream, live=force, tick=tick)

    def step(self, build: str, what: str, *, advance: bool = True) -> None:
        """Count one step (unless ``advance`` is false) and show it."""
        if advance:
            self.done = min(self.done + 1, self.total)
        self.last = f"{self.part} {build} [{self.done}/{self.total}] {what}"
        self.line.show(self.last)

    def clear(self) -> None:
        """Take the line down."""
        self.line.clear()

    def __enter__(self) -> BenchProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()
