"""The one progress display (:mod:`harness.progress`): live on a terminal;
off one (CI) a plain line at most and at least every 30 s while a status
is up.  Time is a fake clock: no test sleeps."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

from harness import progress
from harness.bench.progress import BenchProgress
from harness.progress import PLAIN_EVERY, StatusLine

ROOT = Path(progress.__file__).resolve().parent


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _plain(clock: Clock) -> tuple[StatusLine, io.StringIO]:
    buf = io.StringIO()
    return StatusLine(buf, live=False, tick=0, clock=clock), buf


def test_off_a_terminal_a_line_at_once_then_one_every_30_s() -> None:
    clock = Clock()
    line, buf = _plain(clock)
    line.show("model check [1/40]")
    assert buf.getvalue() == "sdqtest: model check [1/40]\n"
    clock.now += 10
    line.show("model check [2/40]")
    clock.now += 19
    line.poll()
    assert buf.getvalue().count("\n") == 1  # at most one line per 30 s
    clock.now += 1
    line.poll()  # 30 s after the last line, and nothing new said: the heartbeat
    assert buf.getvalue().splitlines()[-1] == "sdqtest: model check [2/40] (30.0 s)"
    line.clear()
    clock.now += 600
    line.poll()
    assert buf.getvalue().count("\n") == 2  # nothing up, nothing said
    assert "\x1b" not in buf.getvalue() and "\r" not in buf.getvalue()


def test_never_silent_for_more_than_30_s_while_a_status_is_up() -> None:
    """Status changes at random moments, heartbeats each second (the
    thread's tick): consecutive lines 30 to 31 s apart, never more."""
    clock = Clock()
    line, buf = _plain(clock)
    stamps: list[float] = []
    rnd = random.Random(46)
    line.show("start")
    stamps.append(clock.now)
    for second in range(1, 600):
        clock.now = 1000.0 + second
        before = buf.getvalue().count("\n")
        if rnd.random() < 0.2:
            line.show(f"run {second}")
        line.poll()
        if buf.getvalue().count("\n") > before:
            stamps.append(clock.now)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert len(stamps) >= 19 and all(PLAIN_EVERY <= g <= PLAIN_EVERY + 1 for g in gaps), gaps


def test_on_a_terminal_a_live_line_cut_with_a_marker() -> None:
    clock = Clock()
    buf = io.StringIO()
    line = StatusLine(buf, live=True, tick=0, clock=clock)
    line.show("x" * 500)
    clock.now += 75
    line.poll()
    drawn = buf.getvalue().split("\r\x1b[K")
    assert drawn[-1].endswith(progress.CUT + "  1:15") and len(drawn[-1]) < 500
    line.say("a result")
    assert buf.getvalue().endswith("a result\n\r\x1b[K" + drawn[-1])
    line.clear()
    assert buf.getvalue().endswith("\r\x1b[K")


def test_fit_marks_a_cut_and_keeps_short_text() -> None:
    assert progress.fit("short", 10) == "short"
    assert progress.fit("0123456789abc", 10) == "012345678" + progress.CUT


def test_benchmarks_use_the_shared_line() -> None:
    buf = io.StringIO()
    with BenchProgress("bench data", 2, stream=buf, force=False, tick=0) as p:
        p.step("11.1", "read")
        p.step("11.1", "write")
    assert buf.getvalue() == "sdqtest: bench data 11.1 [1/2] read\n"
    assert p.last == "bench data 11.1 [2/2] write"


def test_one_module_draws_progress() -> None:
    """No other module writes the erase-line escape or a carriage return of
    its own: every command's progress goes through harness.progress."""
    erase = re.compile(r"\\x1b\[K|\\033\[K|\\r\\x1b|\\r\\033")
    own = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
           if p.name != "progress.py" or p.parent != ROOT
           if erase.search(p.read_text())]
    assert own == [], own


def test_a_forked_worker_starts_with_the_line_down() -> None:
    """A ``check -j`` worker is forked while the parent's status may be up
    (its heartbeat thread holding the lock): the child's copy is down, with
    a lock of its own, and drawing in it does not hang."""
    import os

    clock = Clock()
    line, buf = _plain(clock)
    line.show("parent status")
    line._lock.acquire()  # as the parent's heartbeat thread may hold it at the fork
    line._after_fork()
    assert line.text == "" and line._thread is None
    line.show("child")  # a fresh lock: no deadlock
    assert line.text == "child"
    progress.LINE.show("the parent's status")  # up, its heartbeat thread running
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if progress.LINE.text == "" and progress.LINE._thread is None else 1)
        assert os.waitpid(pid, 0)[1] == 0
    finally:
        progress.LINE.clear()
