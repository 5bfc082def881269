"""Install Debian's QEMU 7.2, 10.0 and 11.1 side by side, each with the qtest accelerator.

Each build lives in ``qemu_dir()/<name>/``::

    root/                        Debian's packages extracted (mmdebstrap --variant=extract)
    bin/qemu-system-x86_64       patched copy: interpreter and rpath point into root/
    bin/qemu-bundle -> ../root   so QEMU finds firmware and modules in root/, not on the host
    accel-qtest-x86_64.so        the rebuilt qtest module (7.2 and 10.0; also copied into root/)
    logs/*.log                   output of every step
    build.json                   written last: a folder without it is reinstalled

Debian deletes ``accel-qtest-*.so`` from its 7.2 and 10.0 packages; the module is rebuilt
from the matching Debian source with Debian's exact ``--with-pkgversion`` so that its
``qemu_stamp`` matches the binary.
Usage: ``python -m harness.provision.install [7.2|10.0|11.1|all]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import selectors
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import SdqtestError
from harness.paths import cache_dir, folder_lock, qemu_dir

__all__ = [
    "BUILDS",
    "DebianBuild",
    "InstallError",
    "InstalledBuild",
    "ensure_root",
    "install",
    "installed_builds",
    "main",
    "need_root",
    "resolve_names",
    "verify",
]

Log = Callable[[str], None]

#: Bumped when the layout or the steps change: older markers are then reinstalled.
LAYOUT_VERSION = 1
MARKER = "build.json"
BINARY = "qemu-system-x86_64"
MULTIARCH = "x86_64-linux-gnu"
MODULE_DIR = f"usr/lib/{MULTIARCH}/qemu"
LOADER = "ld-linux-x86-64.so.2"

APT_SOURCES = Path("/etc/apt/sources.list.d/sdqtest-extra.sources")
APT_PREFERENCES = Path("/etc/apt/preferences.d/sdqtest-extra")
APT_LISTS = Path("/var/lib/apt/lists")
#: Host packages: the extractor, the ELF patcher and the module's build dependencies.
APT_PACKAGES = (
    "mmdebstrap",
    "patchelf",
    "dpkg-dev",
    "xz-utils",
    "gcc",
    "libc6-dev",
    "make",
    "ninja-build",
    "pkg-config",
    "libglib2.0-dev",
    "libpixman-1-dev",
    "zlib1g-dev",
    "libfdt-dev",
    "python3-venv",
)
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}
NO_VALID_UNTIL = "Acquire::Check-Valid-Until=false"


class InstallError(SdqtestError, RuntimeError):
    """An install step failed; the message is one line naming the problem and the fix."""


@dataclass(frozen=True)
class DebianBuild:
    """One Debian QEMU build and how to obtain it."""

    name: str
    """Short name used on the command line and as the cache folder: "7.2", "10.0", "11.1"."""
    suite: str
    """Debian suite that ships the binary package ``qemu-system-x86``."""
    package_version: str
    """Debian version of ``qemu-system-x86`` measured when this table was written."""
    obtain: str
    """How the binary is obtained (one line, for people)."""
    module_source: str | None
    """``apt-get source`` spec of the source that the qtest module is rebuilt from, or None
    when the package ships ``accel-qtest``."""
    meson: str | None
    """meson version (from PyPI, in a venv in the cache) used for the module build."""
    module_file: str
    """File name of the qtest accelerator module in ``MODULE_DIR``."""

    @property
    def pkgversion(self) -> str:
        """``--with-pkgversion`` of Debian's build, as ``--version`` prints it."""
        return f"Debian {self.package_version}"

    @property
    def upstream_series(self) -> str:
        """Upstream major.minor that the binary must report."""
        return self.name


_EXTRACT = "mmdebstrap --variant=extract --include=qemu-system-x86 {suite} (+ patchelf)"

