"""Assemble the guest from Debian packages only: a kernel and an initramfs, in the cache.

``guest_dir()`` (``cache_dir()/guest``) holds::

    debs/*.deb             what ``apt-get download`` fetched
    pkgs/<package>/        each package extracted with ``dpkg-deb -x`` (never system-wide)
    vmlinuz                the kernel of Debian's ``linux-image-amd64``
    initramfs.cpio.gz      busybox-static, fio and util-linux's blkdiscard with the shared
                           libraries they need (and their loader), the mmc modules, /init
    guest.json             written last: a folder without it is assembled again

Shared libraries are found by reading ELF ``DT_NEEDED`` in the extracted packages; a
library no package extracted so far provides brings in the ``Depends`` of the package
whose file needs it, until nothing is missing.  Kernel modules come with their
``.modinfo`` ``depends`` (Debian ships no ``modules.dep``: depmod writes it at install).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.guest import cpio, elf
from harness.guest.initscript import INIT
from harness.paths import cache_dir, folder_lock
from harness.provision.install import APT_LISTS, InstallError, _apt_update, _run

Log = Callable[[str], None]

LAYOUT_VERSION = 1
MARKER = "guest.json"
KERNEL_META = "linux-image-amd64"
#: Packages whose programs go into the initramfs, and the programs.
PROGRAMS = {"busybox-static": ["bin/busybox"], "fio": ["usr/bin/fio"],
            "util-linux": ["sbin/blkdiscard"]}
#: Where a program goes in the initramfs (others keep their path).
PLACE = {"sbin/blkdiscard": "usr/sbin/blkdiscard"}
#: The card's modules; their dependencies are added from ``.modinfo``.
MMC_MODULES = ("mmc_core", "mmc_block", "sdhci", "sdhci-pci")
LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "lib", "usr/lib")
MAX_ROUNDS = 12
TIMEOUT_DOWNLOAD = 1800


def guest_dir() -> Path:
    """Cache folder of the assembled guest."""
    return cache_dir() / "guest"


@dataclass(frozen=True)
class Guest:
    """An assembled guest: kernel, initramfs and what went into it."""

    kernel: Path
    initramfs: Path
    kernel_version: str  #: ``uname -r`` of the kernel: ``6.1.0-57-amd64``
    packages: dict[str, str]  #: package -> Debian version
    modules: list[str]  #: module files in load order (initramfs paths)


def init_digest() -> str:
    """sha256 of the ``/init`` this code puts in the initramfs."""
    return hashlib.sha256(INIT.encode()).hexdigest()


def read_marker(folder: Path | None = None) -> Guest | None:
    """The guest described by ``guest.json``, or None when absent or stale."""
    folder = folder or guest_dir()
    try:
        d = json.loads((folder / MARKER).read_text())
        if d.get("layout") != LAYOUT_VERSION or d.get("init_sha256") != init_digest():
            return None  # an older layout or /init: assemble again (downloads are kept)
        g = Guest(Path(d["kernel"]), Path(d["initramfs"]), str(d["kernel_version"]),
                  dict(d["packages"]), list(d["modules"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return g if g.kernel.is_file() and g.initramfs.is_file() else None


# -- apt ---------------------------------------------------------------------------


def apt_depends(packages: Sequence[str]) -> dict[str, list[str]]:
    """Direct ``Depends``/``PreDepends`` of each package (first of each alternative;
    virtual packages skipped), from one ``apt-cache depends`` call."""
    if not packages:
        return {}
    out = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests",
                          "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances",
                          *packages], capture_output=True, text=True, timeout=300, check=False)
    return parse_depends(out.stdout)


def parse_depends(text: str) -> dict[str, list[str]]:
    """``apt-cache depends`` output -> package -> its dependencies."""
    deps: dict[str, list[str]] = {}
    current: list[str] = []
    alt = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            current = deps.setdefault(line.strip().split(":")[0], [])
            alt = False
            continue
        s = line.strip()
        kind, _, name = s.partition(":")
        if kind.lstrip("|") in ("Depends", "PreDepends"):
            name = name.strip()
            if not alt and not name.startswith("<"):
                current.append(name.split(":")[0])
            alt = kind.startswith("|")
    return deps


def _download(packages: Sequence[str], folder: Path, log: Log, logfile: Path) -> None:
    debs = folder / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    todo = [p for p in packages if not _deb_of(debs, p)]
    if not todo:
        return
    if not any(APT_LISTS.glob("*_Packages*")):
        if os.geteuid() != 0:
            raise InstallError("apt has no package lists; as root run: apt-get update")
        _apt_update(log, logfile)
    start = time.monotonic()
    _run(["apt-get", "download", "-q", *todo], what=f"apt-get download {' '.join(todo)}",
         logfile=logfile, timeout=TIMEOUT_DOWNLOAD, cwd=debs,
         fix="check the network and apt's sources (apt-get update), then rerun")
    log(f"guest: apt-get download {' '.join(todo)} ({time.monotonic() - start:.1f} s)")


def _deb_of(debs: Path, package: str) -> Path | None:
    found = sorted(debs.glob(f"{package}_*.deb"))
    return found[-1] if found else None


def _extract(package: str, folder: Path, logfile: Path) -> tuple[Path, str]:
    """``dpkg-deb -x`` into ``pkgs/<package>``; returns the folder and the version."""
    deb = _deb_of(folder / "debs", package)
    if deb is None:
        raise InstallError(f"guest: apt-get download did not fetch {package}")
    dest = folder / "pkgs" / package
    stamp = dest / ".sdqtest-deb"
    if not (stamp.exists() and stamp.read_text() == deb.name):
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        _run(["dpkg-deb", "-x", deb, dest], what=f"dpkg-deb -x {deb.name}", logfile=logfile,
             timeout=600, fix=f"delete {deb} and rerun")
        stamp.write_text(deb.name)
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True,
                             text=True, timeout=60, check=False).stdout.strip()
    return dest, version


# -- shared libraries ----------------------------------------------------------------


def _find_lib(soname: str, roots: dict[str, Path], runpath: Sequence[str]
              ) -> tuple[str, Path] | None:
    dirs = [r.lstrip("/") for r in runpath if not r.startswith("$")] + list(LIB_DIRS)
    for pkg, root in roots.items():
        for d in dirs:
            p = root / d / soname
            if p.exists():
                return pkg, p
    return None


def resolve_libraries(programs: dict[str, Path], roots: dict[str, Path]
                      ) -> tuple[dict[str, Path], str, dict[str, set[str]]]:
    """Every library the ``programs`` need, transitively.

    Returns soname -> file, the loader's path (PT_INTERP), and for each soname
    not found the packages whose files need it."""
    libs: dict[str, Path] = {}
    missing: dict[str, set[str]] = {}
    interp = ""
    owner = {p: pkg for pkg, p in ((k.split("/", 1)[0], v) for k, v in programs.items())}
    todo: list[tuple[str, Path]] = [(owner[p], p) for p in programs.values()]
    seen: set[Path] = set()
    while todo:
        pkg, path = todo.pop()
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        info = elf.dynamic_info(real)
        interp = interp or (info.interp or "")
        for so in info.needed:
            if so in libs:
                continue
            hit = _find_lib(so, roots, info.runpath)
            if hit is None:
                missing.setdefault(so, set()).add(pkg)
                continue
            libs[so] = hit[1]
            missing.pop(so, None)
            todo.append(hit)
    return libs, interp, missing


# -- kernel modules ----------------------------------------------------------------


def module_files(kroot: Path) -> tuple[str, dict[str, Path]]:
    """The kernel version and its modules by name (``sdhci-pci`` and ``sdhci_pci`` alike)."""
    mods = kroot / "lib/modules"
    versions = sorted(p.name for p in mods.iterdir()) if mods.is_dir() else []
    if not versions:
        raise InstallError(f"guest: no lib/modules in {kroot}")
    version = versions[-1]
    out: dict[str, Path] = {}
    for ko in (mods / version).rglob("*.ko"):
        name = ko.name[:-3]
        out[name] = ko
        out[name.replace("-", "_")] = ko
    return version, out


def module_order(wanted: Sequence[str], modules: dict[str, Path], builtin: set[str]
                 ) -> list[Path]:
    """``wanted`` modules and their ``.modinfo`` dependencies, dependencies first."""
    order: list[Path] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        key = name.replace("-", "_")
        if state.get(key) == 2 or key in builtin:
            return
        if key not in modules:
            raise InstallError(
                f"guest: the kernel has no module {name} (nor built in): no mmc support")
        state[key] = 1
        for dep in ",".join(elf.modinfo(modules[key]).get("depends", [])).split(","):
            if dep and state.get(dep.replace("-", "_")) != 1:
                visit(dep)
        state[key] = 2
        order.append(modules[key])

    for w in wanted:
        visit(w)
    return order


def _builtin(kroot: Path, version: str) -> set[str]:
    try:
        text = (kroot / "lib/modules" / version / "modules.builtin").read_text()
    except OSError:
        return set()
    return {Path(line.strip()).name.removesuffix(".ko").replace("-", "_")
            for line in text.splitlines() if line.strip()}


# -- the initramfs -------------------------------------------------------------------


def initramfs_entries(programs: dict[str, Path], libs: dict[str, Path], interp: str,
                      modules: Sequence[Path], kernel_version: str,
                      kroot: Path) -> list[cpio.CpioEntry]:
    """Every member of the initramfs: directories, programs, libraries, modules, /init."""
    files: dict[str, cpio.CpioEntry] = {}
    for rel, path in programs.items():
        dest = PLACE.get(rel.split("/", 1)[1], rel.split("/", 1)[1])
        files[dest] = cpio.file(dest, path.resolve().read_bytes(), executable=True)
    for so, path in libs.items():
        dest = f"lib/x86_64-linux-gnu/{so}"
        files[dest] = cpio.file(dest, path.resolve().read_bytes(), executable=True)
    if interp:
        loader = interp.lstrip("/")
        name = Path(interp).name
        src = libs.get(name)
        if src is None:
            raise InstallError(f"guest: the loader {interp} was not found in the packages")
        files.setdefault(loader, cpio.file(loader, src.resolve().read_bytes(), True))
    mod_paths = []
    for ko in modules:
        rel = ko.relative_to(kroot).as_posix()
        files[rel] = cpio.file(rel, ko.read_bytes())
        mod_paths.append("/" + rel)
    files["sdqtest/modules"] = cpio.file("sdqtest/modules", ("\n".join(mod_paths) + "\n").encode())
    files["sdqtest/kernel"] = cpio.file("sdqtest/kernel", kernel_version.encode() + b"\n")
    files["init"] = cpio.file("init", INIT.encode(), executable=True)
    dirs = {"dev", "proc", "sys", "tmp", "bin", "sbin", "usr/bin", "usr/sbin", "etc"}
    for name in files:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    entries = [cpio.directory(d) for d in sorted(dirs)]
    entries += [files[n] for n in sorted(files)]
    return entries


# -- the whole assembly ----------------------------------------------------------------


def kernel_package() -> str:
    """The versioned image package ``linux-image-amd64`` depends on."""
    deps = [d for d in apt_depends([KERNEL_META]).get(KERNEL_META, [])
            if d.startswith("linux-image-")]
    if not deps:
        raise InstallError(f"guest: apt-cache knows no {KERNEL_META}; as root: apt-get update")
    return deps[0]


@dataclass
class _Fetched:
    """The guest's packages, extracted: each one's root and version, the
    programs the initramfs runs and the shared libraries they need."""

    kpkg: str
    roots: dict[str, Path]
    versions: dict[str, str]
    programs: dict[str, Path]
    libs: dict[str, Path]
    interp: str


def assemble(folder: Path | None = None, log: Log = print) -> Guest:
    """Fetch, extract and build the guest (idempotent: quick when ``guest.json`` is there)."""
    folder = folder or guest_dir()
    found = read_marker(folder)
    if found is not None:
        return found
    with folder_lock(folder):
        found = read_marker(folder)
        if found is not None:
            return found
        start = time.monotonic()
        got = _fetch(folder, log, folder / "assemble.log")
        guest, order = _build(folder, got)
        size = guest.initramfs.stat().st_size / (1 << 20)
        log(f"guest: kernel {guest.kernel_version}, initramfs {size:.1f} MiB "
            f"({len(got.libs)} libraries, {order} modules) in "
            f"{time.monotonic() - start:.0f} s")
        return guest


def _fetch(folder: Path, log: Log, logfile: Path) -> _Fetched:
    """Download and extract the kernel and the programs' packages, then the
    packages their missing libraries come from, for up to MAX_ROUNDS rounds."""
    kpkg = kernel_package()
    packages = [kpkg, *PROGRAMS]
    got = _Fetched(kpkg, {}, {}, {}, {}, "")
    for _ in range(MAX_ROUNDS):
        _download(packages, folder, log, logfile)
        for p in packages:
            if p not in got.roots:
                got.roots[p], got.versions[p] = _extract(p, folder, logfile)
        for pkg, progs in PROGRAMS.items():
            for prog in progs:
                path = got.roots[pkg] / prog
                if not path.exists():
                    raise InstallError(f"guest: {pkg} has no {prog}")
                got.programs[f"{pkg}/{prog}"] = path
        lib_roots = {k: v for k, v in got.roots.items() if k != kpkg}
        got.libs, got.interp, missing = resolve_libraries(
            {k: v for k, v in got.programs.items() if not k.startswith("busybox")}, lib_roots)
        if not missing:
            return got
        needers = sorted({pkg for who in missing.values() for pkg in who})
        more = sorted({d for ds in apt_depends(needers).values() for d in ds
                       if d not in got.roots})
        if not more:
            raise InstallError("guest: no package provides " + ", ".join(sorted(missing)))
        packages += more
    raise InstallError(f"guest: libraries still missing after {MAX_ROUNDS} rounds")


def _build(folder: Path, got: _Fetched) -> tuple[Guest, int]:
    """The initramfs and kernel into ``folder``, then its marker; the guest
    and how many modules it loads."""
    kroot = got.roots[got.kpkg]
    kver, mods = module_files(kroot)
    order = module_order(MMC_MODULES, mods, _builtin(kroot, kver))
    entries = initramfs_entries(got.programs, got.libs, got.interp, order, kver, kroot)
    kernels = sorted((kroot / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise InstallError(f"guest: {got.kpkg} has no /boot/vmlinuz-*")
    tmp = folder / "initramfs.cpio.gz.tmp"
    tmp.write_bytes(cpio.gz_archive(entries))
    tmp.replace(folder / "initramfs.cpio.gz")
    shutil.copy2(kernels[-1], folder / "vmlinuz")
    guest = Guest(folder / "vmlinuz", folder / "initramfs.cpio.gz", kver,
                  {p: got.versions[p] for p in sorted(got.roots)},
                  ["/" + m.relative_to(kroot).as_posix() for m in order])
    marker = {"layout": LAYOUT_VERSION, "init_sha256": init_digest(),
              "kernel": str(guest.kernel),
              "initramfs": str(guest.initramfs), "kernel_version": kver,
              "packages": guest.packages, "modules": guest.modules,
              "libraries": sorted(got.libs), "assembled_at":
              time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (folder / (MARKER + ".tmp")).write_text(json.dumps(marker, indent=1) + "\n")
    (folder / (MARKER + ".tmp")).replace(folder / MARKER)
    return guest, len(order)


def main() -> int:
    """``python -m harness.guest.assemble``: assemble the guest and print where it is."""
    try:
        g = assemble(log=lambda s: print(s, flush=True))
    except InstallError as e:
        print(f"error: {e}")
        return 1
    print(f"kernel {g.kernel} ({g.kernel_version})\ninitramfs {g.initramfs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
