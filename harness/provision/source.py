"""Debian's QEMU source releases by version: fetched, unpacked and built in the cache.

``sdqtest qemu build 11.1.1`` (or ``all``) makes, under ``source_root()/<version>/``::

    qemu_*.dsc, qemu_*.tar.xz   the files from Debian's pool (kept: a rerun downloads nothing)
    src/                        the tree: ``dpkg-source -x`` (Debian's patches applied), or
                                the pool's ``.orig.tar.xz`` alone where no ``.dsc`` is left
    plain/                      ``qemu-system-x86_64`` (``--arm``: and ``qemu-system-aarch64``,
                                ``--riscv``: and ``qemu-system-riscv64``)
    asan-ubsan/ coverage/       the ``--sanitize`` and ``--coverage`` variants
    bugs-src/ bugs/             ``src`` with our fixes (``harness/bugs/data/*.patch``), built

Each file is fetched from ``<mirror>/pool/main/q/qemu/`` and checked: the
first file of a release (its ``.dsc``, or the orig tarball) against the
SHA-256 pinned in :data:`RELEASES`, every other file against the
``Checksums-Sha256`` of that ``.dsc``.  The pin replaces apt's signed
Release files, which no longer list 11.1.1 or 10.2.2 (the pool still has
them).  A tree or a build already there is kept: it counts as present when
its binary (or ``src/VERSION``) is.  Builds go through
:class:`harness.provision.build.QemuTreeBuilder` (ccache, private meson).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.errors import SdqtestError
from harness.paths import cache_dir, folder_lock, package_data
from harness.provision import build

Log = Callable[[str], None]

POOL = "pool/main/q/qemu"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: Seconds for one download, an unpack, and a build.
DOWNLOAD_TIMEOUT = 600
UNPACK_TIMEOUT = 600
BUILD_TIMEOUT = 7200.0


class SourceError(SdqtestError):
    """A source release cannot be fetched, unpacked or built; the message says the fix."""


@dataclass(frozen=True)
class Release:
    """One of Debian's QEMU source releases and where its files are."""

    version: str
    """Upstream version, as ``VERSION`` in the tree says: the name on the command line."""
    debian: str
    """Debian's source version (``1:11.1.1+ds-1``), or ``""`` for a bare orig tarball."""
    first: str
    """The file fetched first: the ``.dsc``, or the ``.orig.tar.xz`` when there is none."""
    sha256: str
    """SHA-256 of :attr:`first` (pinned when the release was added)."""

    @property
    def patched(self) -> bool:
        """Debian's patches are applied (there is a ``.dsc``)."""
        return self.first.endswith(".dsc")


RELEASES: dict[str, Release] = {r.version: r for r in (
    Release("7.2.22", "1:7.2+dfsg-7+deb12u18", "qemu_7.2+dfsg-7+deb12u18.dsc",
            "6b6bd27b947ec89e40a1d6b26d9c9f3c698ca691da13163e0483f6061bbb20b3"),
    Release("10.0.13", "1:10.0.13+ds-0+deb13u1", "qemu_10.0.13+ds-0+deb13u1.dsc",
            "a426c892e5369058c3423816c8625bc8010bb5a58ece57261f62b64ee4d765ad"),
    Release("10.2.2", "1:10.2.2+ds-1", "qemu_10.2.2+ds-1.dsc",
            "f1684b3aa5ec500c3389d346c6501dee45041ea91656c6556d4da9023b7987dd"),
    Release("11.0.3", "", "qemu_11.0.3+ds.orig.tar.xz",
            "62e174790c8f9b44388ef16550ef4820dba87c619cfe2a5596869ef6bef660dd"),
    Release("11.1.1", "1:11.1.1+ds-1", "qemu_11.1.1+ds-1.dsc",
            "dfd4fbdd38517e2467002091bbcd938bbff8b2c851cc3f56b019236c7d1f21da"),
)}

#: Variant -> (folder, what QemuTreeBuilder is given).  ``bugs`` builds ``bugs-src``.
VARIANTS = ("plain", "asan-ubsan", "coverage", "bugs")
#: The folder ``--sanitize`` builds into, for each sanitizer list.
SANITIZE_FOLDERS = {("address", "undefined"): "asan-ubsan", ("address",): "asan",
                    ("undefined",): "ubsan"}
#: Our fixes for the QEMU bugs (``harness/bugs/data/NNNN-slug.patch``, package data).
BUGS_DIR = package_data("bugs", "data")


