"""Whether two runs of a scenario took the same steps, up to the card's RCA.

QEMU's SD card picks its relative card address at random (CMD3), so even
two fresh launches differ there; the model adopts it (PLS 4.2.2).  Every
32-bit value whose upper half is the run's adopted RCA, written to the
Argument register or read from a Response register, is rewritten as
``("RCA", low half)`` in the lockstep history and the qtest trace before
they are compared.  Used by the QEMU process reuse test and benchmark.
"""

from __future__ import annotations

import re
from typing import Any

from harness.check.runner import SKIP, Result
from harness.check.step import Step

_HEX = re.compile(r"0x[0-9a-f]+")


def _rcas(res: Result) -> set[int]:
    return {value for _, what, value in res.adoptions() if what == "RCA"}


#: Where the RCA shows: the Argument register (a command's argument) and the
#: Response registers (R6 of CMD3, and R1 echoes none).  Only values there
#: are rewritten: a clock value may share its upper half with an RCA.
_ARGUMENT = 0x08
_RESPONSE = range(0x10, 0x20)


def _rca(value: Any, rcas: set[int]) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32 \
            and value >> 16 in rcas:
        return ("RCA", value & 0xFFFF)
    return value


def _step(s: Step, rcas: set[int]) -> tuple[Any, ...]:
    args, model, qemu = s.args, s.model, s.qemu
    if s.op == "write" and len(args) == 3 and args[0] == _ARGUMENT:
        args = (args[0], args[1], _rca(args[2], rcas))
    if s.op == "read" and args and (args[0] in _RESPONSE or args[0] == _ARGUMENT):
        model, qemu = _rca(model, rcas), _rca(qemu, rcas)
    note = _HEX.sub(lambda m: str(_rca(int(m.group(0), 16), rcas)), s.note)
    return (s.index, s.op, args, model, qemu, s.irq_model, s.irq_qemu, note,
            s.irq_events_model, s.irq_events_qemu)


def _line(line: str, rcas: set[int]) -> str:
    """A qtest line; a write to the Argument register gets its RCA rewritten."""
    words = line.split()
    if len(words) == 3 and words[0].startswith("write") and int(words[1], 16) & 0xFF == _ARGUMENT:
        return f"{words[0]} {words[1]} {_rca(int(words[2], 16), rcas)}"
    return line


def normalized(res: Result) -> tuple[str, list[tuple[Any, ...]], list[str]]:
    """``(status, steps, trace)`` of a ``run(keep=True)`` result, RCA-free."""
    if res.status == SKIP:
        return res.status, [], []
    if res.history is None or res.trace is None:
        raise ValueError("the result was not run with keep=True")
    rcas = _rcas(res)
    return res.status, [_step(s, rcas) for s in res.history], [_line(t, rcas) for t in res.trace]


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


def _text(text: str, rcas: set[int]) -> str:
    return _HEX.sub(lambda m: str(_rca(int(m.group(0), 16), rcas)), text)


def verdict(res: Result) -> dict[str, Any]:
    """Everything a report says of ``res`` but its timing, RCA-free: the
    status and reason, the step count, the divergence (step, kind, fields,
    context, history), the quirks, the adoptions (an RCA's value left out:
    each launch draws its own), notes and misses, and what was not
    compared."""
    rcas = _rcas(res)
    d = res.divergence
    div = None
    if d is not None:
        div = (d.step.index, d.kind, _step(d.step, rcas),
               [_text(f, rcas) for f in d.fields + d.context],
               [_step(s, rcas) for s in d.history])
    return {
        "status": res.status, "reason": _text(res.reason, rcas), "steps": res.steps,
        "divergence": div, "quirks": [q.key for q in res.quirks()],
        "stale": [q.key for q in res.stale()],
        "adoptions": [(i, w, None if w == "RCA" else v) for i, w, v in res.adoptions()],
        "notes": res.notes, "spec_misses": res.spec_misses, "known_misses": res.known_misses(),
        "not_compared": res.not_compared,
    }


def mode_difference(a: Result, b: Result) -> str:
    """Where two kept runs of one scenario (step by step and optimistic)
    part: their steps and qtest traces (:func:`first_difference`), then
    anything their reports say (:func:`verdict`); "" when nothing."""
    why = first_difference(a, b)
    if why:
        return why
    va, vb = verdict(a), verdict(b)
    for key in va:
        if va[key] != vb[key]:
            return f"{key}: {va[key]!r} vs {vb[key]!r}"
    return ""
