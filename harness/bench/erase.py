"""``sdqtest bench erase``: time to erase 2 GiB and a whole 64 GiB card.

CMD32/CMD33/CMD38 through the host driver over the whole range, on a sparse
image made for the run (raw, and qcow2 when ``qemu-img`` is there) that holds
data at both ends of the range and just after it.  Measured: the erase time
(stopped and reported "over budget" past ``limit`` seconds: QEMU is killed),
the allocated size (``st_blocks * 512``) of the copy QEMU wrote, before and
after, and whether the range really reads back erased (0xFF, or 0x00 with
``erase-blocks-as-zero``) while the data after it is untouched.  With and
without ``erase-blocks-as-zero`` where the build has the property; a build
without it (no Debian build has it) is marked "no property".
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bench.output import Figure, Run, build_identity
from harness.bench.progress import BenchProgress
from harness.driver.host import HostDriver
from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.qtest import QtestClosed, QtestTimeout
from harness.qemu.session import QemuError
from harness.qemu.target import QemuTarget

MIB = 1 << 20
GIB = 1 << 30
BLOCK = 512
#: Data written at each end of the range, and after it, before the erase.
MARK = MIB
DEFAULT_LIMIT = 60.0
PROPERTY = "erase-blocks-as-zero"


@dataclass(frozen=True)
class Case:
    """Erase ``length`` bytes from offset 0 of a ``card``-byte image."""

    name: str
    card: int
    length: int


#: 2 GiB on an SDHC card (seed 000: 26 s -> 0.1 s), and a whole SDXC card.
DEFAULT_CASES = (Case("2 GiB", 4 * GIB, 2 * GIB), Case("64 GiB", 64 * GIB, 64 * GIB))
QUICK_CASES = (Case("16 MiB", 4 * GIB, 16 * MIB),)


def allocated(path: Path) -> int:
    """Bytes the file occupies on disk."""
    return os.stat(path).st_blocks * 512


def qemu_img() -> str | None:
    return shutil.which("qemu-img")


def _marks(case: Case) -> list[int]:
    """Offsets of the data marks: range start, range end, after the range."""
    out = [0, case.length - MARK]
    if case.length + MARK <= case.card:
        out.append(case.length)
    return out


def make_image(directory: Path, case: Case, fmt: str, mark: bytes) -> Path:
    """A sparse raw image with ``mark`` at each mark offset (converted to qcow2)."""
    raw = directory / f"erase-{case.card >> 20}m-{case.length >> 20}m.img"
    if not raw.exists():
        with open(raw, "wb") as f:
            f.truncate(case.card)
            for off in _marks(case):
                f.seek(off)
                f.write(mark)
    if fmt == "raw":
        return raw
    tool = qemu_img()
    if tool is None:
        raise FileNotFoundError("qemu-img")
    out = raw.with_suffix(".qcow2")
    if not out.exists():
        subprocess.run([tool, "convert", "-f", "raw", "-O", "qcow2", str(raw), str(out)],
                       check=True, capture_output=True, timeout=600)
    return out


@dataclass
class EraseOutcome:
    seconds: float
    finished: bool
    alloc_before: int
    alloc_after: int
    erased: str  #: "yes", "NO: ...", or "-" when not checked
    error: str = ""


def _verify(d: HostDriver, t: QemuTarget, case: Case, fmt: str, fill: int,
            mark: bytes) -> str:
    """The range reads back ``fill`` at both ends (device and, for raw, the
    file); the data after the range is untouched."""
    last = case.length // BLOCK - 1
    problems = []
    for blk in (0, last):
        r = d.read_blocks(blk, 1)
        if r.error or r.data != bytes([fill]) * BLOCK:
            problems.append(f"block {blk} reads {(r.data or b'')[:4]!r}")
    if fmt == "raw":
        for off in (0, case.length - MARK):
            if t.image_read(off, MARK) != bytes([fill]) * MARK:
                problems.append(f"image at {off:#x} not {fill:#04x}")
    if case.length + MARK <= case.card:
        r = d.read_blocks(case.length // BLOCK, 8)
        if r.error or r.data != mark[:8 * BLOCK]:
            problems.append("data after the range changed")
    return "yes" if not problems else "NO: " + "; ".join(problems)


def erase_once(build: QemuBuild, image: Path, fmt: str, case: Case, zero: bool | None,
               limit: float, mark: bytes) -> EraseOutcome:
    """One erase on a fresh QEMU (a fresh copy of ``image``)."""
    props: dict[str, Any] = {} if zero is None else {PROPERTY: zero}
    machine = Machine(card=props, image=CardImage(image, format=fmt))
    with QemuTarget(build.binary, machine, name=build.name, timeout=limit) as t:
        assert t.image is not None
        d = HostDriver(t)
        d.setup()
        d.init_card()
        before = allocated(t.image)
        t0 = time.perf_counter()
        try:
            r = d.erase(0, case.length // BLOCK - 1)
        except (QtestTimeout, QtestClosed, QemuError) as e:
            dt = time.perf_counter() - t0
            return EraseOutcome(dt, False, before, allocated(t.image), "-",
                                "" if dt >= 0.9 * limit else f"{type(e).__name__}: {e}")
        dt = time.perf_counter() - t0
        after = allocated(t.image)
        if r.error:
            return EraseOutcome(dt, True, before, after, "-", f"erase failed: {r.describe()}")
        erased = _verify(d, t, case, fmt, 0x00 if zero else 0xFF, mark)
        return EraseOutcome(dt, True, before, after, erased)


def variants(build: QemuBuild) -> list[tuple[str, bool | None]]:
    """(label, property value) pairs to run; None = the build's default."""
    if build.has_erase_blocks_as_zero:
        return [("off", False), ("on", True)]
    return [("no property", None)]


