"""The one progress display of every command: a status line on standard
error while something long runs.

On a terminal the line is live: it erases itself, is redrawn every second
with the time it has been up, and is cut to the terminal's width with a
``…`` marker.  Elsewhere (CI logs, pipes) it is a plain line
``sdqtest: TEXT (ELAPSED)``, at most one every :data:`PLAIN_EVERY` seconds
and, while a status is up, at least one: a heartbeat thread repeats the
current status, so a CI job is never silent for longer than that.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

#: Seconds between plain lines off a terminal (at most one, and at least
#: one while a status is shown).
PLAIN_EVERY = 30.0
#: The live line's cut marker.
CUT = "…"


def fmt_duration(seconds: float) -> str:
    """``2.7 s``, ``4:39``, ``1:02:03``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, the cut marked by :data:`CUT`."""
    if len(text) <= width:
        return text
    return text[:max(width - len(CUT), 0)] + CUT


class StatusLine:
    """One status line on ``stream`` (standard error as it is when written,
    by default); ``live``: redrawn in place (default: on a terminal).

    ``clock`` and ``tick`` (the heartbeat's period; 0: no thread, call
    :meth:`poll` yourself) are for tests."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 interval: float = PLAIN_EVERY, tick: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, prefix: str = "sdqtest: ") -> None:
        self.stream, self.live, self.interval, self.tick = stream, live, interval, tick
        self.clock, self.prefix = clock, prefix
        self.text = ""
        self.since = 0.0
        self.last_plain = -float("inf")
        self._drawn = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def is_live(self) -> bool:
        if self.live is not None:
            return self.live
        try:
            return self.out.isatty()
        except (AttributeError, ValueError):  # a closed or odd stream
            return False

    def show(self, text: str) -> None:
        """Put ``text`` up (``""``: take the line down, :meth:`clear`)."""
        if not text:
            self.clear()
            return
        with self._lock:
            if not self.text:
                self.since = self.clock()
            self.text = text
            self._emit()
        self._start()

    def poll(self) -> None:
        """One heartbeat: redraw the live line, or repeat the status in a
        plain line when none was written for :attr:`interval` seconds."""
        with self._lock:
            if self.text:
                self._emit()

    def _emit(self) -> None:
        now = self.clock()
        took = now - self.since
        if self.is_live():
            suffix = f"  {fmt_duration(took)}"
            width = shutil.get_terminal_size((100, 24)).columns - 1
            self._write("\r\x1b[K" + fit(self.text, width - len(suffix)) + suffix)
            self._drawn = True
        elif now - self.last_plain >= self.interval:
            self.last_plain = now
            when = f" ({fmt_duration(took)})" if took >= 1 else ""
            self._write(f"{self.prefix}{self.text}{when}\n")

    def _write(self, s: str) -> None:
        try:
            self.out.write(s)
            self.out.flush()
        except (OSError, ValueError):  # a closed stream: progress is not worth failing for
            pass

    def clear(self) -> None:
        """Take the status down: the live line erased, the heartbeat stopped."""
        with self._lock:
            self.text = ""
            if self._drawn:
                self._write("\r\x1b[K")
                self._drawn = False
        self._stop.set()
        t, self._thread = self._thread, None
        if t is not None and t is not threading.current_thread():
            t.join(1)

    def say(self, text: str) -> None:
        """A permanent line; the status, if one is up, drawn again below it."""
        with self._lock:
            if self._drawn:
                self._write("\r\x1b[K")
                self._drawn = False
            self._write(text + "\n")
            if self.text and self.is_live():
                self._emit()

    def _start(self) -> None:
        if self.tick <= 0 or self._thread is not None:
            return
        self._stop = threading.Event()
        stop = self._stop

        def beat() -> None:
            while not stop.wait(self.tick):
                self.poll()

        self._thread = threading.Thread(target=beat, name="sdqtest-progress", daemon=True)
        self._thread.start()


    def _before_fork(self) -> None:
        """Hold the lock over a fork: the heartbeat thread is then not in
        the middle of a write (a child would inherit standard error's
        buffer locked by a thread it does not have)."""
        self._lock.acquire()

    def _after_fork_parent(self) -> None:
        self._lock.release()

    def _after_fork(self) -> None:
        """In a forked child (a ``check -j`` worker): no heartbeat thread, a
        fresh lock, nothing shown; the line stays the parent's to draw."""
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = None
        self.text = ""
        self._drawn = False


#: The status line the commands share (standard error).
LINE = StatusLine()
os.register_at_fork(before=LINE._before_fork, after_in_parent=LINE._after_fork_parent,
                    after_in_child=LINE._after_fork)


def show(text: str) -> None:
    """Put ``text`` up on the shared status line (``""``: take it down)."""
    LINE.show(text)
