"""``sdqtest bench data``: MiB/s through PIO, SDMA and ADMA2 by block size.

Each request is one multi-block CMD18/CMD25 (Auto CMD12) of ``size`` bytes
through the host driver, on an SDHC card (a 4 GiB sparse raw image made for
the run; QEMU works on its private copy).  Reads come from a region of random
data and are compared with it; writes go to another region and are compared
with the image file QEMU wrote.  Bytes moved must equal bytes requested.

Harness cost versus device time: every qtest command sent during a request
is timed.  Guest-memory transfers (``b64read``/``b64write``: the harness
playing the guest's RAM) count as harness; a register or clock command counts
as harness for what the same command costs against a register that does
nothing (a read of unassigned memory next to the BAR, calibrated per build)
and as device time for the rest; Python time between commands is harness.
PIO moves the Buffer Data Port 128 accesses per pipelined qtest write.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.output import Figure, Run, build_identity
from harness.bench.progress import BenchProgress
from harness.driver.host import HostDriver
from harness.driver.results import Mode, Transfer
from harness.errors import SdqtestError
from harness.hwdefs import sdhci as H
from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.qtest import QtestClient
from harness.qemu.target import QemuTarget

KIB = 1024
MIB = 1 << 20
BLOCK = 512
#: Block sizes (KiB per request): 8/12/16 from seed 001, 128 from seed 000's fio table.
DEFAULT_SIZES = (4, 8, 12, 16, 64, 128, 512, 1024)
QUICK_SIZES = (4, 128)
MODES = {"pio": Mode.PIO, "sdma": Mode.SDMA, "adma2": Mode.ADMA2}
DIRECTIONS = ("read", "write", "mixed")
#: PIO costs one qtest access per 4 bytes; larger PIO requests are skipped.
DEFAULT_PIO_MAX_KIB = 128
IMAGE_SIZE = 4 << 30
READ_REGION = (0, 4 * MIB)
WRITE_REGION = (1 << 30, 4 * MIB)
#: Unassigned guest memory next to BAR0: the "register that does nothing".
NULL_OFFSET = 0x1000
#: Harness overhead goal for a 128 KiB ADMA2 read (issue 7).
GOAL_PCT = 10.0


class BenchError(SdqtestError):
    """A benchmark could not measure what it says it measures."""


# -- timing the qtest traffic ---------------------------------------------------------


@dataclass
class Meter:
    """Times every qtest command; splits it into harness and device time.

    ``device`` sums each register/clock command's time less the no-op cost
    (unclamped, so noise averages out; :attr:`device_s` clamps the total)."""

    null_sync: float  #: seconds per synchronous no-op register access
    null_piped: float  #: seconds per no-op access inside a pipeline
    device: float = 0.0
    memory: float = 0.0
    commands: int = 0
    _client: QtestClient | None = None

    @property
    def device_s(self) -> float:
        return max(0.0, self.device)

    def reset(self) -> None:
        self.device = self.memory = 0.0
        self.commands = 0

    def install(self, client: QtestClient) -> None:
        cls_command = type(client).command
        cls_pipeline = type(client).pipeline

        def command(line: str) -> str:
            t0 = time.perf_counter()
            try:
                return cls_command(client, line)
            finally:
                dt = time.perf_counter() - t0
                self.commands += 1
                if line.startswith(("b64read", "b64write", "read ", "write ", "memset")):
                    self.memory += dt
                else:
                    self.device += dt - self.null_sync

        def pipeline(commands: Iterable[str]) -> list[str]:
            cmds = list(commands)
            t0 = time.perf_counter()
            try:
                return cls_pipeline(client, cmds)
            finally:
                dt = time.perf_counter() - t0
                self.commands += len(cmds)
                self.device += dt - len(cmds) * self.null_piped

        setattr(client, "command", command)  # noqa: B010 (instance override)
        setattr(client, "pipeline", pipeline)  # noqa: B010
        self._client = client

    def uninstall(self) -> None:
        if self._client is not None:
            for name in ("command", "pipeline"):
                self._client.__dict__.pop(name, None)
            self._client = None


def calibrate(t: QemuTarget, n: int = 400) -> tuple[float, float]:
    """Seconds per no-op register access: synchronous, and pipelined (128 deep)."""
    for _ in range(50):
        t.read(NULL_OFFSET, 4)
    sync = []
    piped = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5):
            t.read(NULL_OFFSET, 4)
        sync.append((time.perf_counter() - t0) / (n // 5))
        t0 = time.perf_counter()
        for _ in range(4):
            t.read_many([(NULL_OFFSET, 4)] * 128)
        piped.append((time.perf_counter() - t0) / 512)
    return statistics.median(sync), statistics.median(piped)


# -- the driver, with the PIO data port pipelined ----------------------------------------


class BenchDriver(HostDriver):
    """HostDriver whose PIO moves each block's Buffer Data Port accesses in one
    pipelined qtest write (same register accesses, same order)."""

    def _pio_block(self, t: Transfer, b: int, out: bytearray, src: bytes) -> None:
        target = self.target
        if (not isinstance(target, QemuTarget) or t.pio_access != 4 or t.block_size % 4
                or t.pio_full_tail):
            super()._pio_block(t, b, out, src)
            return
        bs = t.block_size
        port = H.BDATA.offset
        if t.read:
            values = target.read_many([(port, 4)] * (bs // 4))
            out += b"".join(v.to_bytes(4, "little") for v in values)
        else:
            blk = src[b * bs:(b + 1) * bs]
            target.write_many([(port, 4, int.from_bytes(blk[i:i + 4], "little"))
                               for i in range(0, bs, 4)])


# -- the image ------------------------------------------------------------------------


def make_image(directory: Path, seed: int = 7) -> tuple[Path, bytes]:
    """A 4 GiB sparse SDHC image with random data in the read region."""
    path = directory / "bench-sdhc-4g.img"
    content = random.Random(seed).randbytes(READ_REGION[1])
    with open(path, "wb") as f:
        f.truncate(IMAGE_SIZE)
        f.seek(READ_REGION[0])
        f.write(content)
    return path, content


# -- measuring ------------------------------------------------------------------------


@dataclass
class Cell:
    """Samples of one (direction, mode, size) on one build."""

    mibps: list[float] = field(default_factory=list)
    device_ms: list[float] = field(default_factory=list)
    harness_ms: list[float] = field(default_factory=list)
    requests: int = 0
    bytes_requested: int = 0
    bytes_moved: int = 0
    mismatches: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class _State:
    target: QemuTarget
    driver: BenchDriver
    meter: Meter
    content: bytes
    pool: bytes
    counter: int = 0


def _request(st: _State, read: bool, mode: Mode, size: int, cell: Cell) -> tuple[float, float]:
    """One request; returns (seconds, device seconds).

    Bytes moved are what the device counted: the blocks requested less the
    Block Count left in the controller.  Data are checked against the image
    (reads: the DMA buffer is poisoned first, so stale data cannot pass;
    writes: the file QEMU wrote)."""
    n = size // BLOCK
    st.counter += 1
    slots = READ_REGION[1] // size if read else WRITE_REGION[1] // size
    slot = st.counter % slots
    if read:
        offset = READ_REGION[0] + slot * size
        if mode is not Mode.PIO:
            st.target.qtest.memset(st.driver.data_area, size, 0xA5)
        st.meter.reset()
        t0 = time.perf_counter()
        r = st.driver.read_blocks(offset // BLOCK, n, mode=mode)
        dt = time.perf_counter() - t0
        device = st.meter.device_s
        got = r.data or b""
        expect = st.content[offset - READ_REGION[0] : offset - READ_REGION[0] + size]
        ok = got == expect
    else:
        offset = WRITE_REGION[0] + slot * size
        start = (st.counter * 4096) % (len(st.pool) - size)
        data = st.pool[start : start + size]
        st.meter.reset()
        t0 = time.perf_counter()
        r = st.driver.write_blocks(offset // BLOCK, data, mode=mode)
        dt = time.perf_counter() - t0
        device = st.meter.device_s
        ok = st.target.image_read(offset, size) == data
    left = st.target.read(H.BLKCNT.offset, 2)
    cell.requests += 1
    cell.bytes_requested += size
    cell.bytes_moved += (n - left) * BLOCK if r.ok else 0
    if r.error:
        cell.errors.append(f"{'read' if read else 'write'} {size} B {mode.value}: {r.describe()}")
    elif not ok:
        cell.mismatches += 1
    return dt, device


def _sample(st: _State, direction: str, mode: Mode, size: int, min_bytes: int,
            cell: Cell) -> None:
    nreq = max(2 if direction == "mixed" else 1, -(-min_bytes // size))
    total = dev = 0.0
    for i in range(nreq):
        read = direction == "read" or (direction == "mixed" and i % 2 == 0)
        dt, d = _request(st, read, mode, size, cell)
        total += dt
        dev += d
    cell.mibps.append(nreq * size / MIB / total)
    cell.device_ms.append(dev / nreq * 1000)
    cell.harness_ms.append((total - dev) / nreq * 1000)


def plan(sizes_kib: Sequence[int], modes: Sequence[str], directions: Sequence[str],
         pio_max_kib: int) -> list[tuple[str, str, int]]:
    """The (direction, mode, size in KiB) cells to measure."""
    return [(d, m, s) for s in sizes_kib for m in modes for d in directions
            if not (m == "pio" and s > pio_max_kib)]


def bench_build(build: QemuBuild, image: Path, content: bytes,
                cells: Sequence[tuple[str, str, int]], repeats: int, min_bytes: int,
                progress: BenchProgress | None = None) -> dict[tuple[str, str, int], Cell]:
    """Every cell on one build, ``repeats`` interleaved rounds, one QEMU process."""
    out: dict[tuple[str, str, int], Cell] = {c: Cell() for c in cells}
    with QemuTarget(build.binary, Machine(image=CardImage(image)), name=build.name,
                    timeout=60) as t:
        d = BenchDriver(t)
        d.setup()
        info = d.init_card()
        if not info.high_capacity:
            raise BenchError(f"{build.name}: the 4 GiB card did not come up as SDHC")
        null_sync, null_piped = calibrate(t)
        meter = Meter(null_sync, null_piped)
        st = _State(t, d, meter, content, random.Random(11).randbytes(2 * MIB + 4096))
        meter.install(t.qtest)
        try:
            # one warm-up request per mode, not measured
            for m in {c[1] for c in cells}:
                _request(st, True, MODES[m], 4096, Cell())
            for rep in range(repeats):
                for c in cells:
                    direction, mode, kib = c
                    if progress is not None:
                        progress.step(build.name, f"round {rep + 1}/{repeats} {direction} "
                                      f"{mode} {kib} KiB")
                    _sample(st, direction, MODES[mode], kib * KIB, min_bytes, out[c])
        finally:
            meter.uninstall()
        out[("_calibration", "", 0)] = Cell(device_ms=[null_sync * 1000, null_piped * 1000])
    return out


def figures_of(build: str, cells: dict[tuple[str, str, int], Cell]) -> list[Figure]:
    figs = []
    for (direction, mode, kib), c in cells.items():
        if direction.startswith("_"):
            continue
        dev = statistics.median(c.device_ms)
        har = statistics.median(c.harness_ms)
        verified = c.mismatches == 0 and not c.errors and c.bytes_moved == c.bytes_requested
        extra: dict[str, Any] = {
            "device_ms": round(dev, 3), "harness_ms": round(har, 3),
            # None: device time below the no-op noise (PIO: nearly all harness)
            "harness_pct": round(100 * har / dev, 1) if dev else None,
            "device_mibps": round(kib / 1024 / (dev / 1000), 2) if dev else 0.0,
            "requests": c.requests, "bytes_requested": c.bytes_requested,
            "bytes_moved": c.bytes_moved, "verified": "yes" if verified else "NO",
            "device_ms_samples": c.device_ms, "harness_ms_samples": c.harness_ms,
        }
        if c.errors:
            extra["errors"] = c.errors[:5]
        if c.mismatches:
            extra["mismatches"] = c.mismatches
        figs.append(Figure("throughput", build,
                           {"direction": direction, "mode": mode, "block_kib": kib},
                           "MiB/s", c.mibps, True, extra,
                           "ok" if verified else "data mismatch",
                           ["device_ms", "harness_ms", "harness_pct", "verified"]))
    return figs


def run(builds: Sequence[QemuBuild], *, sizes_kib: Sequence[int] = DEFAULT_SIZES,
        modes: Sequence[str] = tuple(MODES), directions: Sequence[str] = DIRECTIONS,
        repeats: int = 3, min_bytes: int = 128 * KIB, pio_max_kib: int = DEFAULT_PIO_MAX_KIB,
        workdir: Path, progress_factory: Callable[[int], BenchProgress] | None = None) -> Run:
    """The data benchmark on every build, on the same image."""
    for s in sizes_kib:
        if s <= 0 or s * KIB % BLOCK or s * KIB > READ_REGION[1]:
            raise BenchError(f"block size {s} KiB: a multiple of 0.5 KiB up to 4096 KiB")
    cells = plan(sizes_kib, modes, directions, pio_max_kib)
    image, content = make_image(workdir)
    res = Run("data", options={"sizes_kib": list(sizes_kib), "modes": list(modes),
                               "directions": list(directions), "repeats": repeats,
                               "min_bytes_per_sample": min_bytes, "pio_max_kib": pio_max_kib,
                               "image": "4 GiB sparse raw SDHC"})
    progress = progress_factory(len(builds) * len(cells) * repeats) if progress_factory else None
    for b in builds:
        res.builds.append(build_identity(b))
        got = bench_build(b, image, content, cells, repeats, min_bytes, progress)
        cal = got.pop(("_calibration", "", 0))
        res.notes.append(f"{b.name}: no-op register access {cal.device_ms[0] * 1000:.0f} us "
                         f"synchronous, {cal.device_ms[1] * 1000:.1f} us pipelined")
        res.figures += figures_of(b.name, got)
    if progress is not None:
        progress.clear()
    res.notes += goal_notes(res)
    if any(m == "pio" for m in modes) and any(s > pio_max_kib for s in sizes_kib):
        res.notes.append(f"PIO measured up to {pio_max_kib} KiB only (one qtest access per "
                         "4 bytes); --pio-max raises it")
    return res


def goal_notes(res: Run) -> list[str]:
    """Whether the harness overhead goal holds for a 128 KiB ADMA2 read, per build."""
    out = []
    for f in res.figures:
        if f.labels == {"direction": "read", "mode": "adma2", "block_kib": 128}:
            pct = float(f.extra["harness_pct"] or float("inf"))
            verdict = "met" if pct < GOAL_PCT else "NOT met"
            out.append(f"{f.build}: harness overhead for a 128 KiB ADMA2 read is {pct:.1f}% of "
                       f"device time ({f.extra['harness_ms']} ms vs {f.extra['device_ms']} ms); "
                       f"goal < {GOAL_PCT:.0f}%: {verdict}")
    bad = [f for f in res.figures if f.status != "ok"]
    if res.figures and not bad:
        n = sum(int(f.extra["requests"]) for f in res.figures)
        out.append(f"all {n} requests: bytes moved (blocks the controller counted) = bytes "
                   "requested, and the data equal the image")
    for f in bad:
        out.append(f"{f.build} {f.labels}: bytes moved {f.extra['bytes_moved']} of "
                   f"{f.extra['bytes_requested']} requested, {f.extra.get('mismatches', 0)} "
                   f"data mismatches, errors: {f.extra.get('errors', [])}")
    return out