def source_root() -> Path:
    """``cache_dir()/source``: one folder per release."""
    return cache_dir() / "source"


def release_dir(version: str) -> Path:
    return source_root() / version


def resolve_versions(names: Sequence[str]) -> list[Release]:
    """``all`` or version names -> releases, in :data:`RELEASES` order."""
    wanted = set(names) or {"all"}
    if "all" in wanted:
        wanted = set(RELEASES)
    unknown = sorted(wanted - set(RELEASES))
    if unknown:
        raise SourceError(f"unknown source release {', '.join(unknown)}: choose from "
                          + "|".join([*RELEASES, "all"]))
    return [r for v, r in RELEASES.items() if v in wanted]


# -- fetching ---------------------------------------------------------------------------


def mirror() -> str:
    """``$SDQTEST_DEBIAN_MIRROR``, else the host's Debian archive, else deb.debian.org."""
    env = os.environ.get("SDQTEST_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    from harness.provision.install import InstallError, debian_mirror

    try:
        return debian_mirror()
    except InstallError:
        return DEFAULT_MIRROR


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dsc_files(text: str) -> list[tuple[str, str]]:
    """``(sha256, name)`` of each file a ``.dsc``'s ``Checksums-Sha256`` field lists."""
    m = re.search(r"^Checksums-Sha256:[ \t]*\n((?:[ \t]+\S.*\n?)+)", text, re.M)
    if not m:
        return []
    out = []
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 3 and re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            out.append((parts[0], parts[2]))
    return out


def _download(name: str, sha256: str, folder: Path, log: Log) -> Path:
    """``folder/name``, downloaded from the pool unless a copy with ``sha256`` is there."""
    dest = folder / name
    if dest.is_file() and sha256_of(dest) == sha256:
        return dest
    url = f"{mirror()}/{POOL}/{name}"
    part = folder / (name + ".part")
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=60) as r, part.open("wb") as out:
            while chunk := r.read(1 << 20):
                out.write(chunk)
                if time.monotonic() - start > DOWNLOAD_TIMEOUT:
                    raise SourceError(f"{url}: no complete download within "
                                      f"{DOWNLOAD_TIMEOUT} s; check the network and rerun")
    except (urllib.error.URLError, OSError) as e:
        part.unlink(missing_ok=True)
        raise SourceError(f"cannot download {url}: {e}; the pool may have dropped it: "
                          "set SDQTEST_DEBIAN_MIRROR to a mirror or snapshot that has "
                          "it") from None
    got = sha256_of(part)
    if got != sha256:
        part.unlink()
        raise SourceError(f"{url}: SHA-256 {got}, expected {sha256}; not used")
    part.replace(dest)
    log(f"QEMU {name}: downloaded in {time.monotonic() - start:.0f} s")
    return dest


def download(rel: Release, log: Log) -> list[Path]:
    """The release's files in its folder, each checked (see the module doc)."""
    folder = release_dir(rel.version)
    folder.mkdir(parents=True, exist_ok=True)
    first = _download(rel.first, rel.sha256, folder, log)
    if not rel.patched:
        return [first]
    listed = dsc_files(first.read_text(errors="replace"))
    if not listed:
        raise SourceError(f"{first} lists no Checksums-Sha256 files")
    return [first, *(_download(name, digest, folder, log) for digest, name in listed)]


def tree_version(src: Path) -> str:
    """The upstream version a tree's ``VERSION`` file states ("" if none)."""
    try:
        return (src / "VERSION").read_text().strip()
    except OSError:
        return ""


