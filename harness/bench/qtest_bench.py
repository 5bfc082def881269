"""``sdqtest bench qtest``: how fast the harness talks to QEMU.

Three clients drive the same register read on the same QEMU, in one run:

* naive: one line written, one line read with a buffered file, per command
  (what QEMU's ``python/qemu/machine/qtest.py`` does);
* ours, synchronous: :meth:`QtestClient.command`, which also tracks IRQ lines,
  validates arguments and watches for QEMU's death;
* ours, pipelined: :meth:`QtestClient.pipeline`, many commands per write.

Goals (issue 2): pipelined >= 4x naive, synchronous within 10% of naive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness.bench.stats import Summary, summarize
from harness.machine import Machine
from harness.qemu.qtest import fmt_mmio_read
from harness.qemu.session import QemuSession
from harness.qemu.target import QemuTarget

#: HCVER, read-only and side-effect free.
_REG = 0xFE


@dataclass(frozen=True)
class QtestBench:
    build: str
    launch_ms: Summary
    naive: Summary
    sync: Summary
    pipelined: Summary

    def lines(self) -> list[str]:
        return [
            f"{self.build}: launch to first answer {self.launch_ms.fmt(' ms', 1)}",
            f"  naive     {self.naive.fmt(' ops/s')}",
            f"  sync      {self.sync.fmt(' ops/s')}  ({self.sync.median / self.naive.median:.2f}x"
            " naive; goal >= 0.90x)",
            f"  pipelined {self.pipelined.fmt(' ops/s')}  "
            f"({self.pipelined.median / self.naive.median:.2f}x naive; goal >= 4x)",
        ]


def _naive(target: QemuTarget, n: int) -> float:
    sock = target.qtest._sock

    f = sock.makefile("rwb", buffering=0)
    line = (fmt_mmio_read(2, target.bar0 + _REG) + "\n").encode()
    rf = sock.makefile("rb")
    t0 = time.perf_counter()
    for _ in range(n):
        f.write(line)
        answer = rf.readline()
        if not answer.startswith(b"OK"):
            raise RuntimeError(f"naive client got {answer!r}")
    dt = time.perf_counter() - t0
    rf.close()
    f.close()
    return n / dt


def _sync(target: QemuTarget, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        target.read(_REG, 2)
    return n / (time.perf_counter() - t0)


def _pipelined(target: QemuTarget, n: int, depth: int = 256) -> float:
    t0 = time.perf_counter()
    done = 0
    while done < n:
        k = min(depth, n - done)
        target.read_many([(_REG, 2)] * k)
        done += k
    return n / (time.perf_counter() - t0)


def launch_time(binary: Path) -> float:
    """Milliseconds from spawning QEMU to its first qtest answer."""
    t0 = time.perf_counter()
    with QemuSession(binary, Machine.bare("q35")) as s:
        s.qtest.endianness()
        return (time.perf_counter() - t0) * 1000


def run(name: str, binary: Path, *, ops: int = 3000, repeats: int = 5) -> QtestBench:
    launches = [launch_time(binary) for _ in range(repeats)]
    naive, sync, piped = [], [], []
    with QemuTarget(binary, name=name) as t:
        _naive(t, 200)  # warm up
        for _ in range(repeats):
            # interleaved, so drift in machine load hits all three alike
            naive.append(_naive(t, ops))
            sync.append(_sync(t, ops))
            piped.append(_pipelined(t, ops))
    return QtestBench(name, summarize(launches), summarize(naive), summarize(sync),
                      summarize(piped))
