"""Record a real Linux driver's controller traffic: one TCG boot with QEMU's trace on.

The guest is the bench's (:mod:`harness.guest.assemble`: Debian's ``linux-image-amd64``
and its mmc modules, busybox, fio, util-linux) with the recording ``/init`` of
:mod:`harness.guest.record_init` and the write phases' data appended as a second
initramfs archive.  It boots on q35 with sdhci-pci and an sd-card on a copy of the
caller's raw image, under TCG (the recording must not depend on KVM), with these
trace events written by the *log* backend Debian's builds have, to a file (``-D``):

* ``memory_region_ops_read`` / ``memory_region_ops_write``: every access the CPU
  made to every MMIO and I/O region, with its offset in the region, size and value,
  traced by QEMU's memory core before the device sees a write and after it answered
  a read; the controller's are those of the region named ``sdhci``, the phase
  markers those of ``ioport80``;
* ``sdhci_adma_loop``: each ADMA descriptor the controller fetched (address,
  length, attribute), the only place DMA descriptors appear;
* ``sdhci_send_command``: the command the controller sent (for the reader).

Why trace events and not a TCG plugin: a plugin sees what the CPU does (its
instructions and its loads and stores by virtual address), not what a device does
with guest memory, so it could not show the DMA descriptors at all; it also has to
be compiled against the build's plugin API, a step outside Debian's packages.  The
memory core's events are the same in 7.2 to 11.1, need nothing but the binary, and
show the driver's own accesses whatever the device model does with them (the
device's ``sdhci_access`` event is emitted by the code under test and skips the
paths that return early).  The data a DMA transfer moved appears in no trace
event: the card image after the boot holds it (see ``sdqtest drivers record``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.guest import assemble, cpio, runner
from harness.guest.protocol import Transcript
from harness.guest.record_init import INIT, PHASES, kernel_args
from harness.guest.record_modules import module_closure, module_index
from harness.provision import firmware
from harness.provision.install import InstallError, _run
from harness.qemu.builds import QemuBuild

#: The trace events a recording enables (``-trace enable=...``).
EVENTS = ("memory_region_ops_read", "memory_region_ops_write", "sdhci_adma_loop",
          "sdhci_send_command")
BOOT_TIMEOUT = 600.0
PHASE_TIMEOUT = 600.0
MEMORY_MIB = 512

Log = Callable[[str], None]


@dataclass
class RawRecording:
    """What one recording boot left: the trace, the card image after it, its provenance."""

    trace: Path
    image_after: Path
    console: Path
    transcript: Transcript
    provenance: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def recording_initrd(base: Path, files: dict[str, bytes], out: Path) -> Path:
    """``base`` with a second archive appended: the recording ``/init`` (it replaces
    the bench's: the kernel unpacks the archives in order) and ``files``."""
    entries = [cpio.directory("sdqtest"), cpio.directory("sdqtest/mod"),
               cpio.file("init", INIT.encode(), executable=True)]
    entries += [cpio.file(p.lstrip("/"), data) for p, data in sorted(files.items())]
    with open(out, "wb") as f, open(base, "rb") as src:
        shutil.copyfileobj(src, f)
        f.write(b"\0" * (-f.tell() % 4))
        f.write(cpio.gz_archive(entries))
    return out


def trace_args(trace: Path, events: tuple[str, ...] = EVENTS[2:]) -> list[str]:
    """The trace options: :data:`EVENTS` to ``trace`` (the log backend's file), each
    line with the host's time (``-msg timestamp=on``): under TCG without icount the
    virtual clock follows the host's, so the time between two accesses is the time
    the guest let pass (the replay steps the clock by as much).  ``events``: those
    beside the memory core's two (the controller's own)."""
    out = ["-D", str(trace), "-msg", "timestamp=on"]
    for e in (*EVENTS[:2], *events):
        out += ["-trace", f"enable={e}"]
    return out


def other_kernel(package: str, log: Log) -> tuple[Path, str, str, list[tuple[str, bytes]]]:
    """Another of Debian's amd64 kernels (``linux-image-6.12.117+deb13-amd64``):
    ``apt-get download`` and ``dpkg-deb -x`` into the guest's cache; its vmlinuz,
    ``uname -r``, package version and mmc modules (dependencies first)."""
    folder = assemble.guest_dir() / "kernels"
    debs = folder / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not sorted(debs.glob(f"{package}_*.deb")):
        _run(["apt-get", "download", "-q", package], what=f"apt-get download {package}",
             logfile=folder / "fetch.log", timeout=1800, cwd=debs,
             fix="name a package apt-cache knows (apt-cache search linux-image-)")
        log(f"record: apt-get download {package}")
    deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
    root = folder / package
    stamp = folder / f".{package}"
    if not (stamp.exists() and stamp.read_text() == deb.name):
        shutil.rmtree(root, ignore_errors=True)
        _run(["dpkg-deb", "-x", deb, root], what=f"dpkg-deb -x {deb.name}",
             logfile=folder / "fetch.log", timeout=600, fix=f"delete {deb}")
        stamp.write_text(deb.name)
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True,
                             text=True, timeout=60, check=False).stdout.strip()
    kver, index = module_index(root)
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise InstallError(f"record: {package} has no /boot/vmlinuz-*")
    return kernels[-1], kver, version, module_closure(index, assemble.MMC_MODULES)


