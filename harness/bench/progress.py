"""A one-line, self-erasing progress display for long benchmarks (tty only)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """``part build [i/n] step  elapsed`` on one line of a terminal.

    Writes nothing when ``stream`` is not a tty (pipes, CI, tests), unless
    ``force`` is set.  While enabled, a daemon thread redraws the line every
    second so the elapsed time moves during a long step (a 60 s erase).
    :meth:`clear` erases the line (call it before printing a table)."""

    def __init__(self, part: str, total: int, *, stream: TextIO | None = None,
                 force: bool | None = None, tick: float = 1.0) -> None:
        self.part = part
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if force is None else force
        self.t0 = time.monotonic()
        self.last = ""
        self._what = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tick = tick

    def step(self, build: str, what: str, *, advance: bool = True) -> None:
        """Count one step (unless ``advance`` is false) and show it."""
        if advance:
            self.done = min(self.done + 1, self.total)
        self._what = f"{self.part} {build} [{self.done}/{self.total}] {what}"
        self._draw()
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._ticker, daemon=True)
            self._thread.start()

    def _draw(self) -> None:
        with self._lock:
            if not self._what:
                return
            self.last = f"{self._what}  {time.monotonic() - self.t0:.0f}s"
            if self.enabled:
                self.stream.write("\r\x1b[K" + self.last[:110])
                self.stream.flush()

    def _ticker(self) -> None:
        while not self._stop.wait(self._tick):
            self._draw()

    def clear(self) -> None:
        """Stop redrawing and erase the line."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._stop.clear()
        with self._lock:
            self._what = ""
            if self.enabled:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()
