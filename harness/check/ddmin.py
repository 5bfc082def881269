"""Shrink a failing input to a minimal one (delta debugging).

:func:`ddmin` is Zeller's algorithm over a list: it removes chunks, then
single items, as long as ``fails`` (re-running the input and checking that
the *same* signature still fails) holds.  :func:`shrink_ops` adds the
fuzzer's own steps: cut everything after the operation that failed, ddmin,
then simplify each remaining operation's numbers toward zero.  Every step
is bounded by a budget of ``fails`` calls, since each call runs QEMU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class Budget:
    """At most ``calls`` predicate calls; then every answer is "no"."""

    def __init__(self, fails: Callable[[list[Any]], bool], calls: int) -> None:
        self.fails = fails
        self.left = calls
        self.used = 0

    def __call__(self, items: list[Any]) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return self.fails(items)


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sublist of ``items`` (order kept) for which ``fails``
    holds, assuming it holds for ``items``: removing any single item of
    the result makes it pass (within the predicate's budget)."""
    cur = list(items)
    n = 2
    while len(cur) >= 2:
        size = len(cur) // n
        chunks = [cur[i:i + size] for i in range(0, len(cur), size)] if size else [cur]
        reduced = False
        for i in range(len(chunks)):
            complement = [x for j, c in enumerate(chunks) if j != i for x in c]
            if complement and fails(complement):
                cur = complement
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if n >= len(cur):
                break
            n = min(len(cur), 2 * n)
    if len(cur) == 1 and fails([]):
        return []
    return cur


def _simpler(value: Any) -> list[Any]:
    """Candidate replacements for one operation argument, simplest first."""
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [v for v in (0, 1, value // 2) if abs(v) < abs(value)]
    if isinstance(value, str) and value and all(c in "0123456789abcdef" for c in value):
        return ["00" * (len(value) // 4)] if len(value) > 2 else []
    if isinstance(value, list) and len(value) > 1:
        return [value[:1], value[:-1]]
    return []


def shrink_ops(ops: Sequence[dict[str, Any]], fails: Callable[[list[dict[str, Any]]], bool],
               *, stop_at: int | None = None, calls: int = 80) -> tuple[list[dict[str, Any]], int]:
    """A short input that still fails as ``ops`` does, and the number of
    runs it took.  ``stop_at`` is the index of the operation the failure
    happened in: what comes after it cannot matter and goes first."""
    budget = Budget(fails, calls)
    cur = [dict(o) for o in ops]
    if stop_at is not None and stop_at + 1 < len(cur) and budget(cur[:stop_at + 1]):
        cur = cur[:stop_at + 1]
    cur = ddmin(cur, budget)
    for i in range(len(cur)):
        for key in [k for k in cur[i] if k != "op"]:
            for cand in _simpler(cur[i][key]):
                if budget.left <= 0:
                    return cur, budget.used
                trial = [dict(o) for o in cur]
                trial[i][key] = cand
                if budget(trial):
                    cur = trial
                    break
    return cur, budget.used
