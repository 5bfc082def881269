"""How fast the model alone runs explored inputs, traced and not, side by side.

``sdqtest explore --bench N``: the same N inputs (drawn as the search draws
them, seed 1, probes after every operation) on the model with no tracer,
with coverage.py's tracer (what the search uses) and with the pure-Python
arc tracer; each pass is run twice in alternation so that a change of load
shows up as a spread.  Ratios against the untraced pass are what to
compare, not the absolute rates on a shared machine.
"""

from __future__ import annotations

import os
import random
import time

from harness.driver.ops import generate
from harness.explore import tracer
from harness.explore.search import MAX_OPS, ModelRunner


def bench(n: int = 40, seed: int = 1) -> list[str]:
    inputs = [generate(random.Random(f"{seed}:{i}"), MAX_OPS) for i in range(n)]
    plain = ModelRunner(trace=False)
    cov = ModelRunner(trace=True)
    py = ModelRunner(trace=True)
    py.tracer = tracer.ArcTracer()
    passes = [("model alone, no tracer", plain), ("coverage.py tracer (the search)", cov),
              ("pure-Python arc tracer", py)]
    rates: dict[str, list[float]] = {name: [] for name, _ in passes}
    for _ in range(2):
        for name, runner in passes:
            t0 = time.perf_counter()
            for ops in inputs:
                runner.run(ops)
            rates[name].append(n / (time.perf_counter() - t0))
    base = sum(rates[passes[0][0]]) / 2
    out = [f"{n} inputs of up to {MAX_OPS} operations (seed {seed}), probes after each; "
           f"load average {os.getloadavg()[0]:.1f}"]
    for name, _ in passes:
        r = sum(rates[name]) / 2
        out.append(f"  {name:34} {r:7.1f} inputs/s  (runs {rates[name][0]:.1f}, "
                   f"{rates[name][1]:.1f})  x{r / base:.2f} of untraced")
    return out
