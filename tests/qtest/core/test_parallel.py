"""Work spread over forked processes: ``map_ordered`` keeps the order, and
``Beside`` runs a phase in a process of its own while the check goes on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.check import parallel


def _square(x: int) -> int:
    return x * x


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _fails(why: str) -> None:
    raise ValueError(why)


def test_map_ordered_answers_in_the_order_given() -> None:
    items = [(i,) for i in range(7)]
    assert parallel.map_ordered(_square, items, jobs=3) == [i * i for i in range(7)]


def test_beside_runs_in_another_process_while_this_one_goes_on() -> None:
    side = parallel.Beside(_pid_after, 0.3)
    t0 = time.monotonic()
    here = sum(range(1000))  # this process is not held up
    assert time.monotonic() - t0 < 0.3 and here == 499500
    assert side.result() != os.getpid()


def test_beside_raises_its_exception_here() -> None:
    side = parallel.Beside(_fails, "no QEMU")
    with pytest.raises(ValueError, match="no QEMU"):
        side.result()


def test_beside_cancelled_leaves_no_process() -> None:
    side = parallel.Beside(_pid_after, 30.0)
    side.cancel()
    assert not side._proc.is_alive() and side._proc.exitcode is not None


def test_beside_cancelled_even_where_sigterm_is_ignored() -> None:
    """A check started with SIGTERM ignored (some job runners) or handled
    by another program: cancel() still ends the process at once."""
    import signal

    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        side = parallel.Beside(_pid_after, 30.0)
    finally:
        signal.signal(signal.SIGTERM, old)
    t0 = time.monotonic()
    side.cancel()
    assert time.monotonic() - t0 < 5 and not side._proc.is_alive()


def test_a_cancel_at_once_never_runs_this_process_s_handler_in_the_child(
        tmp_path: Path) -> None:
    """SIGTERM is blocked over the fork: a cancel() right after the start
    ends the child by SIGTERM's default action, never by the handler this
    process had (a check's, a test runner's), which in the child would run
    the parent's code as if it were the parent."""
    import signal

    ran = tmp_path / "handler-ran"

    def handler(signum: int, frame: object) -> None:
        with ran.open("a") as f:
            f.write(f"{os.getpid()}\n")
        os._exit(99)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        codes = set()
        for _ in range(150):
            side = parallel.Beside(_pid_after, 30.0)
            side.cancel()
            codes.add(side._proc.exitcode)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert not ran.exists(), ran.read_text()
    assert codes == {-signal.SIGTERM}
