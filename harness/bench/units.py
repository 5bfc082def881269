"""One unit per plot axis.

Figures of one table may be measured in different units (a register read in
µs, a 128 KiB transfer in ms).  Drawn on one axis as they are, 52.6 ms would
be shorter than 1,541 µs.  :func:`axes` puts the time figures of a table on
one axis in one unit (the largest among them, each sample converted) and
gives every other unit an axis of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.bench.output import Figure

#: Seconds per time unit, as the bench parts name them.
SECONDS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0,
                             "min": 60.0}


def converted(f: Figure, unit: str) -> Figure:
    """``f`` in time unit ``unit`` (samples scaled; ``f`` itself if already in it)."""
    if f.unit == unit:
        return f
    factor = SECONDS[f.unit] / SECONDS[unit]
    return dataclasses.replace(f, unit=unit, samples=[x * factor for x in f.samples])


def in_unit(seconds: float, unit: str) -> float:
    """``seconds`` in ``unit`` (a time unit), or as given for any other unit."""
    return seconds / SECONDS[unit] if unit in SECONDS else seconds


def axes(figs: Sequence[Figure]) -> list[tuple[str, list[Figure]]]:
    """``(unit, figures in it)`` per axis, in the order the units first appear."""
    times = [f.unit for f in figs if f.unit in SECONDS]
    time_unit = max(times, key=lambda u: SECONDS[u]) if times else ""
    out: dict[str, list[Figure]] = {}
    for f in figs:
        if f.unit in SECONDS:
            out.setdefault(time_unit, []).append(converted(f, time_unit))
        else:
            out.setdefault(f.unit, []).append(f)
    return list(out.items())