def record(build: QemuBuild, image: Path, workdir: Path, files: dict[str, bytes],
           log: Log = print, kernel_package: str | None = None) -> RawRecording:
    """Boot the recording guest on ``build`` with a copy of the raw ``image`` as its
    card; the trace, the console and the image after the boot go to ``workdir``.
    With ``kernel_package``, that kernel and its modules instead of the bench's.
    Raises :class:`~harness.guest.runner.GuestRunError` for a boot that failed."""
    guest = assemble.assemble(log=log)
    if kernel_package:
        kernel, kver, kversion, mods = other_kernel(kernel_package, log)
        files = {**files, **{f"sdqtest/mod/{n}": d for n, d in mods},
                 "sdqtest/modules": "".join(f"/sdqtest/mod/{n}\n" for n, _ in mods).encode(),
                 "sdqtest/kernel": kver.encode() + b"\n"}
        guest = assemble.Guest(kernel, guest.initramfs, kver,
                               {**{p: v for p, v in guest.packages.items()
                                   if not p.startswith("linux-image-")},
                                kernel_package: kversion}, [f"/sdqtest/mod/{n}" for n, _ in mods])
    workdir.mkdir(parents=True, exist_ok=True)
    card = workdir / "card.img"
    shutil.copyfile(image, card)
    initrd = recording_initrd(guest.initramfs, files, workdir / "initrd-record.cpio.gz")
    trace = workdir / "trace.log"
    trace.unlink(missing_ok=True)
    append = f"{runner.BASE_APPEND} {kernel_args()}"
    argv = runner.qemu_argv(build.binary, image=card, fmt="raw", kernel=guest.kernel,
                            initrd=initrd, append=append, accel="tcg",
                            memory_mib=MEMORY_MIB,
                            firmware=firmware.search_args(build.binary)) + trace_args(trace)
    start = time.monotonic()
    log(f"record: booting {build.name} under TCG (a minute or more)")
    res = runner.run(argv, accel="tcg", console_log=workdir / "console.log",
                     boot_timeout=BOOT_TIMEOUT, job_timeout=lambda _job: PHASE_TIMEOUT,
                     on_message=lambda m: log(f"record: {m.kind} {m.job}") if m.job else None)
    seconds = time.monotonic() - start
    kpkg = next((p for p in guest.packages if p.startswith("linux-image-")), "")
    prov = {
        "guest": {"kernel_package": kpkg, "kernel_package_version": guest.packages.get(kpkg, ""),
                  "kernel": guest.kernel_version, "modules": [Path(m).name for m in guest.modules],
                  "packages": dict(guest.packages)},
        "qemu": {"build": build.name, "version": build.version, "package": build.profile.package},
        "command": [Path(argv[0]).name, *argv[1:]],
        "kernel_command_line": append,
        "machine": "q35", "controller": "sdhci-pci", "accel": "tcg",
        "phases": list(PHASES),
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return RawRecording(trace, card, res.console_log, res.transcript, prov, seconds)
