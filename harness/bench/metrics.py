"""Named figures of a QEMU build, for ``sdqtest bisect --bench`` and friends.

``METRICS`` maps a name to a :class:`Metric`; ``measure(binary)`` returns one
float (already a median where sampling is noisy).  Add a metric with
:func:`register`.  Run one: ``python -m harness.bench.metrics NAME --qemu BIN
[--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Metric:
    """A figure: its name, unit, which way is better, and how to measure it."""

    name: str
    unit: str
    higher_is_better: bool
    measure: Callable[[Path], float]
    description: str = ""


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (a later one of the same name replaces it)."""
    METRICS[metric.name] = metric
    return metric


def launch_ms(binary: Path, samples: int = 5) -> float:
    """Median milliseconds from spawning QEMU (q35) to its first qtest answer."""
    from harness.machine import Machine
    from harness.qemu.session import QemuSession

    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        with QemuSession(binary, Machine.bare("q35")) as s:
            s.qtest.endianness()
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def qtest_ops(binary: Path, seconds: float = 0.3, samples: int = 5) -> float:
    """Median synchronous qtest register reads (HCVER) per second."""
    from harness.machine import CardImage, Machine
    from harness.qemu.target import QemuTarget

    with tempfile.TemporaryDirectory(prefix="sdqtest-metric-") as tmp:
        image = Path(tmp) / "card.img"
        with open(image, "wb") as f:
            f.truncate(1 << 20)
        with QemuTarget(binary, Machine(image=CardImage(image))) as t:
            for _ in range(100):
                t.read(0xFE, 2)
            rates = []
            for _ in range(samples):
                n = 0
                t0 = time.perf_counter()
                while (dt := time.perf_counter() - t0) < seconds:
                    for _ in range(50):
                        t.read(0xFE, 2)
                    n += 50
                rates.append(n / dt)
    return statistics.median(rates)


register(Metric("launch-ms", "ms", False, launch_ms,
                "QEMU launch to first qtest answer, median of 5"))
register(Metric("qtest-ops", "ops/s", True, qtest_ops,
                "synchronous qtest register reads per second, median of 5"))


def main(argv: Sequence[str] | None = None) -> int:
    """Measure one metric and print it (and write ``{"value", "unit"}`` to --json)."""
    p = argparse.ArgumentParser(prog="python -m harness.bench.metrics")
    p.add_argument("metric", choices=sorted(METRICS))
    p.add_argument("--qemu", required=True, type=Path, metavar="BINARY")
    p.add_argument("--json", type=Path, metavar="FILE")
    args = p.parse_args(argv)
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    m = METRICS[args.metric]
    value = m.measure(args.qemu)
    print(f"{m.name} = {value:,.2f} {m.unit}")
    if args.json:
        args.json.write_text(json.dumps({"metric": m.name, "value": value, "unit": m.unit,
                                         "higher_is_better": m.higher_is_better}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
