"""Whether two runs of a scenario took the same steps, up to the card's RCA.

QEMU's SD card picks its relative card address at random (CMD3), so even
two fresh launches differ there; the model adopts it (PLS 4.2.2).  Every
32-bit value whose upper half is the run's adopted RCA is rewritten as
``("RCA", low half)`` in the lockstep history and the qtest trace before
they are compared.  Used by the QEMU process reuse test and benchmark.
"""

from __future__ import annotations

import re
from typing import Any

from harness.check.runner import SKIP, Result

_HEX = re.compile(r"0x[0-9a-f]+")


def _rcas(res: Result) -> set[int]:
    return {value for _, what, value in res.adoptions if what == "RCA"}


def _norm(value: Any, rcas: set[int]) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and 0 <= value < 1 << 32 and value >> 16 in rcas:
        return ("RCA", value & 0xFFFF)
    if isinstance(value, tuple | list):
        return tuple(_norm(v, rcas) for v in value)
    return value


def _norm_line(line: str, rcas: set[int]) -> str:
    def sub(m: re.Match[str]) -> str:
        v = int(m.group(0), 16)
        return f"RCA|{v & 0xFFFF:#x}" if v < 1 << 32 and v >> 16 in rcas else m.group(0)
    return _HEX.sub(sub, line)


def normalized(res: Result) -> tuple[str, list[tuple[Any, ...]], list[str]]:
    """``(status, steps, trace)`` of a ``run(keep=True)`` result, RCA-free."""
    if res.status == SKIP:
        return res.status, [], []
    if res.history is None or res.trace is None:
        raise ValueError("the result was not run with keep=True")
    rcas = _rcas(res)
    steps = [tuple(_norm(getattr(s, f), rcas) for f in (
        "index", "op", "args", "model", "qemu", "irq_model", "irq_qemu", "note",
        "irq_events_model", "irq_events_qemu")) for s in res.history]
    return res.status, steps, [_norm_line(t, rcas) for t in res.trace]


def first_difference(a: Result, b: Result) -> str:
    """Where two kept runs part ("" when they took the same steps)."""
    sa, sb = normalized(a), normalized(b)
    if sa[0] != sb[0]:
        return f"status {sa[0]} vs {sb[0]}"
    for what, x, y in (("step", sa[1], sb[1]), ("qtest line", sa[2], sb[2])):
        for i, (p, q) in enumerate(zip(x, y, strict=False)):
            if p != q:
                return f"{what} {i}: {p} vs {q}"
        if len(x) != len(y):
            return f"{len(x)} vs {len(y)} {what}s"
    return ""
