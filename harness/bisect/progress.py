"""The bisect's progress display: step, steps left (~log2), phase, elapsed.

On a terminal the current phase's line ticks its elapsed time in place;
elsewhere (CI logs, pipes) each phase prints one line when it ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO


def fmt_duration(seconds: float) -> str:
    """``2.7 s``, ``4:39``, ``1:02:03``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Prints to ``stream`` (stderr by default); ``live`` ticks on a terminal."""

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.t0 = time.monotonic()
        self._lock = threading.Lock()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)

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
        stop = threading.Event()
        ticker: threading.Thread | None = None
        if self.live:
            def tick() -> None:
                while not stop.wait(0.5):
                    with self._lock:
                        self.stream.write(f"\r    {name} ... {fmt_duration(time.monotonic() - t0)}")
                        self.stream.flush()

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
        try:
            yield result
        finally:
            stop.set()
            if ticker is not None:
                ticker.join(1)
            dt = fmt_duration(time.monotonic() - t0)
            outcome = result[0] if result else "interrupted"
            with self._lock:
                if self.live:
                    self.stream.write("\r\033[K")
                print(f"    {name}: {outcome} ({dt})", file=self.stream, flush=True)
