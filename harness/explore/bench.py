"""How fast the model alone runs explored inputs, side by side.

``sdqtest explore --bench N``: the same N inputs (drawn as the search draws
them, seed 1, probes after every operation) on the model untraced and
traced, each from a fresh model or forked from prefix snapshots
(:class:`~harness.explore.search.ModelRunner`), with the tracers: the
direct C tracer (the search's), coverage.py's ``Coverage`` object (what the
search used before) and the pure-Python arc tracer.  Each pass runs twice
in alternation so that a change of load shows up as a spread.  Then a short
search (N drawn inputs, no tables) with the search's runner against the
previous one (fresh models, ``Coverage``): model runs per second and
whether both keep the same inputs.  Ratios measured side by side are what
to compare, not the absolute rates on a shared machine.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from harness.driver.ops import generate
from harness.explore import search, tracer
from harness.explore.search import MAX_OPS, ModelRunner


class _NoFiles(tracer.CTracerArcs):
    """coverage.py's C tracer installed but tracing no file: what merely
    having a trace function costs on Python 3.11 (every frame's call and
    line events reach C, the interpreter leaves its specialised fast path),
    before any arc is recorded: the floor of a ``sys.settrace`` tracer."""

    @staticmethod
    def _should_trace(filename: str, frame: Any) -> Any:
        d = tracer.CTracerArcs._should_trace(filename, frame)
        d.trace = False
        return d


def _runner(trace: bool, snapshots: bool, kind: str = "c") -> ModelRunner:
    r = ModelRunner(trace=trace, snapshots=2048 if snapshots else 0)
    if kind == "nofiles":
        r.tracer = _NoFiles()
    elif kind == "coverage":
        r.tracer = tracer.CoverageTracer()
    elif kind == "python":
        r.tracer = tracer.ArcTracer()
    return r


def bench(n: int = 40, seed: int = 1) -> list[str]:
    inputs = [generate(random.Random(f"{seed}:{i}"), MAX_OPS) for i in range(n)]
    passes = [("untraced, fresh models", _runner(False, False)),
              ("untraced, prefix snapshots", _runner(False, True)),
              ("C tracer, fresh models", _runner(True, False)),
              ("C tracer, prefix snapshots (search)", _runner(True, True)),
              ("C tracer on no file, fresh (floor)", _runner(True, False, "nofiles")),
              ("coverage.Coverage, fresh (before)", _runner(True, False, "coverage")),
              ("pure-Python tracer, fresh", _runner(True, False, "python"))]
    rates: dict[str, list[float]] = {name: [] for name, _ in passes}
    for _ in range(2):
        for name, runner in passes:
            runner._snaps.clear()
            t0 = time.perf_counter()
            for ops in inputs:
                runner.run(ops)
            rates[name].append(n / (time.perf_counter() - t0))
    base = sum(rates[passes[0][0]]) / 2
    out = [f"{n} inputs of up to {MAX_OPS} operations (seed {seed}), probes after each; "
           f"load average {os.getloadavg()[0]:.1f}"]
    for name, _ in passes:
        r = sum(rates[name]) / 2
        out.append(f"  {name:36} {r:7.1f} inputs/s  (runs {rates[name][0]:.1f}, "
                   f"{rates[name][1]:.1f})  x{r / base:.2f} of untraced fresh")
    out.append(f"a search of {n} drawn inputs (seed {seed}, no tables), "
               f"load average {os.getloadavg()[0]:.1f}:")
    kept = {}
    for name, runner in (("search's runner (C tracer, snapshots)", _runner(True, True)),
                         ("before (Coverage, fresh models)", _runner(True, False, "coverage"))):
        t0 = time.perf_counter()
        found, _seen, st = search.search(seed, count=n, plateau=n, with_tables=False,
                                         runner=runner)
        dt = time.perf_counter() - t0
        kept[name] = [e.ops for e in found]
        out.append(f"  {name:40} {st.model_runs} model runs in {dt:.1f} s: "
                   f"{st.model_runs / dt:.1f} runs/s, {n / dt:.1f} inputs/s, kept {len(found)}")
    a, b = kept.values()
    out.append("  same inputs kept: " + ("yes" if a == b else "NO"))
    return out