BUILDS: dict[str, DebianBuild] = {
    b.name: b
    for b in (
        DebianBuild(
            name="7.2",
            suite="bookworm",
            package_version="1:7.2+dfsg-7+deb12u18+b3",
            obtain=_EXTRACT.format(suite="bookworm"),
            module_source="qemu/bookworm",
            meson="1.0.1",
            module_file="accel-qtest-x86_64.so",
        ),
        DebianBuild(
            name="10.0",
            suite="trixie",
            package_version="1:10.0.13+ds-0+deb13u1",
            obtain=_EXTRACT.format(suite="trixie"),
            module_source="qemu/trixie",
            meson="1.7.0",
            module_file="accel-qtest-x86_64.so",
        ),
        DebianBuild(
            name="11.1",
            suite="sid",
            package_version="1:11.1.3+ds-1",
            obtain=_EXTRACT.format(suite="sid"),
            module_source=None,
            meson=None,
            module_file="accel-qtest.so",
        ),
    )
}

TIMEOUTS = {
    "apt-update": 900,
    "apt-install": 1800,
    "mmdebstrap": 1200,
    "patchelf": 60,
    "version": 30,
    "apt-source": 900,
    "dpkg-source": 600,
    "venv": 300,
    "pip": 600,
    "configure": 900,
    "ninja": 1800,
    "qtest": 30,
}


@dataclass(frozen=True)
class InstalledBuild:
    """A build found in the cache, ready for ``subprocess.Popen([binary, ...])``."""

    name: str
    binary: Path
    debian_version: str
    root: Path
    has_qtest_module: bool


# --------------------------------------------------------------------------- reading


def build_dir(name: str) -> Path:
    """Cache folder of one build."""
    return qemu_dir() / name


