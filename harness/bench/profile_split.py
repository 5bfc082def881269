"""Where a check's time goes: a cProfile of the runs, split by concern.

Each profiled function's own time goes to the concern of the file it is in
(:data:`CONCERNS`); a function of neither the harness nor its QMP library
(the standard library, a builtin such as ``socket.recv`` or ``epoll.poll``)
is charged to its callers, in proportion to the time it spent under each.
The profiler's clock is the harness process's CPU time, not the wall
clock: on a loaded machine a wall-clock profile charges the time the
process waited for a core to whatever it was running, and the time spent
waiting on QEMU is QEMU's CPU time, shown on its own row (measured, like
the wall time, on the same runs without the profiler).  The profiler slows
Python code, and reading that clock costs a system call at every call and
return, charged in part to the caller: code that makes many small calls
(the lockstep's own per-operation layer) looks dearer than it is.  The
split names the largest concern; the harness's CPU time without the
profiler is printed beside it, to scale by.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from typing import Any

#: (concern, test on ``(file, function name)``), first match wins.
CONCERNS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    ("image compare", lambda f, n: (f.endswith("check/runner.py") and n in (
        "compare_images", "unwritten_equal", "image_spans", "_same_bytes"))
        or f.endswith("harness/images.py")
        or (f.endswith("qemu/target.py") and n in ("image_read", "_raw_view", "written_upto"))),
    ("qtest wire", lambda f, n: f.endswith("qemu/qtest.py") or (
        f.endswith("qemu/target.py") and n in (
            "read", "write", "mem_read", "mem_write", "clock_step", "irq_level", "irq_events",
            "op_lines", "op_value", "read_many", "write_many"))),
    ("launch/reset", lambda f, n: "/harness/qemu/" in f or "/qemu/qmp/" in f
        or f.endswith("subprocess.py")),
    ("model", lambda f, n: "/harness/model/" in f),
    ("driver", lambda f, n: "/harness/driver/" in f or "/harness/scenarios/" in f),
    ("comparison", lambda f, n: "/harness/check/" in f and not f.endswith("runner.py")
        and not f.endswith("parallel.py")),
    ("other harness", lambda f, n: "/harness/" in f),
)
ORDER = ("model", "driver", "comparison", "qtest wire", "launch/reset", "image compare",
         "other harness")

Func = tuple[str, int, str]


def _direct(func: Func) -> str | None:
    file, _, name = func
    for concern, test in CONCERNS:
        if test(file, name):
            return concern
    return None


def split(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time by concern (see the module docstring)."""
    raw: dict[Func, Any] = stats.stats  # type: ignore[attr-defined]
    memo: dict[Func, dict[str, float]] = {}

    def shares(func: Func, seen: frozenset[Func]) -> dict[str, float]:
        """How ``func``'s own time divides among concerns (fractions)."""
        if func in memo:
            return memo[func]
        c = _direct(func)
        if c is not None:
            out = {c: 1.0}
        else:
            callers = raw[func][4] if func in raw else {}
            weights = {caller: (edge[2] or edge[3]) for caller, edge in callers.items()
                       if caller not in seen}
            total = sum(weights.values())
            out = {}
            if total <= 0:
                out = {"other harness": 1.0}
            else:
                for caller, w in weights.items():
                    for k, v in shares(caller, seen | {func}).items():
                        out[k] = out.get(k, 0.0) + v * w / total
        if not seen:
            memo[func] = out
        return out

    totals = dict.fromkeys(ORDER, 0.0)
    for func, (_cc, _nc, tt, _ct, _callers) in raw.items():
        for k, v in shares(func, frozenset()).items():
            totals[k] = totals.get(k, 0.0) + tt * v
    return totals


def profiled(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """``fn()`` under cProfile: its value and the split of its time."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    try:
        value = fn()
    finally:
        prof.disable()
    return value, split(pstats.Stats(prof))


def lines(rows: list[tuple[str, float, float, float, dict[str, float]]]) -> list[str]:
    """A table: one column per ``(label, wall s, harness CPU s, QEMU CPU s,
    split)`` (the seconds measured without the profiler), one row per
    concern (profiled harness CPU seconds and share), then the totals."""
    import io

    from harness.table import print_table

    head = ["harness CPU by concern"] + [row[0] for row in rows]
    table = []
    for concern in ORDER:
        cells = [concern]
        for _, _, _, _, sp in rows:
            t, total = sp.get(concern, 0.0), sum(sp.values()) or 1.0
            cells.append(f"{t:6.2f} s {100 * t / total:3.0f}%")
        table.append(cells)
    table.append(["harness CPU, profiled"] + [f"{sum(sp.values()):6.2f} s"
                                              for _, _, _, _, sp in rows])
    table.append(["harness CPU, no profiler"] + [f"{h:6.2f} s" for _, _, h, _, _ in rows])
    table.append(["QEMU CPU, no profiler"] + [f"{q:6.2f} s" for _, _, _, q, _ in rows])
    table.append(["wall, no profiler"] + [f"{wall:6.2f} s" for _, wall, _, _, _ in rows])
    buf = io.StringIO()
    print_table(head, table, buf)
    return buf.getvalue().splitlines()
