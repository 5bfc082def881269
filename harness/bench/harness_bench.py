"""``sdqtest bench harness``: how fast the harness and the model are.

* qtest round trips: naive vs synchronous vs pipelined client (the clients
  of :mod:`harness.bench.qtest_bench`), per build;
* model vs QEMU, same operation through the same Target interface: one
  register read (HCVER), one SD command (CMD13 through the host driver), one
  128 KiB ADMA2 read (data compared between the two); goal: model >= 20x;
* model erase of 2 MiB, 2 GiB and a whole 64 GiB card (time should not grow
  with the range), each checked to read back erased;
* cross-check scenarios per second (groups ``registers`` and ``card``
  through :func:`harness.check.runner.run`), one QEMU launched per
  scenario and QEMU processes reused; goal >= 20/s on 2 cores.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from harness.bench import qtest_bench
from harness.bench.output import Figure, Run, build_identity
from harness.bench.progress import BenchProgress
from harness.driver.host import HostDriver
from harness.driver.results import Mode
from harness.machine import CardImage, Machine
from harness.model.target import ModelTarget
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget
from harness.target import Target

MIB = 1 << 20
GIB = 1 << 30
GOAL_SPEEDUP = 20.0
GOAL_SCENARIOS = 20.0
HCVER = 0xFE
SCENARIO_GROUPS = ("registers", "card")
ERASE_RANGES = (("2 MiB", 2 * MIB), ("2 GiB", 2 * GIB), ("64 GiB", 64 * GIB))


def _per_op(fn: Callable[[], object], n: int) -> float:
    """Microseconds per call of ``fn`` over ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def make_image(directory: Path) -> tuple[Path, bytes]:
    """A 4 GiB sparse SDHC image with 1 MiB of random data at the start."""
    path = directory / "bench-harness-4g.img"
    content = random.Random(5).randbytes(MIB)
    with open(path, "wb") as f:
        f.truncate(4 * GIB)
        f.write(content)
    return path, content


def _driver(t: Target) -> HostDriver:
    d = HostDriver(t)
    d.setup()
    d.init_card()
    return d


class _Pair:
    """Samples of one operation on QEMU and on the model."""

    def __init__(self) -> None:
        self.qemu: list[float] = []
        self.model: list[float] = []


def model_vs_qemu(b: QemuBuild, image: Path, content: bytes, repeats: int, quick: bool,
                  progress: BenchProgress | None) -> tuple[list[Figure], list[str]]:
    """Register read, SD command and 128 KiB ADMA2 read: model vs QEMU."""
    n_reg = 300 if quick else 2000
    n_cmd = 30 if quick else 200
    n_xfer = 2 if quick else 5
    ops = {"register read (HCVER)": _Pair(), "SD command (CMD13)": _Pair(),
           "128 KiB ADMA2 read": _Pair()}
    notes: list[str] = []
    machine = Machine(image=CardImage(image))
    with QemuTarget(b.binary, machine, name=b.name, timeout=60) as q:
        m = ModelTarget(machine, profile=b.profile)
        dq, dm = _driver(q), _driver(m)
        for t, d in ((q, dq), (m, dm)):  # warm-up, not measured
            _per_op(partial(t.read, HCVER, 2), 50)
            d.send_status()
            d.read_blocks(0, 256, mode=Mode.ADMA2)
        for rep in range(repeats):
            if progress is not None:
                progress.step(b.name, f"model vs QEMU {rep + 1}/{repeats}")
            for t, side in ((q, "qemu"), (m, "model")):
                d = dq if t is q else dm
                pair = ops["register read (HCVER)"]
                getattr(pair, side).append(_per_op(partial(t.read, HCVER, 2), n_reg))
                pair = ops["SD command (CMD13)"]
                getattr(pair, side).append(_per_op(d.send_status, n_cmd))
                got: list[bytes] = []

                def xfer(d: HostDriver = d, got: list[bytes] = got) -> None:
                    got.append(d.read_blocks(0, 256, mode=Mode.ADMA2).data or b"")

                getattr(ops["128 KiB ADMA2 read"], side).append(_per_op(xfer, n_xfer))
                bad = sum(1 for g in got if g != content[:128 * 1024])
                if bad:
                    notes.append(f"{b.name}: {side} 128 KiB ADMA2 read returned wrong data "
                                 f"{bad} times")
        m.close()
    figs: list[Figure] = []
    for op, pair in ops.items():
        unit = "ms" if "128 KiB" in op else "us"
        scale = 1e-3 if unit == "ms" else 1.0
        for side in ("qemu", "model"):
            vals = [v * scale for v in getattr(pair, side)]
            figs.append(Figure("model vs QEMU: time per operation", b.name,
                               {"op": op, "target": side}, unit, vals, False))
        ratios = [qv / mv for qv, mv in zip(pair.qemu, pair.model, strict=True) if mv]
        med = statistics.median(ratios) if ratios else 0.0
        verdict = "met" if med >= GOAL_SPEEDUP else "NOT met"
        figs.append(Figure("model speedup over QEMU", b.name, {"op": op}, "x", ratios, True,
                           {"goal": f">= {GOAL_SPEEDUP:g}x", "verdict": verdict}))
    return figs, notes