def _read_marker(folder: Path) -> InstalledBuild | None:
    """The build described by ``folder/build.json``, or None if absent, stale or broken."""
    try:
        data = json.loads((folder / MARKER).read_text())
        if data.get("layout") != LAYOUT_VERSION or data.get("name") != folder.name:
            return None
        found = InstalledBuild(
            name=str(data["name"]),
            binary=Path(data["binary"]),
            debian_version=str(data["debian_version"]),
            root=Path(data["root"]),
            has_qtest_module=bool(data["has_qtest_module"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # The patched binary names its root by absolute path: a moved cache is not usable.
    if found.root != folder / "root" or not os.access(found.binary, os.X_OK):
        return None
    return found


def installed_builds() -> list[InstalledBuild]:
    """The builds completely installed in the cache, in ``BUILDS`` order; runs nothing."""
    found = (_read_marker(build_dir(name)) for name in BUILDS)
    return [b for b in found if b is not None]


def resolve_names(names: Sequence[str]) -> list[str]:
    """Expand ``all`` (or nothing) and check the names; keeps ``BUILDS`` order."""
    wanted = set(names) if names else {"all"}
    if "all" in wanted:
        wanted = set(BUILDS)
    unknown = sorted(wanted - set(BUILDS))
    if unknown:
        choices = "|".join([*BUILDS, "all"])
        raise InstallError(f"unknown QEMU build {', '.join(unknown)}: choose from {choices}")
    return [n for n in BUILDS if n in wanted]


def need_root(names: Sequence[str] = ()) -> bool:
    """True when installing ``names`` has work to do (which needs root)."""
    return any(_read_marker(build_dir(n)) is None for n in resolve_names(names))


def _root_command(names: Sequence[str], module: str = "harness.provision.install") -> str:
    args = " ".join(resolve_names(names))
    return (
        f"cd {shlex.quote(str(Path.cwd()))} && sudo env SDQTEST_CACHE="
        f"{shlex.quote(str(cache_dir()))} {shlex.quote(sys.executable)} "
        f"-m {module} {args}"
    )


def ensure_root(names: Sequence[str] = ()) -> None:
    """Raise ``InstallError`` with the command to run as root when not root and needed."""
    if os.geteuid() != 0 and need_root(names):
        raise InstallError(
            "installing QEMU builds needs root (apt-get, mmdebstrap): "
            f"run as root: {_root_command(names)}"
        )


# --------------------------------------------------------------------------- running


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:200] if lines else ""


def _run(
    cmd: Sequence[str | Path],
    *,
    what: str,
    logfile: Path,
    timeout: int,
    fix: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run ``cmd`` with output appended to ``logfile``; raise ``InstallError`` on failure."""
    argv = [str(c) for c in cmd]
    logfile.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **APT_ENV, **(env or {})}
    with logfile.open("a") as out:
        out.write(f"\n$ {shlex.join(argv)}\n")
        out.flush()
        try:
            rc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=full_env,
                timeout=timeout,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            raise InstallError(
                f"{what} timed out after {timeout} s (log {logfile}); fix: {fix}"
            ) from None
        except OSError as exc:
            raise InstallError(f"{what} could not start: {exc}; fix: {fix}") from None
    if rc != 0:
        raise InstallError(
            f"{what} failed (exit {rc}: {_last_line(logfile)!r}; log {logfile}); fix: {fix}"
        )


def _capture(cmd: Sequence[str | Path], *, timeout: int) -> str:
    argv = [str(c) for c in cmd]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise InstallError(f"{argv[0]} did not run: {exc}") from None
    return res.stdout + res.stderr


@contextlib.contextmanager
def _step(log: Log, text: str) -> Iterator[None]:
    start = time.monotonic()
    yield
    log(f"{text} ({time.monotonic() - start:.1f} s)")


# --------------------------------------------------------------------------- host setup


def debian_mirror() -> str:
    """URI of the host's Debian archive (``$SDQTEST_DEBIAN_MIRROR`` overrides)."""
    env = os.environ.get("SDQTEST_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    candidates: list[str] = []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        if f == APT_SOURCES:
            continue
        with contextlib.suppress(OSError):
            for m in re.finditer(r"^URIs:\s*(.+)$", f.read_text(), re.M):
                candidates.extend(m.group(1).split())
    for f in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*.list")]:
        with contextlib.suppress(OSError):
            for m in re.finditer(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", f.read_text(), re.M):
                candidates.append(m.group(1))
    for uri in candidates:
        uri = uri.rstrip("/")
        if uri.endswith("/debian"):
            return uri
    raise InstallError(
        "no Debian archive found in /etc/apt/sources.list*; "
        "fix: set SDQTEST_DEBIAN_MIRROR to the URI of a Debian mirror"
    )


def apt_sources_text(mirror: str) -> str:
    """Deb and deb-src lines for the extra suites (and deb-src for bookworm)."""
    return (
        "Types: deb deb-src\n"
        f"URIs: {mirror}\n"
        "Suites: trixie sid bookworm-backports\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        "\n"
        "Types: deb-src\n"
        f"URIs: {mirror}\n"
        "Suites: bookworm\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


#: Low pins: nothing on the host upgrades to these suites by accident.
APT_PINS = (("sid", 50), ("trixie", 100), ("bookworm-backports", 100))
APT_PREFERENCES_TEXT = "\n".join(
    f"Package: *\nPin: release n={suite}\nPin-Priority: {prio}\n" for suite, prio in APT_PINS
)


def _write_if_changed(path: Path, text: str) -> bool:
    with contextlib.suppress(OSError):
        if path.read_text() == text:
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def _have_source_lists(suites: Sequence[str]) -> bool:
    names = [p.name for p in APT_LISTS.glob("*_source_Sources*")]
    return all(any(f"_dists_{s}_main_source_Sources" in n for n in names) for s in suites)


def _missing_packages(packages: Sequence[str]) -> list[str]:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *packages],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout
    except (subprocess.TimeoutExpired, OSError):
        return list(packages)
    ok = {ln.split()[0] for ln in out.splitlines() if ln.split()[1:2] == ["ii"]}
    return [p for p in packages if p not in ok]


def _apt_update(log: Log, logfile: Path) -> None:
    with _step(log, "apt-get update"):
        _run(
            ["apt-get", "update", "-q", "-o", NO_VALID_UNTIL],
            what="apt-get update",
            logfile=logfile,
            timeout=TIMEOUTS["apt-update"],
            fix="check the network and /etc/apt/sources.list.d, then rerun",
        )


def prepare_host(log: Log, logfile: Path) -> None:
    """Idempotently add the apt suites and pins, refresh lists, install host packages."""
    changed = _write_if_changed(APT_SOURCES, apt_sources_text(debian_mirror()))
    changed |= _write_if_changed(APT_PREFERENCES, APT_PREFERENCES_TEXT)
    updated = False
    if changed or not _have_source_lists(["bookworm", "trixie"]):
        _apt_update(log, logfile)
        updated = True
    missing = _missing_packages(APT_PACKAGES)
    if not missing:
        return
    if not updated and not any(APT_LISTS.glob("*_dists_bookworm_main_binary-*_Packages*")):
        _apt_update(log, logfile)
    with _step(log, f"apt-get install {' '.join(missing)}"):
        _run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
            what="apt-get install",
            logfile=logfile,
            timeout=TIMEOUTS["apt-install"],
            fix="run `apt-get update` and rerun",
        )


# --------------------------------------------------------------------------- one build


VERSION_RE = re.compile(r"QEMU emulator version (\S+) \((.+?)\)")


def _binary_version(binary: Path) -> tuple[str, str]:
    """Upstream version and pkgversion (``Debian 1:...``) printed by ``--version``."""
    text = _capture([binary, "--version"], timeout=TIMEOUTS["version"])
    m = VERSION_RE.search(text)
    if not m:
        raise InstallError(
            f"{binary} --version printed {text.strip()[:160]!r}; "
            "fix: delete its cache folder and rerun the installer"
        )
    return m.group(1), m.group(2)


def _qtest_argv(binary: Path, machine: str, image: Path) -> list[str]:
    return [
        str(binary),
        "-machine", machine,
        "-accel", "qtest",
        "-qtest", "stdio",
        "-qtest-log", "/dev/null",
        "-display", "none",
        "-nodefaults",
        "-device", "sdhci-pci",
        "-drive", f"if=none,id=sd0,file={image},format=raw",
        "-device", "sd-card,drive=sd0",
    ]  # fmt: skip


def verify(binary: Path, machine: str = "q35") -> str | None:
    """Start ``binary`` under ``-accel qtest`` with an SD card; None if ``clock_step`` works,
    else the reason (QEMU's own error text)."""
    with tempfile.TemporaryDirectory(prefix="sdqtest-verify-") as tmp:
        image = Path(tmp) / "card.img"
        image.write_bytes(b"\0" * (1 << 20))
        return verify_argv(_qtest_argv(binary, machine, image))


def verify_argv(argv: Sequence[str]) -> str | None:
    """Run ``argv`` (a ``-qtest stdio`` command line); None if ``clock_step`` answers OK,
    else the reason (QEMU's own error text).  The process is always killed."""
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={},
        )  # fmt: skip
    except OSError as exc:
        return f"cannot start: {exc}"
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"clock_step 1000\n")
        proc.stdin.flush()
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if sel.select(timeout=TIMEOUTS["qtest"]):
                line = proc.stdout.readline()
        if line.startswith(b"OK"):
            return None
    except OSError:
        line = b""
    finally:
        proc.kill()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            err = b""
    reason = err.decode(errors="replace").strip().splitlines()
    got = line.decode(errors="replace").strip()
    return (reason[-1] if reason else f"answered {got!r}")[:200]


def _mmdebstrap(
    build: DebianBuild, root: Path, mirror: str, logfile: Path, package: str = "qemu-system-x86"
) -> None:
    _run(
        [
            "mmdebstrap",
            "--variant=extract",
            f"--include={package}",
            '--aptopt=Acquire::Check-Valid-Until "false"',
            '--aptopt=APT::Install-Recommends "false"',
            build.suite,
            root,
            f"deb {mirror} {build.suite} main",
        ],
        what=f"QEMU {build.name}: mmdebstrap {build.suite}",
        logfile=logfile,
        timeout=TIMEOUTS["mmdebstrap"],
        fix=f"check the network and that the suite still has {package}, then rerun",
    )


def _patch_binary(build: DebianBuild, folder: Path, logfile: Path, name: str = BINARY) -> Path:
    """Copy the root's binary ``name`` to ``bin/``, point it at the root's libraries and
    files."""
    root = folder / "root"
    bindir = folder / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    binary = bindir / name
    shutil.copy2(root / "usr/bin" / name, binary)
    libdirs = [root / "usr/lib" / MULTIARCH, root / "lib" / MULTIARCH]
    loaders = [d / LOADER for d in libdirs if (d / LOADER).exists()]
    if not loaders:
        raise InstallError(
            f"QEMU {build.name}: no {LOADER} in {root}; fix: delete {folder} and rerun"
        )
    _run(
        [
            "patchelf",
            "--set-interpreter",
            loaders[0],
            "--force-rpath",
            "--set-rpath",
            ":".join(str(d) for d in libdirs),
            binary,
        ],
        what=f"QEMU {build.name}: patchelf",
        logfile=logfile,
        timeout=TIMEOUTS["patchelf"],
        fix="apt-get install patchelf, then rerun",
    )
    bundle = bindir / "qemu-bundle"
    if bundle.is_symlink() or bundle.exists():
        bundle.unlink()
    bundle.symlink_to("../root")
    return binary


def _meson_venv(version: str, log: Log, logfile: Path) -> Path:
    """A venv in the cache with meson ``version`` (and pycotap); returns its python."""
    venv = qemu_dir() / "_tools" / f"meson-{version}"
    python = venv / "bin" / "python3"
    if (venv / ".complete").exists() and python.exists():
        return python
    with _step(log, f"meson {version} venv from PyPI"):
        shutil.rmtree(venv, ignore_errors=True)
        _run(
            [sys.executable, "-m", "venv", venv],
            what="python -m venv",
            logfile=logfile,
            timeout=TIMEOUTS["venv"],
            fix="apt-get install python3-venv (or use a Python with venv), then rerun",
        )
        _run(
            [python, "-m", "pip", "install", "-q", f"meson=={version}", "pycotap"],
            what=f"pip install meson=={version}",
            logfile=logfile,
            timeout=TIMEOUTS["pip"],
            fix="check that PyPI is reachable, then rerun",
        )
        (venv / ".complete").write_text("")
    return python


def _source_version(pkgversion: str) -> str:
    """Source package version of a binary's pkgversion: drop ``Debian `` and a binNMU."""
    return re.sub(r"\+b\d+$", "", pkgversion.removeprefix("Debian "))


def _module_configure(build: DebianBuild, pkgversion: str, src: Path, python: Path,
                      targets: Sequence[str]) -> list[str | Path]:
    """configure's arguments for the qtest modules of ``targets``: Debian's
    pkgversion and paths, so the module's stamp matches the packaged binary
    (an ARM target's libfdt is turned on by configure itself)."""
    configure: list[str | Path] = [
        src / "configure",
        f"--with-pkgversion={pkgversion}",
        "--prefix=/usr",
        f"--libdir=/usr/lib/{MULTIARCH}",
        "--target-list=" + ",".join(f"{t}-softmmu" for t in targets),
        "--enable-modules",
        "--without-default-features",
        "--disable-docs",
        "--disable-tools",
        "--disable-user",
    ]
    if build.name == "7.2":  # 7.2 takes --python only with its embedded meson
        configure += [f"--meson={python.parent / 'meson'}", "--with-git-submodules=ignore"]
    else:
        configure += [f"--python={python}", "--disable-download", "--disable-install-blobs"]
    return configure


def _build_module(
    build: DebianBuild,
    pkgversion: str,
    folder: Path,
    log: Log,
    targets: Sequence[str] = ("x86_64",),
) -> list[Path]:
    """Rebuild the qtest module of each target from Debian's source (one configure);
    returns the built files, beside ``folder``'s logs."""
    assert build.module_source is not None and build.meson is not None
    logs = folder / "logs"
    work = qemu_dir() / "_work" / folder.name
    src = _module_source(build, pkgversion, work, log, logs)
    python = _meson_venv(build.meson, log, logs / "venv.log")
    builddir = work / "build"
    builddir.mkdir()
    configure = _module_configure(build, pkgversion, src, python, targets)
    env = {"PATH": f"{python.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    with _step(log, f"QEMU {build.name}: configure --with-pkgversion='{pkgversion}'"):
        _run(
            configure,
            what=f"QEMU {build.name}: configure",
            logfile=logs / "configure.log",
            timeout=TIMEOUTS["configure"],
            cwd=builddir,
            env=env,
            fix="apt-get install the build dependency named in the log, then rerun",
        )
    wanted = [f"accel-qtest-{t}.so" for t in targets]
    jobs = str(min(2, max(1, os.cpu_count() or 1)))
    with _step(log, f"QEMU {build.name}: ninja {' '.join(wanted)}"):
        _run(
            ["nice", "-n", "19", "ninja", "-j", jobs, *wanted],
            what=f"QEMU {build.name}: ninja {' '.join(wanted)}",
            logfile=logs / "ninja.log",
            timeout=TIMEOUTS["ninja"],
            cwd=builddir,
            env=env,
            fix="apt-get install the build dependency named in the log, then rerun",
        )
    built = [folder / t for t in wanted]
    for b in built:
        shutil.copy2(builddir / b.name, b)
    shutil.rmtree(work, ignore_errors=True)  # the build tree is big; logs and tarballs stay
    with contextlib.suppress(OSError):
        work.parent.rmdir()
    return built


def _module_source(build: DebianBuild, pkgversion: str, work: Path, log: Log, logs: Path) -> Path:
    """Debian's QEMU source of ``pkgversion`` (``apt-get source``, kept in the
    cache), unpacked with Debian's patches into a fresh ``work/src``."""
    srcver = _source_version(pkgversion)
    src_cache = qemu_dir() / "_src"
    src_cache.mkdir(parents=True, exist_ok=True)
    with _step(log, f"QEMU {build.name}: apt-get source qemu={srcver}"):
        _run(
            ["apt-get", "source", "--download-only", "-q", f"qemu={srcver}"],
            what=f"QEMU {build.name}: apt-get source qemu={srcver}",
            logfile=logs / "source.log",
            timeout=TIMEOUTS["apt-source"],
            cwd=src_cache,
            fix=f"add deb-src for {build.suite} ({APT_SOURCES}), apt-get update, rerun",
        )
    dsc = src_cache / f"qemu_{srcver.split(':', 1)[-1]}.dsc"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    src = work / "src"
    with _step(log, f"QEMU {build.name}: dpkg-source -x (Debian patches applied)"):
        _run(
            ["dpkg-source", "--no-check", "-x", dsc, src],
            what=f"QEMU {build.name}: dpkg-source -x {dsc.name}",
            logfile=logs / "source.log",
            timeout=TIMEOUTS["dpkg-source"],
            fix="apt-get install dpkg-dev xz-utils, then rerun",
        )
    return src


def _install_one(build: DebianBuild, mirror: str, log: Log) -> InstalledBuild:
    folder = build_dir(build.name)
    shutil.rmtree(folder, ignore_errors=True)
    logs = folder / "logs"
    logs.mkdir(parents=True)
    root = folder / "root"
    with _step(log, f"QEMU {build.name}: extract qemu-system-x86 from {build.suite}"):
        _mmdebstrap(build, root, mirror, logs / "mmdebstrap.log")
    binary = _patch_binary(build, folder, logs / "patchelf.log")
    upstream, pkgversion = _binary_version(binary)
    if not upstream.startswith(build.upstream_series + "."):
        raise InstallError(
            f"QEMU {build.name}: {build.suite} now ships QEMU {upstream}; "
            f"fix: update BUILDS in {__name__} for the new version"
        )
    debian_version = pkgversion.removeprefix("Debian ")
    if debian_version != build.package_version:
        log(
            f"QEMU {build.name}: note: {build.suite} ships {debian_version} "
            f"(BUILDS says {build.package_version})"
        )
    log(f"QEMU {build.name}: {binary} is QEMU {upstream} ({pkgversion})")
    module = root / MODULE_DIR / build.module_file
    if build.module_source is not None:
        (built,) = _build_module(build, pkgversion, folder, log)
        module.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, module)
    for machine in ("q35", "pc"):
        with _step(log, f"QEMU {build.name}: -machine {machine} -accel qtest clock_step OK"):
            reason = verify(binary, machine)
            if reason is not None:
                raise InstallError(
                    f"QEMU {build.name}: -machine {machine} -accel qtest failed: {reason}; "
                    f"fix: see {logs}, delete {folder} and rerun"
                )
    result = InstalledBuild(
        name=build.name,
        binary=binary,
        debian_version=debian_version,
        root=root,
        has_qtest_module=module.exists(),
    )
    marker = {
        "layout": LAYOUT_VERSION,
        "name": result.name,
        "binary": str(result.binary),
        "debian_version": result.debian_version,
        "upstream_version": upstream,
        "pkgversion": pkgversion,
        "suite": build.suite,
        "root": str(result.root),
        "has_qtest_module": result.has_qtest_module,
        "module": str(module),
        "module_rebuilt": build.module_source is not None,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_marker(folder, marker)
    return result


def write_marker(folder: Path, marker: dict[str, object]) -> None:
    """``folder``'s install marker, written whole or not at all: a build
    counts as installed only once its marker is there."""
    tmp = folder / (MARKER + ".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    tmp.replace(folder / MARKER)


#: Host tools the image recipes and benchmarks use (qcow2 images, FAT32):
#: command -> the Debian package that has it.
TOOLS = {"qemu-img": "qemu-utils", "qemu-io": "qemu-utils", "mkfs.fat": "dosfstools",
         "mcopy": "mtools"}


def _missing_tools() -> list[str]:
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return sorted({pkg for cmd, pkg in TOOLS.items() if shutil.which(cmd, path=search) is None})


def ensure_tools(log: Log = print) -> list[str]:
    """Install the packages of missing :data:`TOOLS` (as root); return the
    packages still missing (not root), so callers can say what to run.
    Runs nothing when every tool is there."""
    missing = _missing_tools()
    if not missing or os.geteuid() != 0:
        return missing
    with folder_lock(qemu_dir()):
        host_log = qemu_dir() / "host-setup.log"
        host_log.parent.mkdir(parents=True, exist_ok=True)
        if not any(APT_LISTS.glob("*_dists_bookworm_main_binary-*_Packages*")):
            _apt_update(log, host_log)
        with _step(log, f"apt-get install {' '.join(missing)}"):
            _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
                 what="apt-get install", logfile=host_log,
                 timeout=TIMEOUTS["apt-install"], fix="run `apt-get update` and rerun")
    return _missing_tools()


def install(names: Sequence[str], *, log: Log = print) -> list[InstalledBuild]:
    """Install the named builds (``all`` for every one); idempotent, fast when done
    (:func:`harness.provision.install_arm.install_all` adds the ARM builds)."""
    wanted = resolve_names(names)
    done = {n: _read_marker(build_dir(n)) for n in wanted}
    todo = [n for n, b in done.items() if b is None]
    for name, found in done.items():
        if found is not None:
            log(f"QEMU {name}: installed ({found.debian_version}) at {found.binary}")
    if todo:
        ensure_root(todo)
        with folder_lock(qemu_dir()):
            host_log = qemu_dir() / "host-setup.log"
            prepare_host(log, host_log)
            mirror = debian_mirror()
            for name in todo:
                again = _read_marker(build_dir(name))  # another installer may have done it
                if again is None:
                    start = time.monotonic()
                    again = _install_one(BUILDS[name], mirror, log)
                    log(f"QEMU {name}: done in {time.monotonic() - start:.0f} s")
                done[name] = again
    still = ensure_tools(log)
    if still:
        log(f"note: image tools missing ({' '.join(still)}); as root: "
            f"apt-get install {' '.join(still)}")
    return [b for b in done.values() if b is not None]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: install the named builds and print where they are."""
    parser = argparse.ArgumentParser(prog="python -m harness.provision.install",
                                     description=__doc__)
    parser.add_argument("names", nargs="*", metavar="{7.2,10.0,11.1,all}", default=["all"])
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        builds = install(args.names, log=lambda s: print(s, flush=True))
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for b in builds:
        module = "with" if b.has_qtest_module else "WITHOUT"
        print(f"{b.name}: {b.binary} ({b.debian_version}, {module} accel-qtest)")
    print(f"total {time.monotonic() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