def run(builds: Sequence[QemuBuild], *, cases: Sequence[Case] = DEFAULT_CASES,
        formats: Sequence[str] = ("raw", "qcow2"), repeats: int = 3,
        limit: float = DEFAULT_LIMIT, workdir: Path,
        progress_factory: Callable[[int], BenchProgress] | None = None) -> Run:
    """Every case x format x property value on every build."""
    res = Run("erase", options={"cases": [c.name for c in cases], "formats": list(formats),
                                "repeats": repeats, "limit_s": limit})
    fmts = list(formats)
    if "qcow2" in fmts and qemu_img() is None:
        fmts.remove("qcow2")
        res.notes.append("qcow2 skipped: qemu-img not found (Debian: apt-get install qemu-utils)")
    mark = random.Random(3).randbytes(MARK)
    total = sum(len(variants(b)) for b in builds) * len(cases) * len(fmts) * repeats
    progress = progress_factory(total) if progress_factory else None
    for b in builds:
        res.builds.append(build_identity(b))
    for case in cases:
        for fmt in fmts:
            image = make_image(workdir, case, fmt, mark)
            for b in builds:
                for label, zero in variants(b):
                    res.figures += _measure(b, image, fmt, case, label, zero, repeats, limit,
                                            mark, progress)
                if not b.has_erase_blocks_as_zero:
                    labels: dict[str, str | int | float] = {
                        "range": case.name, "format": fmt, PROPERTY: "on"}
                    res.figures.append(Figure("erase time", b.name, labels, "s", [], False,
                                              {}, "no property"))
            if fmt == "qcow2":
                image.unlink()
    if progress is not None:
        progress.clear()
    res.notes.append(f"time limit {limit:g} s per erase: past it QEMU is killed and the erase "
                     "is reported over budget (not repeated); 'projected_s' extrapolates from "
                     "the bytes written by then")
    if not any(b.has_erase_blocks_as_zero for b in builds):
        res.notes.append(f"no selected build has sd-card property {PROPERTY} (the hw/sd "
                         "performance series): erase writes 0xFF, 'on' rows say 'no property'")
    return res


def _measure(b: QemuBuild, image: Path, fmt: str, case: Case, label: str, zero: bool | None,
             repeats: int, limit: float, mark: bytes,
             progress: BenchProgress | None) -> list[Figure]:
    labels: dict[str, str | int | float] = {"range": case.name, "format": fmt, PROPERTY: label}
    times: list[float] = []
    outs: list[EraseOutcome] = []
    for rep in range(repeats):
        if progress is not None:
            progress.step(b.name, f"erase {case.name} {fmt} {label} {rep + 1}/{repeats}")
        o = erase_once(b, image, fmt, case, zero, limit, mark)
        outs.append(o)
        if not o.finished or o.error:
            if progress is not None:
                progress.done += repeats - rep - 1
            break
        times.append(o.seconds)
    last = outs[-1]
    extra: dict[str, Any] = {
        "alloc_before_mib": round(last.alloc_before / MIB, 1),
        "alloc_after_mib": round(last.alloc_after / MIB, 1),
        "erased": last.erased,
        "samples_s": [round(o.seconds, 3) for o in outs],
    }
    status = "ok"
    if not last.finished and not last.error:
        status = f"over budget (>{limit:g} s)"
        extra["limit_s"] = limit
        grown = max(0, last.alloc_after - last.alloc_before)
        if grown and zero is not True:
            extra["projected_s"] = round(case.length / (grown / last.seconds), 0)
    elif last.error:
        status = "error"
        extra["error"] = last.error
    cols = ["alloc_before_mib", "alloc_after_mib", "erased", "projected_s"]
    figs = [Figure("erase time", b.name, labels, "s", times, False, extra, status, cols)]
    figs.append(Figure("allocated after erase", b.name, dict(labels), "MiB",
                       [o.alloc_after / MIB for o in outs], False,
                       {"before_mib": round(last.alloc_before / MIB, 1),
                        "finished": "yes" if last.finished else "no (stopped)"}))
    return figs
