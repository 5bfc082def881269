"""Which arcs of the model's code one run takes.

A ``sys.settrace`` tracer limited to the files of ``harness/model/``:
frames of other files get no local tracer (no line events), so the driver
and harness run at full speed; in model frames each line event adds the
arc ``(previous line, line)`` of that code object, entries and exits as
coverage.py writes them (negative first line).  Python 3.11 has no
``sys.monitoring``: where coverage.py is installed (a dependency) its C
tracer records the same arcs.  :class:`CoverageTracer` goes through
``coverage.Coverage`` (its start re-reads the configuration and its data
go through SQLite: about 65 ms a run before any model code);
:class:`CTracerArcs` drives coverage.py's C tracer directly (0.2 ms a
run) and can resume from a saved state, which the search's prefix
snapshots need (``sdqtest explore --bench`` prints the ratios).
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


class CTracerArcs:
    """coverage.py's C tracer without ``coverage.Coverage``: the arcs of the
    model's files as coverage.py records them (line pairs packed into one
    integer, unpacked at the end), with no per-run configuration or
    database.  ``resume`` (a :meth:`checkpoint`) starts from arcs already
    taken: a run forked from a snapshot of the model after a prefix then
    ends with the same arcs as the whole run."""

    def __init__(self) -> None:
        from coverage.tracer import CTracer

        self._cls = CTracer
        self._cache: dict[str, Any] = {}
        self._data: dict[str, set[Any]] = {}
        self._tracer: Any = None
        self._previous: Any = None
        self.resume: dict[str, set[Any]] | None = None

    @staticmethod
    def _should_trace(filename: str, frame: FrameType) -> Any:
        from coverage.tracer import CFileDisposition

        d = CFileDisposition()
        d.original_filename = d.canonical_filename = d.source_filename = filename
        d.trace = filename.startswith(MODEL_DIR)
        d.reason = ""
        d.file_tracer = None
        d.has_dynamic_filename = False
        return d

    def checkpoint(self) -> dict[str, set[Any]]:
        """The arcs taken so far (packed), for a later ``resume``."""
        return {f: set(s) for f, s in self._data.items()}

    def __enter__(self) -> CTracerArcs:
        t = self._tracer = self._cls()
        self._data = {f: set(s) for f, s in (self.resume or {}).items()}
        t.data = self._data
        t.lock_data = t.unlock_data = _nothing
        t.trace_arcs = True
        t.should_trace = self._should_trace
        t.should_trace_cache = self._cache
        t.warn = _nothing
        for name in ("concur_id_func", "check_include", "should_start_context",
                     "switch_context", "disable_plugin"):
            setattr(t, name, None)
        t.file_tracers = {}
        self._previous = sys.gettrace()
        t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._tracer.stop()
        sys.settrace(self._previous)
        self._tracer = None

    @property
    def keys(self) -> set[Any]:
        """The arcs taken as hashable keys without unpacking them: one
        integer per arc (the file's number above coverage.py's 58-bit packed
        line pair), what the search compares; :attr:`arcs` unpacks them."""
        out: set[Any] = set()
        for f, packed in self._data.items():
            base = self._file_number(f) << 60
            out.update(base | p if isinstance(p, int) else (f, *p) for p in packed)
        return out

    @staticmethod
    def _file_number(name: str) -> int:
        n = _NUMBERS.get(name)
        if n is None:
            n = _NUMBERS[name] = len(_NUMBERS) + 1
        return n

    @property
    def arcs(self) -> set[Arc]:
        return {(f, *(_unpack(p) if isinstance(p, int) else p))
                for f, packed in self._data.items() for p in packed}



#: The number of each traced file in :attr:`CTracerArcs.keys`, one table
#: for the process so that keys of different tracers compare.
_NUMBERS: dict[str, int] = {}


def _nothing(*args: object, **kwargs: object) -> None:
    return None


def _unpack(p: int) -> tuple[int, int]:
    """coverage.py's packed line pair (its tracer.c ``record_pair``: two
    28-bit magnitudes, bits 56 and 57 their signs)."""
    a, b = p & 0xFFFFFFF, (p >> 28) & 0xFFFFFFF
    return (-a if p & (1 << 56) else a, -b if p & (1 << 57) else b)


def arc_tracer() -> ArcTracer | CTracerArcs:
    """coverage.py's C tracer where it is installed, else ours."""
    try:
        return CTracerArcs()
    except ImportError:
        return ArcTracer()


class ArcTracer:
    """``with ArcTracer() as t: ...`` leaves the arcs taken in ``t.arcs``
    as ``(file name, from line, to line)``."""

    def __init__(self) -> None:
        self.arcs: set[Arc] = set()
        self._files: dict[str, bool] = {}
        self._previous: Any = None
        self.resume: set[Arc] | None = None

    def checkpoint(self) -> set[Arc]:
        return set(self.arcs)

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
        self.arcs = set(self.resume or ())
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
