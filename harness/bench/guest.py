"""``sdqtest bench guest``: a real Linux guest on the SD card, the seed's own method.

Per build: one boot of Debian's kernel and our initramfs (:mod:`harness.guest`) on a
card image made for the run, running fio on ``/dev/mmcblk0`` (read, write and
readwrite at 128 KiB with direct I/O, the seed's table; then a block-size sweep), a
pattern written and one read through the block layer, and a ``blkdiscard`` of the
erase range; then the image is checked from the host.  With ``erase-blocks-as-zero``
where the build has it, a second boot erases with the property on.  Beside each
128 KiB figure: the qtest-level figure of :mod:`harness.bench.data` for the same
build (ADMA2, 128 KiB) and the guest/qtest ratio.  Every figure names its
accelerator (KVM when ``/dev/kvm`` works and the guest boots with it, else TCG).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.output import Figure, Run, build_identity
from harness.bench.progress import BenchProgress
from harness.errors import GuestError
from harness.guest import assemble, card, protocol, runner
from harness.guest.card import KIB, MIB, CardLayout
from harness.guest.runner import GuestRun, GuestRunError
from harness.provision import firmware
from harness.qemu.builds import QemuBuild

DEFAULT_SIZES = (4, 8, 12, 16, 64, 128, 512, 1024)
FIO_TABLE = ("read", "write", "readwrite")
#: fio's direction -> the data benchmark's direction (for the qtest-level figure).
QTEST_DIRECTION = {"read": "read", "write": "write", "readwrite": "mixed"}
#: A guest that boots under KVM prints its first console line within a second or two.
KVM_BOOT_TIMEOUT = 20.0


@dataclass
class Options:
    """What ``sdqtest bench guest`` measures and how."""

    runtime: int = 10  #: seconds per fio job of the 128 KiB table (the seed used 60)
    sweep_runtime: int = 3  #: seconds per fio job of the block-size sweep
    sizes: tuple[int, ...] = DEFAULT_SIZES
    sweep_rw: tuple[str, ...] = ("read", "write")
    erase_mib: int = 1024
    fio_mib: int = 1024
    fmt: str = "raw"
    accel: str = "auto"  #: auto, kvm or tcg
    boot_timeout: float = 180.0
    erase_limit: float = 600.0
    kernel: Path | None = None
    initrd: Path | None = None
    append: str = ""
    qtest: bool = True
    qtest_repeats: int = 3
    keep_logs: Path | None = None


# -- accelerator -----------------------------------------------------------------------

_kvm_boots: dict[str, bool] = {}


def accel_candidates(opts: Options, build: QemuBuild) -> list[str]:
    """Accelerators to try in order (KVM once per build: whether it boots is the build's)."""
    if opts.accel != "auto":
        return [opts.accel]
    if runner.kvm_usable() and _kvm_boots.get(str(build.binary), True):
        return ["kvm", "tcg"]
    return ["tcg"]


# -- jobs ------------------------------------------------------------------------------


def fio_job(rw: str, kib: int, runtime: int, fio_mib: int) -> str:
    return f"fio:{rw}:{kib}:{runtime}:{fio_mib}"


def jobs_for(lay: CardLayout, opts: Options, full: bool) -> list[str]:
    """The jobs of one boot: everything (``full``), or only the erase."""
    erase = f"discard:{lay.erase_at // MIB}:{lay.erase_bytes // MIB}"
    if not full:
        return [erase]
    jobs = [f"pread:{lay.read_at // KIB}:{lay.read_bytes // KIB}"]
    jobs += [fio_job(rw, 128, opts.runtime, opts.fio_mib) for rw in FIO_TABLE]
    jobs += [fio_job(rw, k, opts.sweep_runtime, opts.fio_mib)
             for k in opts.sizes for rw in opts.sweep_rw]
    jobs += [f"pwrite:{lay.pattern_at // KIB}:{lay.pattern_bytes // KIB}", erase]
    return jobs


def job_timeout(opts: Options) -> Callable[[str], float]:
    def limit(job: str) -> float:
        kind, *args = job.split(":")
        if kind == "fio":
            return float(args[2]) * 3 + 60
        if kind == "discard":
            return opts.erase_limit
        return 300.0
    return limit


# -- one boot --------------------------------------------------------------------------


@dataclass
class Boot:
    """One guest boot's outcome."""

    run: GuestRun | None
    accel: str
    error: str | None = None
    timed_out_job: str | None = None
    notes: list[str] = field(default_factory=list)


def boot(build: QemuBuild, guest: assemble.Guest | None, opts: Options, image: Path,
         lay: CardLayout, jobs: list[str], erase_zero: bool | None, workdir: Path,
         tag: str, progress: BenchProgress | None) -> Boot:
    """Boot the guest on ``image`` with ``jobs``; tries KVM first in auto mode."""
    kernel = opts.kernel or (guest.kernel if guest else None)
    base_initrd = opts.initrd or (guest.initramfs if guest else None)
    if kernel is None or base_initrd is None:
        raise GuestError("no guest kernel/initramfs: run 'sdqtest bench guest' as root once "
                         "(it assembles them) or give --kernel and --initrd")
    initrd = runner.with_extras(base_initrd, {"sdqtest/pattern.bin": lay.pattern_file()},
                                workdir / f"initrd-{tag}")
    append = " ".join(x for x in (runner.BASE_APPEND, protocol.jobs_param(jobs), opts.append)
                      if x)
    notes: list[str] = []
    logs = opts.keep_logs or workdir
    cands = accel_candidates(opts, build)

    def on_message(m: protocol.Message) -> None:
        if progress is not None and m.kind == "START":
            progress.step(build.name, f"{tag}: {m.job}", advance=False)

    found = firmware.search_args(build.binary)  # a build directory without blobs
    for i, accel in enumerate(cands):
        argv = runner.qemu_argv(build.binary, image=image, fmt=opts.fmt, kernel=kernel,
                                initrd=initrd, append=append, accel=accel,
                                erase_blocks_as_zero=erase_zero, firmware=found)
        last = i == len(cands) - 1
        bt = opts.boot_timeout if last else min(opts.boot_timeout, KVM_BOOT_TIMEOUT)
        try:
            r = runner.run(argv, accel=accel, console_log=logs / f"console-{build.name}-{tag}"
                           f"-{accel}.log", boot_timeout=bt, job_timeout=job_timeout(opts),
                           on_message=on_message)
        except GuestRunError as e:
            booted = e.run is not None and e.run.transcript.hello is not None
            if accel == "kvm" and not booted and not last:
                _kvm_boots[str(build.binary)] = False
                notes.append(f"KVM: /dev/kvm works but the guest did not boot with it "
                             f"({e}); TCG used")
                continue
            return Boot(e.run, accel, str(e), e.job, notes)
        if accel == "kvm":
            _kvm_boots[str(build.binary)] = True
        return Boot(r, accel, None, None, notes)
    raise AssertionError("unreachable")


# -- figures ---------------------------------------------------------------------------


def _label(accel: str) -> str:
    return accel.upper()


def fio_figures(build: str, accel: str, t: protocol.Transcript, opts: Options,
                qtest: dict[str, float]) -> list[Figure]:
    """The 128 KiB table (with the qtest-level figure beside it) and the sweep."""
    figs = []
    for rw in FIO_TABLE:
        job = fio_job(rw, 128, opts.runtime, opts.fio_mib)
        labels: dict[str, str | int | float] = {"rw": rw, "block_kib": 128,
                                                "accel": _label(accel)}
        cols = ["iops", "clat_ms", "qtest_mibps", "guest_per_qtest"]
        res = t.results.get(job)
        if res is None:
            figs.append(Figure("guest fio 128 KiB", build, labels, "MiB/s", [],
                               status=_missing(t, job), columns=cols))
            continue
        s = protocol.fio_summary(res)
        mibps = s.get("read_mibps", 0.0) + s.get("write_mibps", 0.0)
        iops = s.get("read_iops", 0.0) + s.get("write_iops", 0.0)
        lat = [v for k, v in s.items() if k.endswith("clat_ms")]
        q = qtest.get(QTEST_DIRECTION[rw])
        extra: dict[str, Any] = {"iops": round(iops, 1),
                                 "clat_ms": round(statistics.mean(lat), 2) if lat else None,
                                 "qtest_mibps": round(q, 3) if q else None,
                                 "guest_per_qtest": round(mibps / q, 3) if q else None,
                                 "runtime_s": opts.runtime, **{k: round(v, 3) for k, v in
                                                               s.items()}}
        figs.append(Figure("guest fio 128 KiB", build, labels, "MiB/s", [mibps], True, extra,
                           columns=cols))
    for kib in opts.sizes:
        for rw in opts.sweep_rw:
            job = fio_job(rw, kib, opts.sweep_runtime, opts.fio_mib)
            labels = {"direction": rw, "block_kib": kib, "accel": _label(accel)}
            res = t.results.get(job)
            if res is None:
                figs.append(Figure("guest fio by block size", build, labels, "MiB/s", [],
                                   status=_missing(t, job), columns=["iops", "clat_ms"]))
                continue
            s = protocol.fio_summary(res)
            d = "read" if rw == "read" else "write"
            figs.append(Figure("guest fio by block size", build, labels, "MiB/s",
                               [s.get(f"{d}_mibps", 0.0)], True,
                               {"iops": round(s.get(f"{d}_iops", 0.0), 1),
                                "clat_ms": round(s.get(f"{d}_clat_ms", 0.0), 2),
                                "runtime_s": opts.sweep_runtime},
                               columns=["iops", "clat_ms"]))
    return figs


def _missing(t: protocol.Transcript, job: str) -> str:
    for j, err in t.errors:
        if j == job:
            return f"error: {err}"[:120]
    return "no result"


def erase_figure(build: str, b: Boot, lay: CardLayout, opts: Options, image: Path,
                 before: tuple[int, int], setting: str) -> tuple[Figure, list[str]]:
    """The erase's time, allocation before/after and what the range reads as."""
    job = f"discard:{lay.erase_at // MIB}:{lay.erase_bytes // MIB}"
    labels: dict[str, str | int | float] = {
        "range": _size(lay.erase_bytes), "format": opts.fmt,
        "erase_blocks_as_zero": setting, "accel": _label(b.accel)}
    cols = ["host_s", "reads_as", "allocated_before_mib", "allocated_after_mib",
            "range_allocated_mib", "guards", "projected_s"]
    t = b.run.transcript if b.run else protocol.Transcript()
    res = t.results.get(job)
    after_alloc = card.allocated(image)
    range_after = card.allocated_in(image, lay.erase_at, lay.erase_bytes) \
        if opts.fmt == "raw" else None
    extra: dict[str, Any] = {
        "allocated_before_mib": round(before[0] / MIB, 1),
        "allocated_after_mib": round(after_alloc / MIB, 1),
        "range_allocated_before_mib": round(before[1] / MIB, 1) if opts.fmt == "raw" else None,
        "range_allocated_mib": round(range_after / MIB, 1) if range_after is not None else None,
    }
    notes: list[str] = []
    view = card.RawView(image, opts.fmt)
    try:
        reads_as, verdict = card.check_erase(view, lay)
    finally:
        view.close()
    extra["reads_as"] = reads_as
    extra["guards"] = "intact" if verdict.checks["erase guards intact"] else "DAMAGED"
    if b.timed_out_job == job and b.run is not None:

        written = (range_after or 0) - before[1]
        extra.update(limit_s=opts.erase_limit, written_mib=round(written / MIB, 1))
        if written > 0 and range_after is not None:
            extra["projected_s"] = round(opts.erase_limit * lay.erase_bytes / written)
        return Figure("guest erase", build, labels, "s", [], False, extra,
                      f"over budget (> {opts.erase_limit:g} s)", cols), notes
    if res is None:
        return Figure("guest erase", build, labels, "s", [], False, extra,
                      _missing(t, job) if b.error is None else f"error: {b.error}"[:120],
                      cols), notes
    if not res.get("supported", True):
        notes.append(f"{build}: Linux refuses discard on this card: {res.get('reason')}")
        return Figure("guest erase", build, labels, "s", [], False, extra, "no discard",
                      cols), notes
    host = b.run.job_host_s.get(job) if b.run else None
    extra["host_s"] = round(host, 2) if host is not None else None
    extra["discard_max_bytes"] = res.get("discard_max_bytes")
    status = "ok" if verdict.ok else "not erased" if reads_as == "not erased" else "guards damaged"
    notes += [f"{build} erase {setting}: {d}" for d in verdict.details]
    return Figure("guest erase", build, labels, "s", [float(res["guest_ms"]) / 1000], False,
                  extra, status, cols), notes


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n % (1 << 30) == 0 else f"{n >> 20} MiB"


def integrity_figures(build: str, accel: str, t: protocol.Transcript, lay: CardLayout,
                      image: Path, fmt: str) -> tuple[list[Figure], list[str]]:
    """The pattern the guest wrote and read, and nothing else touched, checked from the host."""
    checks: dict[str, bool] = {}
    notes: list[str] = []
    rd = t.results.get(f"pread:{lay.read_at // KIB}:{lay.read_bytes // KIB}")
    checks["guest reads the host's pattern"] = bool(
        rd and rd.get("sha256") == card.sha256(lay.read_content()))
    wr = t.results.get(f"pwrite:{lay.pattern_at // KIB}:{lay.pattern_bytes // KIB}")
    view = card.RawView(image, fmt)
    try:
        v = card.check_integrity(view, lay, wrote_pattern=bool(wr))
    finally:
        view.close()
    if not wr:
        v.checks["pattern present"] = False
    checks.update(v.checks)
    notes += [f"{build} integrity: {d}" for d in v.details]
    figs = [Figure("guest end-to-end integrity", build, {"check": name, "accel": _label(accel)},
                   "", [], True, {}, "yes" if ok else "NO") for name, ok in checks.items()]
    return figs, notes


# -- per build ------------------------------------------------------------------------


def qtest_figures(build: QemuBuild, workdir: Path, repeats: int) -> dict[str, float]:
    """MiB/s of 128 KiB ADMA2 requests at qtest level (the data benchmark's measurement)."""
    from harness.bench import data

    if not build.profile.has_qtest_accel:
        return {}
    image, content = data.make_image(workdir)
    try:
        cells = [(d, "adma2", 128) for d in ("read", "write", "mixed")]
        got = data.bench_build(build, image, content, cells, repeats, 512 * KIB)
    finally:
        image.unlink(missing_ok=True)
    return {d: statistics.median(got[(d, m, k)].mibps) for d, m, k in cells}


def bench_build(build: QemuBuild, guest: assemble.Guest | None, opts: Options, workdir: Path,
                progress: BenchProgress | None) -> tuple[list[Figure], list[str]]:
    """Every figure of one build."""
    figs: list[Figure] = []
    notes: list[str] = []
    lay = CardLayout.make(opts.erase_mib, opts.fio_mib)
    settings: list[bool | None] = [False, True] if build.has_erase_blocks_as_zero else [None]
    qtest: dict[str, float] = {}
    if opts.qtest:
        if progress is not None:
            progress.step(build.name, "qtest-level 128 KiB ADMA2", advance=False)
        qtest = qtest_figures(build, workdir, opts.qtest_repeats)
        if not qtest:
            notes.append(f"{build.name}: no qtest accelerator: no qtest-level figure")
    for n, setting in enumerate(settings):
        tag = {None: "default", False: "off", True: "on"}[setting]
        if progress is not None:
            progress.step(build.name, f"boot ({tag})")
        image = card.make_image(workdir, lay, opts.fmt)
        before = (card.allocated(image), card.allocated_in(image, lay.erase_at, lay.erase_bytes)
                  if opts.fmt == "raw" else 0)
        b = boot(build, guest, opts, image, lay, jobs_for(lay, opts, n == 0), setting,
                 workdir, tag, progress)
        notes += [f"{build.name}: {x}" for x in b.notes]
        t = b.run.transcript if b.run else protocol.Transcript()
        if b.error:
            notes.append(f"{build.name} ({tag}): {b.error}")
        if b.run is not None:
            notes.append(f"{build.name} ({tag}, {_label(b.accel)}): boot to /init "
                         f"{b.run.boot_s:.1f} s, whole run {b.run.total_s:.0f} s, kernel "
                         f"{(t.hello or {}).get('kernel', '?')}; console log "
                         f"{b.run.console_log}")
            card_info = t.results.get("card")
            if card_info and n == 0:
                notes.append(f"{build.name}: card {card_info.get('bytes', 0) >> 20} MiB, type "
                             f"{card_info.get('card_type')}, discard_max_bytes "
                             f"{card_info.get('discard_max_bytes')}, erase_size "
                             f"{card_info.get('erase_size')}")
            notes += [f"{build.name}: protocol: {e}" for e in t.protocol_errors[:3]]
        if n == 0:
            figs += fio_figures(build.name, b.accel, t, opts, qtest)
            ifigs, inotes = integrity_figures(build.name, b.accel, t, lay, image, opts.fmt)
            figs += ifigs
            notes += inotes
        efig, enotes = erase_figure(build.name, b, lay, opts, image, before,
                                    "default (no property)" if setting is None else tag)
        figs.append(efig)
        notes += enotes
        image.unlink(missing_ok=True)
    if not build.has_erase_blocks_as_zero:
        figs.append(Figure("guest erase", build.name,
                           {"range": _size(lay.erase_bytes), "format": opts.fmt,
                            "erase_blocks_as_zero": "on", "accel": figs[-1].labels["accel"]},
                           "s", [], False, {}, "no property"))
    return figs, notes


def run(builds: Sequence[QemuBuild], opts: Options, *, workdir: Path,
        progress_factory: Callable[[int], BenchProgress] | None = None,
        log: Callable[[str], None] = print) -> Run:
    """The guest benchmark on every build."""
    for s in opts.sizes:
        if s <= 0 or s * KIB % 512:
            raise GuestError(f"block size {s} KiB: a multiple of 0.5 KiB")
    guest = None
    if opts.kernel is None or opts.initrd is None:
        guest = assemble.assemble(log=log)
    res = Run("guest", options={
        "runtime_s": opts.runtime, "sweep_runtime_s": opts.sweep_runtime,
        "sizes_kib": list(opts.sizes), "sweep_rw": list(opts.sweep_rw),
        "erase_mib": opts.erase_mib, "fio_region_mib": opts.fio_mib, "format": opts.fmt,
        "accel": opts.accel, "kernel": str(opts.kernel or (guest.kernel if guest else "")),
        "initrd": str(opts.initrd or (guest.initramfs if guest else "")),
        "append": opts.append, "guest_packages": guest.packages if guest else {},
        "image": f"{CardLayout.make(opts.erase_mib, opts.fio_mib).card_bytes >> 30} GiB sparse "
                 f"{opts.fmt} SDHC, made for the run"})
    steps = sum(2 if b.has_erase_blocks_as_zero else 1 for b in builds)
    progress = progress_factory(steps) if progress_factory else None
    start = time.monotonic()
    for b in builds:
        res.builds.append(build_identity(b))
        figs, notes = bench_build(b, guest, opts, workdir, progress)
        res.figures += figs
        res.notes += notes
    if progress is not None:
        progress.clear()
    res.notes.append(f"whole run {time.monotonic() - start:.0f} s; fio runtime {opts.runtime} s "
                     f"per 128 KiB job (the seed used 60 s), {opts.sweep_runtime} s per sweep job")
    return res
