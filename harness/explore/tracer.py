"""Which arcs of the model's code one run takes.

A ``sys.settrace`` tracer limited to the files of ``harness/model/``:
frames of other files get no local tracer (no line events), so the driver
and harness run at full speed; in model frames each line event adds the
arc ``(previous line, line)`` of that code object, entries and exits as
coverage.py writes them (negative first line).  Python 3.11 has no
``sys.monitoring``: where coverage.py is installed (a dependency) its C
tracer records the same arcs, :class:`CoverageTracer`, about five times
faster (``sdqtest bench explore`` prints the ratio).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import harness.model

#: The model's source directory: the only code traced.
MODEL_DIR = str(Path(harness.model.__file__).resolve().parent)

Arc = tuple[str, int, int]


class CoverageTracer:
    """The same arcs through coverage.py (its C tracer, branch data, only
    the model's files): several times faster than :class:`ArcTracer`.
    One instance serves many runs; each ``with`` block starts afresh."""

    def __init__(self) -> None:
        import coverage

        self.arcs: set[Arc] = set()
        self._cov = coverage.Coverage(branch=True, data_file=None,
                                      include=[MODEL_DIR + "/*"])
        self._cov.set_option("run:disable_warnings", ["no-data-collected"])

    def __enter__(self) -> CoverageTracer:
        self.arcs = set()
        self._cov.erase()
        self._cov.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cov.stop()
        data = self._cov.get_data()
        for name in data.measured_files():
            self.arcs.update((name, a, b) for a, b in data.arcs(name) or ())


def arc_tracer() -> ArcTracer | CoverageTracer:
    """coverage.py's tracer where it is installed, else ours."""
    try:
        return CoverageTracer()
    except ImportError:
        return ArcTracer()


class ArcTracer:
    """``with ArcTracer() as t: ...`` leaves the arcs taken in ``t.arcs``
    as ``(file name, from line, to line)``."""

    def __init__(self) -> None:
        self.arcs: set[Arc] = set()
        self._files: dict[str, bool] = {}
        self._previous: Any = None

    def _wanted(self, code: CodeType) -> bool:
        name = code.co_filename
        hit = self._files.get(name)
        if hit is None:
            hit = self._files[name] = name.startswith(MODEL_DIR)
        return hit

    def _call(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        if not self._wanted(code):
            return None
        arcs = self.arcs
        name = code.co_filename
        prev = -code.co_firstlineno

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal prev
            if event == "line":
                line = frame.f_lineno
                arcs.add((name, prev, line))
                prev = line
            elif event == "return":
                arcs.add((name, prev, -code.co_firstlineno))
            return local

        return local

    def __enter__(self) -> ArcTracer:
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