def _unpack(rel: Release, files: list[Path], dest: Path, log: Log) -> None:
    """Unpack into ``dest`` (which must not exist): ``dpkg-source -x``, or the
    orig tarball with its top folder stripped."""
    if rel.patched:
        if shutil.which("dpkg-source") is None:
            raise SourceError("dpkg-source is missing: apt-get install dpkg-dev xz-utils")
        cmd = ["dpkg-source", "--no-check", "-x", str(files[0]), str(dest)]
    else:
        dest.mkdir(parents=True)
        cmd = ["tar", "-xf", str(files[0]), "-C", str(dest), "--strip-components=1"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=UNPACK_TIMEOUT,
                           stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SourceError(f"{cmd[0]} did not run: {e}") from None
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or [""]
        raise SourceError(f"{' '.join(cmd[:2])} failed ({r.returncode}): {tail[0][:200]}")
    log(f"QEMU {rel.version}: unpacked {files[0].name}"
        + (" (Debian's patches applied)" if rel.patched else " (no Debian patches)"))


def fetch(rel: Release, log: Log = print) -> Path:
    """``release_dir/src``: downloaded and unpacked unless a tree of this version is there."""
    folder = release_dir(rel.version)
    src = folder / "src"
    if tree_version(src) == rel.version:
        return src
    if src.exists():
        raise SourceError(f"{src} holds QEMU {tree_version(src) or '(no VERSION)'}, not "
                          f"{rel.version}: delete it and rerun")
    files = download(rel, log)
    tmp = folder / "src.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    _unpack(rel, files, tmp, log)
    got = tree_version(tmp)
    if got != rel.version:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SourceError(f"{rel.first} unpacks to QEMU {got or '?'}, not {rel.version}")
    tmp.replace(src)
    return src


# -- the QEMU-bugs tree -----------------------------------------------------------------


def bug_patches() -> list[Path]:
    """The fixes in ``harness/bugs/data/``, in the order they apply."""
    return sorted(BUGS_DIR.glob("*.patch"))


def _patched_files(patch: Path) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", patch.read_text(errors="replace"), re.M)


def bugs_tree(rel: Release, log: Log = print) -> Path:
    """``bugs-src``: ``src`` hard-linked (``cp -al``), each file a patch touches
    copied first (``src`` is never written), then every fix applied with
    ``patch -p1`` (``git apply`` would skip paths inside a repository's subfolder)."""
    folder = release_dir(rel.version)
    dest = folder / "bugs-src"
    patches = bug_patches()
    stamp = dest / ".sdqtest-bugs"
    want = "\n".join(f"{p.name} {sha256_of(p)}" for p in patches)
    if stamp.is_file() and stamp.read_text() == want:
        return dest
    src = fetch(rel, log)
    tmp = folder / "bugs-src.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    _run(["cp", "-al", str(src), str(tmp)], "cp -al")
    for p in patches:
        for name in _patched_files(p):
            f = tmp / name
            if f.is_file():
                shutil.copy2(f, f.with_name(f.name + ".copy"))
                f.with_name(f.name + ".copy").replace(f)
    for p in patches:
        _run(["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-s",
              "-i", str(p)], f"patch -p1 < {p.name}", cwd=tmp)
    (tmp / ".sdqtest-bugs").write_text(want)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.replace(dest)
    log(f"QEMU {rel.version}: {len(patches)} fixes from harness/bugs/data/ applied in {dest}")
    return dest


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=UNPACK_TIMEOUT,
                           cwd=cwd, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SourceError(f"{what} did not run: {e}") from None
    if r.returncode != 0:
        raise SourceError(f"{what} failed: {(r.stderr or r.stdout).strip()[-300:]}")


# -- building ---------------------------------------------------------------------------


#: Each system emulator a source build may hold and its ``--qemu`` name's suffix.
EMULATOR_SUFFIXES = ((build.BINARY, ""), (build.ARM_BINARY, "-arm"),
                     (build.RISCV_BINARY, "-riscv"))


@dataclass(frozen=True)
class Wanted:
    """One build of a release: which variant, and which emulators beside
    ``qemu-system-x86_64`` (aarch64, riscv64)."""

    release: Release
    variant: str = "plain"
    arm: bool = False
    sanitize: tuple[str, ...] = ()
    riscv: bool = False

    @property
    def folder(self) -> Path:
        return release_dir(self.release.version) / self.variant

    @property
    def binaries(self) -> list[Path]:
        names = [build.BINARY] + ([build.ARM_BINARY] if self.arm else []) + (
            [build.RISCV_BINARY] if self.riscv else [])
        return [self.folder / n for n in names]

    def keeping_configured(self) -> Wanted:
        """This build, with every emulator its folder was last configured for
        too: a ``--riscv`` build into a folder built ``--arm`` keeps
        ``qemu-system-aarch64`` up to date instead of configuring it away."""
        listed = [f.split("=", 1)[1].split(",")
                  for f in build.configured_flags(self.folder) if f.startswith("--target-list=")]
        targets = set(listed[0]) if listed else set()
        return dataclasses.replace(self, arm=self.arm or build.ARM_TARGET in targets,
                                   riscv=self.riscv or build.RISCV_TARGET in targets)

    def present(self) -> bool:
        return all(b.is_file() and os.access(b, os.X_OK) for b in self.binaries)


def wanted(rel: Release, *, coverage: bool = False, sanitize: tuple[str, ...] = (),
           bugs: bool = False, arm: bool = False, riscv: bool = False) -> Wanted:
    """The build the options ask for; one variant at a time."""
    if sum([coverage, bool(sanitize), bugs]) > 1:
        raise SourceError("choose one of --coverage, --sanitize, --bugs per build")
    if sanitize:
        key = tuple(sorted(set(sanitize)))
        if key not in SANITIZE_FOLDERS:
            raise SourceError(f"unknown sanitizer list {','.join(sanitize)}")
        return Wanted(rel, SANITIZE_FOLDERS[key], arm, key, riscv)
    return Wanted(rel, "coverage" if coverage else "bugs" if bugs else "plain", arm,
                  riscv=riscv)


def install_prerequisites(missing: Sequence[build.Missing], log: Log) -> bool:
    """As root, ``apt-get install`` the Debian packages that provide what a
    build is missing (a fresh machine: seabios, device-tree-compiler, ...),
    so that ``sdqtest qemu build`` sets itself up; False when nothing could
    be installed (not root, no package named, apt-get failed: the caller
    names what is missing and the command)."""
    packages = sorted({m.apt for m in missing if m.apt})
    if not packages or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    log(f"installing build prerequisites: apt-get install {' '.join(packages)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode != 0 and cmd[1] == "install":
            log(f"apt-get install failed: {done.stderr.strip().splitlines()[-1:]}")
            return False
    return True


def build_one(w: Wanted, log: Log = print, timeout: float = BUILD_TIMEOUT) -> list[Path]:
    """Fetch and build ``w`` unless its binaries are there; returns them.  A
    folder already configured for more emulators is rebuilt with all of them
    (:meth:`Wanted.keeping_configured`)."""
    if w.present():
        log(f"QEMU {w.release.version} {w.variant}: kept {w.binaries[0]}")
        return w.binaries
    with folder_lock(release_dir(w.release.version)):
        if w.present():
            return w.binaries
        w = w.keeping_configured()
        src = bugs_tree(w.release, log) if w.variant == "bugs" else fetch(w.release, log)
        builder = build.QemuTreeBuilder(build_dir=w.folder, coverage=w.variant == "coverage",
                                        sanitize=w.sanitize, arm=w.arm, riscv=w.riscv)
        missing = builder.prerequisites(src)
        if missing and install_prerequisites(missing, log):
            missing = builder.prerequisites(src)
        if missing:
            raise SourceError(build.format_missing(missing))
        log_path = w.folder.with_name(w.folder.name + ".log")
        log(f"QEMU {w.release.version} {w.variant}: building {src} in {w.folder} "
            f"(log: {log_path})")
        start = time.monotonic()
        progress.show(f"QEMU {w.release.version} {w.variant}: building (log: {log_path})")
        try:
            with log_path.open("w") as out:
                res = builder.build(src, w.release.debian or w.release.version, out, timeout)
        finally:
            progress.show("")
        if not res.ok:
            raise SourceError(f"QEMU {w.release.version} {w.variant}: {res.message} "
                              f"(log: {log_path})")
        log(f"QEMU {w.release.version} {w.variant}: built in "
            f"{time.monotonic() - start:.0f} s")
    return w.binaries


# -- finding ----------------------------------------------------------------------------


def build_name(version: str, variant: str, arm: bool = False, riscv: bool = False) -> str:
    """``11.1.1-src``, ``11.1.1-src-asan-ubsan``, ``11.1.1-src-arm``,
    ``11.1.1-src-coverage-riscv``: ``--qemu`` names (``arm``: of the
    ``qemu-system-aarch64``, ``riscv``: of the ``qemu-system-riscv64``)."""
    return f"{version}-src" + ("" if variant == "plain" else f"-{variant}") + \
        ("-arm" if arm else "-riscv" if riscv else "")


def source_builds() -> dict[str, Path]:
    """Every source build in the cache by ``--qemu`` name -> binary (nothing is run)."""
    out: dict[str, Path] = {}
    for version in RELEASES:
        folder = release_dir(version)
        if not folder.is_dir():
            continue
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            for exe, suffix in EMULATOR_SUFFIXES:
                binary = sub / exe
                if binary.is_file() and os.access(binary, os.X_OK):
                    out[build_name(version, sub.name) + suffix] = binary
    return out


def command_for(version: str, variant: str = "plain") -> str:
    """The one command that makes a build: for skip messages."""
    opt = {"plain": "", "asan-ubsan": " --sanitize", "coverage": " --coverage",
           "bugs": " --bugs"}.get(variant, f" ({variant})")
    return f"sdqtest qemu build {version}{opt}"