def model_erase(b: QemuBuild, repeats: int, progress: BenchProgress | None) -> list[Figure]:
    """Model erase time of 2 MiB, 2 GiB and 64 GiB ranges on a 64 GiB card."""
    figs = []
    for name, length in ERASE_RANGES:
        times: list[float] = []
        erased = "yes"
        for rep in range(repeats):
            if progress is not None:
                progress.step(b.name, f"model erase {name} {rep + 1}/{repeats}")
            m = ModelTarget(Machine(), size=64 * GIB, profile=b.profile)
            d = _driver(m)
            d.write_blocks(0, bytes([0x5A]) * 512)
            last = length // 512 - 1
            t0 = time.perf_counter()
            r = d.erase(0, last)
            times.append((time.perf_counter() - t0) * 1000)
            fill = r.error and -1
            for blk in (0, last):
                data = d.read_blocks(blk, 1).data or b""
                if fill == -1 or len(set(data)) != 1 or data[0] not in (0x00, 0xFF):
                    erased = f"NO (block {blk}: {data[:4]!r})"
            m.close()
        figs.append(Figure("model erase", b.name, {"range": name}, "ms", times, False,
                           {"erased": erased}))
    return figs


def qtest_ops(b: QemuBuild, repeats: int, quick: bool,
              progress: BenchProgress | None) -> list[Figure]:
    """qtest register reads per second: naive, synchronous, pipelined client."""
    n = 300 if quick else 3000
    samples: dict[str, list[float]] = {"naive": [], "sync": [], "pipelined": []}
    with QemuTarget(b.binary, name=b.name) as t:
        qtest_bench._naive(t, 100)
        for rep in range(repeats):
            if progress is not None:
                progress.step(b.name, f"qtest ops {rep + 1}/{repeats}")
            samples["naive"].append(qtest_bench._naive(t, n))
            samples["sync"].append(qtest_bench._sync(t, n))
            samples["pipelined"].append(qtest_bench._pipelined(t, n))
    figs = []
    naive = statistics.median(samples["naive"])
    for client, vals in samples.items():
        med = statistics.median(vals)
        extra: dict[str, Any] = {"vs_naive": f"{med / naive:.2f}x"}
        figs.append(Figure("qtest round trips", b.name, {"client": client}, "ops/s", vals,
                           True, extra))
    return figs


def scenarios_per_second(b: QemuBuild, repeats: int, groups: Sequence[str],
                         progress: BenchProgress | None) -> tuple[list[Figure], list[str]]:
    """Cross-check scenarios of ``groups`` per second, one after the other:
    one QEMU launched for each, then QEMU processes reused (reset between
    scenarios, :class:`harness.qemu.pool.QemuPool`)."""
    import harness.scenarios as scenario
    from harness.check import runner
    from harness.qemu.pool import QemuPool

    scs = list(scenario.select(list(groups)))
    figs: list[Figure] = []
    notes: list[str] = []
    for reuse in (False, True):
        rates: list[float] = []
        statuses: dict[str, int] = {}
        for rep in range(repeats):
            if progress is not None:
                progress.step(b.name, f"scenarios {','.join(groups)} "
                              f"{'reused' if reuse else 'fresh'} {rep + 1}/{repeats}")
            with QemuPool(enabled=reuse) as pool:
                t0 = time.perf_counter()
                for sc in scs:
                    try:
                        status = runner.run(b, sc, "q35", runner.RunOptions(pool=pool)).status
                    except Exception as e:  # the runner's own bug: count it, keep measuring
                        status = "runner error"
                        if rep == 0:
                            notes.append(f"{b.name}: scenario {sc.name}: runner raised "
                                         f"{type(e).__name__}: {e}")
                    if rep == 0:
                        statuses[status] = statuses.get(status, 0) + 1
                rates.append(len(scs) / (time.perf_counter() - t0))
        med = statistics.median(rates)
        extra = {"scenarios": len(scs), "statuses": ", ".join(
                     f"{v} {k}" for k, v in sorted(statuses.items())),
                 "goal": f">= {GOAL_SCENARIOS:g}/s",
                 "verdict": "met" if med >= GOAL_SCENARIOS else "NOT met"}
        figs.append(Figure("cross-check scenarios per second", b.name,
                           {"groups": "+".join(groups),
                            "qemu reuse": "with" if reuse else "without"},
                           "scenarios/s", rates, True, extra))
    return figs, notes


def run(builds: Sequence[QemuBuild], *, repeats: int = 3, quick: bool = False,
        groups: Sequence[str] = SCENARIO_GROUPS, workdir: Path,
        progress_factory: Callable[[int], BenchProgress] | None = None) -> Run:
    """All harness figures for every build."""
    res = Run("harness", options={"repeats": repeats, "quick": quick,
                                  "scenario_groups": list(groups)})
    image, content = make_image(workdir)
    per_build = repeats * (4 + len(ERASE_RANGES))
    progress = progress_factory(per_build * len(builds)) if progress_factory else None
    for b in builds:
        res.builds.append(build_identity(b))
        res.figures += qtest_ops(b, repeats, quick, progress)
        figs, notes = model_vs_qemu(b, image, content, repeats, quick, progress)
        res.figures += figs
        res.notes += notes
        res.figures += model_erase(b, repeats, progress)
        figs, notes = scenarios_per_second(b, repeats, groups, progress)
        res.figures += figs
        res.notes += notes
    if progress is not None:
        progress.clear()
    res.notes.append("cross-check scenarios run one after the other in one process, without "
                     "and with QEMU process reuse; 'sdqtest bench check' adds workers")
    return res
