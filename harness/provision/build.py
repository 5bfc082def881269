"""From a checked-out commit to a ``qemu-system-x86_64``, built outside the tree.

Two kinds of builder, both first-class:

* :class:`QemuTreeBuilder` for a real QEMU source tree: ``configure`` with
  flags chosen from that commit's ``configure --help`` (they change across
  QEMU's history), then ``ninja qemu-system-x86_64``, incremental in one build
  directory per tree under the sdqtest cache.  ccache is used when installed
  (meson picks it up by itself).
* :class:`RecipeBuilder`: a shell command (``--build-cmd``, or an executable
  ``sdqtest-build`` at the tree's root) run at the tree's root with
  ``SDQTEST_SRC``, ``SDQTEST_BUILD_DIR`` and ``SDQTEST_COMMIT`` set.  It exits
  0 and prints the binary's path as its last line of standard output (a path
  relative to the build directory, or nothing for
  ``$SDQTEST_BUILD_DIR/qemu-system-x86_64``); any other status is a build
  failure, which a bisect skips.

:class:`PrebuiltBuilder` (``--binary``) builds nothing.  A build that fails
is *skipped* by the bisect (exit 125), never marked bad.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from harness.errors import SdqtestError
from harness.paths import cache_dir
from harness.provision import firmware, proc

BINARY = "qemu-system-x86_64"
#: The ARM system emulator a build with ``arm=True`` adds: it holds every ARM
#: board, the 32-bit ones included (its target's default devices include
#: arm-softmmu's), so one target serves ``check --board``.
ARM_BINARY = "qemu-system-aarch64"
#: The RISC-V system emulator a build with ``riscv=True`` adds: the
#: microchip-icicle-kit (hw/sd/cadence_sdhci.c) and sifive_u boards.
RISCV_BINARY = "qemu-system-riscv64"
#: meson target names of the system emulators.
X86_TARGET = "x86_64-softmmu"
ARM_TARGET = "aarch64-softmmu"
RISCV_TARGET = "riscv64-softmmu"
RECIPE = "sdqtest-build"
#: Firmware QEMU needs to start a pc/q35 machine under qtest with -nodefaults.
_FIRMWARE = (*firmware.PC_FIRMWARE, "bios.bin")
#: Firmware files a machine with default devices may load too (a field
#: reproducer without -nodefaults gets the default VGA and NIC ROMs).
_FIRMWARE_SUFFIXES = (".bin", ".rom")


def bisect_root() -> Path:
    """Everything the bisect helper keeps: build directories, logs, tools."""
    return cache_dir() / "bisect"


def tree_dir(src: Path) -> Path:
    """This tree's folder in the cache: ``<name>-<hash of its path>``."""
    real = src.resolve()
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:10]
    return bisect_root() / f"{real.name or 'root'}-{digest}"


@dataclass(frozen=True)
class Missing:
    """A prerequisite that is not there, and how to get it."""

    what: str
    apt: str = ""
    hint: str = ""


def configured_flags(build_dir: Path) -> list[str]:
    """The configure flags a :class:`QemuTreeBuilder` last used in ``build_dir``."""
    stamp = _read_json(build_dir / ".sdqtest-configure.json")
    flags = stamp.get("flags") if isinstance(stamp, dict) else None
    return [str(f) for f in flags] if isinstance(flags, list) else []


def format_missing(missing: list[Missing]) -> str:
    """One message naming every missing prerequisite and the install command."""
    lines = ["missing prerequisites for building QEMU:"]
    lines += [f"  - {m.what}" + (f" ({m.hint})" if m.hint else "") for m in missing]
    apt = sorted({m.apt for m in missing if m.apt})
    if apt:
        lines.append("install them with:")
        lines.append("  apt-get install -y --no-install-recommends " + " ".join(apt))
    return "\n".join(lines)


@dataclass
class BuildResult:
    """A build's outcome: the binary, or why there is none."""

    ok: bool
    binary: Path | None = None
    message: str = ""
    notes: list[str] = field(default_factory=list)


class Builder(Protocol):
    """Turns the commit checked out in ``src`` into a QEMU binary."""

    name: str

    def prerequisites(self, src: Path) -> list[Missing]:
        """What the machine lacks for building at all (checked before the first build)."""
        ...

    def build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        """Build; never raises for an ordinary build failure."""
        ...


# -- prebuilt ---------------------------------------------------------------------------


@dataclass
class PrebuiltBuilder:
    """``--binary PATH``: nothing to build."""

    binary: Path
    name: str = "prebuilt"

    def prerequisites(self, src: Path) -> list[Missing]:
        if not os.access(self.binary, os.X_OK):
            return [Missing(f"{self.binary} (not an executable file)")]
        return []

    def build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        log.write(f"using the prebuilt binary {self.binary}\n")
        return BuildResult(True, self.binary.absolute(), "prebuilt")


# -- recipes ----------------------------------------------------------------------------


@dataclass
class RecipeBuilder:
    """A shell command that builds and prints the binary's path (see the module doc)."""

    command: str
    build_dir: Path
    name: str = "recipe"

    def prerequisites(self, src: Path) -> list[Missing]:
        try:
            words = shlex.split(self.command)
        except ValueError as e:
            return [Missing(f"a valid --build-cmd ({e})")]
        if not words:
            return [Missing("a non-empty --build-cmd")]
        exe = words[0]
        if os.sep in exe:
            path = Path(exe) if Path(exe).is_absolute() else src / exe
            if not os.access(path, os.X_OK):
                return [Missing(f"{exe} (build command not executable in {src})")]
        elif shutil.which(exe) is None and not _shell_word(exe):
            return [Missing(f"{exe} (build command not found on PATH)")]
        return []

    def build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        self.build_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            SDQTEST_SRC=str(src), SDQTEST_BUILD_DIR=str(self.build_dir), SDQTEST_COMMIT=commit
        )
        with tempfile.TemporaryFile("w+b") as out:
            ran = proc.run(["/bin/sh", "-c", self.command], log=log, timeout=timeout,
                           cwd=src, env=env, stdout=out)
            out.seek(0)
            stdout = out.read().decode(errors="replace")
        log.write(stdout)
        if ran.timed_out:
            return BuildResult(False, message=f"build timed out after {timeout:g} s")
        if ran.returncode != 0:
            return BuildResult(False, message=f"build command exited with status {ran.returncode}")
        lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
        binary = Path(lines[-1]) if lines else Path(BINARY)
        if not binary.is_absolute():
            binary = self.build_dir / binary
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            return BuildResult(False, message=f"build command produced no executable {binary}")
        return BuildResult(True, binary, f"built in {ran.seconds:.1f} s")


def _shell_word(word: str) -> bool:
    """Shell syntax or builtins that ``which`` cannot find (``cd``, ``VAR=x``, ...)."""
    return "=" in word or word in {"cd", "exec", "set", "export", "test", "[", "true", ":"}


def recipe_in_tree(src: Path) -> Path | None:
    """The tree's own ``sdqtest-build`` script, if the checked-out commit has one."""
    path = src / RECIPE
    return path if path.is_file() and os.access(path, os.X_OK) else None


# -- real QEMU trees --------------------------------------------------------------------


#: meson version installed into the helper's own venv when the tree does not bundle one.
MESON_NEW = "1.9.0"
#: for trees that ask for meson < 1.1 (QEMU before 8.1): what Debian builds 7.2 with.
MESON_OLD = "1.0.1"


def configure_options(help_text: str) -> set[str]:
    """Feature names this ``configure`` takes as ``--enable-X``/``--disable-X``.

    Older QEMUs list ``--disable-docs`` and friends one by one; since meson
    took over, most come as a table of feature names under "Optional
    features, enabled with --enable-FEATURE and disabled with --disable-FEATURE".
    """
    found = set(re.findall(r"--(?:enable|disable)-([a-z0-9][a-z0-9_-]*)", help_text))
    table = help_text.split("Optional features, enabled with --enable-FEATURE", 1)
    if len(table) == 2:
        found |= set(re.findall(r"^  ([a-z0-9][a-z0-9_-]*)(?:\s{2,}|$)", table[1], re.M))
    return found


#: Features turned off when this ``configure`` knows them: faster, fewer dependencies.
_OFF = ("docs", "werror", "download", "fdt", "tools", "guest-agent", "user", "linux-user",
        "bsd-user")


def configure_flags(help_text: str, src: Path,
                    targets: tuple[str, ...] = (X86_TARGET,)) -> list[str]:
    """``configure`` flags for an x86_64 system emulator with sdhci-pci (and
    ``targets``' other emulators), fast to build.

    Only what this commit's ``configure --help`` mentions is used.  Default
    *devices* stay on (``--without-default-devices`` drops q35, i440fx and
    SDHCI_PCI).
    """
    known = configure_options(help_text)
    flags = ["--target-list=" + ",".join(targets)]
    if re.search(r"--without-default-features(?![\w-])", help_text):
        flags.append("--without-default-features")
    off = [f for f in _OFF if f in known]
    if needs_fdt(src, targets) and "fdt" in off:
        off.remove("fdt")
        flags.append("--enable-fdt=system")
    flags += [f"--disable-{f}" for f in off]
    if not (src / "pc-bios" / "bios-256k.bin").is_file() and "install-blobs" in known:
        flags.append("--disable-install-blobs")
    return flags


#: ``--sanitize`` names and the ``configure`` feature each turns on.
SANITIZERS = {"address": "asan", "undefined": "ubsan"}


def sanitizer_flags(help_text: str, names: tuple[str, ...]) -> list[str]:
    """``configure`` flags for the sanitizers ``names`` (QEMU's
    ``--enable-asan`` / ``--enable-ubsan``; before 6.0 one
    ``--enable-sanitizers`` for both).  AddressSanitizer is built recoverable
    (``-fsanitize-recover=address``) so that ``ASAN_OPTIONS=halt_on_error=0``
    can let QEMU go on after a report; by default it still stops at the first.
    Raises :class:`BuildSetupError` for a name it does not know or a
    ``configure`` that has none of these options."""
    bad = [n for n in names if n not in SANITIZERS]
    if bad:
        raise BuildSetupError(f"unknown sanitizer {', '.join(bad)} (known: "
                              f"{', '.join(SANITIZERS)})")
    known = configure_options(help_text)
    flags: list[str] = []
    for n in names:
        feature = SANITIZERS[n]
        if feature in known:
            flags.append(f"--enable-{feature}")
        elif "sanitizers" in known:
            if "--enable-sanitizers" not in flags:
                flags.append("--enable-sanitizers")
        else:
            raise BuildSetupError(f"this configure has no --enable-{feature}")
    if "address" in names:
        flags.append("--extra-cflags=-fsanitize-recover=address")
    return flags


def meson_flag(help_text: str, venv_python: Path) -> str:
    """How to hand this ``configure`` the private meson in ``venv_python``'s venv.

    Since 8.1 configure runs meson from the interpreter given with
    ``--python`` (its own venv inherits the packages).  Before, configure
    takes ``--meson=PATH`` and, together with ``--python``, accepts only the
    tree's embedded meson ("--python requires using QEMU's embedded Meson"),
    which a Debian ``+dfsg`` tarball of 7.2 does not carry: there the venv's
    ``meson`` script goes in ``--meson`` and meson runs on the venv's Python.
    """
    if re.search(r"--meson=MESON(?![\w-])", help_text):
        return f"--meson={venv_python.parent / 'meson'}"
    return f"--python={venv_python}"


def _meson_min(src: Path) -> tuple[int, ...] | None:
    try:
        text = (src / "meson.build").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"meson_version\s*:\s*'>=\s*([\d.]+)'", text)
    return tuple(int(x) for x in m.group(1).split(".") if x) if m else None


def _bundles_meson(src: Path) -> bool:
    """Whether the tree carries its own meson (a wheel, or an initialised submodule)."""
    wheels = src / "python" / "wheels"
    return any(wheels.glob("meson-*.whl")) or (src / "meson" / "meson.py").is_file()


@dataclass
class QemuTreeBuilder:
    """configure + ninja in ``build_dir`` (see the module doc)."""

    build_dir: Path
    tools_dir: Path = field(default_factory=lambda: bisect_root() / "tools")
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    name: str = "configure+ninja"
    #: Instrument for gcov (``--enable-gcov``, meson's ``b_coverage``): each
    #: QEMU that exits normally adds its counts to ``*.gcda`` beside the objects.
    coverage: bool = False
    #: Sanitizers to build with: ``address`` (``--enable-asan``), ``undefined``
    #: (``--enable-ubsan``); see :func:`sanitizer_flags`.
    sanitize: tuple[str, ...] = ()
    #: Build ``qemu-system-aarch64`` beside the x86 binary, from the same
    #: configure: one tree's ``hw/sd`` objects then count the runs of both
    #: (``sdqtest coverage`` with the boards).
    arm: bool = False
    #: Build ``qemu-system-riscv64`` too, from the same configure (``arm``'s
    #: reasons: one set of ``hw/sd`` objects counts every emulator's runs).
    riscv: bool = False
    #: Build ``qemu-system-x86_64`` (off only beside ``arm`` or ``riscv``: a
    #: tree whose every use is on the boards, ``sdqtest mutants`` of board
    #: files, is configured for the board targets alone and builds a fifth less).
    x86: bool = True
    #: More ninja targets to build beside the binary (e.g. a qtest,
    #: ``tests/qtest/sdhci-test``): paths relative to the build directory.
    targets: tuple[str, ...] = ()
    #: An incremental build that fails is configured afresh and retried (a
    #: stale build directory); off for edits expected to break the build
    #: (``sdqtest mutants``).
    retry_configure: bool = True

    def _emulators(self) -> list[tuple[str, str]]:
        """(meson target, binary) of each system emulator this build makes."""
        out = [(X86_TARGET, BINARY)] if self.x86 or not (self.arm or self.riscv) else []
        out += [(ARM_TARGET, ARM_BINARY)] if self.arm else []
        return out + ([(RISCV_TARGET, RISCV_BINARY)] if self.riscv else [])

    @property
    def system_targets(self) -> tuple[str, ...]:
        return tuple(t for t, _ in self._emulators())

    @property
    def binaries(self) -> tuple[str, ...]:
        return tuple(b for _, b in self._emulators())

    # -- prerequisites -----------------------------------------------------------

    def prerequisites(self, src: Path) -> list[Missing]:
        missing: list[Missing] = []
        if not (src / "configure").is_file():
            missing.append(Missing(f"{src}/configure (not a QEMU source tree; for another "
                                   "build system give --build-cmd or an sdqtest-build script)"))
            return missing
        if not (src / "meson.build").is_file():
            missing.append(Missing("a meson-based QEMU (5.2 or later) at both ends of the "
                                   "range, or --build-cmd for older trees"))
        tools = {"cc": "gcc", "ninja": "ninja-build", "pkg-config": "pkg-config",
                 "make": "make", "git": "git"}
        for exe, pkg in tools.items():
            if shutil.which(exe) is None:
                missing.append(Missing(f"{exe} (command)", pkg))
        if shutil.which("cc") is not None and not Path("/usr/include/stdio.h").is_file():
            missing.append(Missing("C library headers", "libc6-dev"))
        if shutil.which("pkg-config") is not None:
            for mod, pkg in (("glib-2.0", "libglib2.0-dev"), ("pixman-1", "libpixman-1-dev"),
                             ("zlib", "zlib1g-dev")):
                r = proc.capture(["pkg-config", "--exists", mod], timeout=30)
                if r.returncode != 0:
                    missing.append(Missing(f"{mod} (pkg-config module)", pkg))
        if not _bundles_meson(src):
            if self._meson_python(src) is None:
                r = proc.capture([sys.executable, "-c", "import venv, ensurepip"], timeout=30)
                if r.returncode != 0:
                    missing.append(Missing("Python's venv module (for a private meson)",
                                           "python3-venv"))
        if not (src / "pc-bios" / "bios-256k.bin").is_file() and self._host_bios() is None:
            missing.append(Missing("bios-256k.bin (the tree has no pc-bios blobs)", "seabios"))
        if needs_fdt(src, self.system_targets) and not _has_libfdt():
            missing.append(Missing("libfdt (one of this tree's targets requires it)",
                                   "libfdt-dev"))
        if needs_dtc(src) and shutil.which("dtc") is None:
            missing.append(Missing("dtc (the tree has device-tree sources but no .dtb blobs)",
                                   "device-tree-compiler"))
        return missing

    def advice(self, src: Path) -> list[str]:
        """Hints that are not prerequisites (shown once before the first build)."""
        if self._ccache_dir() is not None:
            return ["ccache found: the compiler runs through it"]
        return ["ccache not installed: rebuilds after a configure are slower "
                "(apt-get install ccache)"]

    def _ccache_dir(self) -> Path | None:
        """A directory whose ``cc``/``gcc`` are ccache, to put first on PATH.

        QEMU's configure names the compiler in meson's machine file, which
        turns meson's own ccache detection off; ccache's masquerade
        directory (Debian's ``/usr/lib/ccache``, else one made here) works
        whatever names the compiler.
        """
        exe = shutil.which("ccache")
        if exe is None:
            return None
        debian = Path("/usr/lib/ccache")
        if (debian / "cc").exists():
            return debian
        own = self.tools_dir / "ccache-bin"
        with contextlib.suppress(OSError):
            own.mkdir(parents=True, exist_ok=True)
            for name in ("cc", "gcc", "c++", "g++"):
                link = own / name
                if not link.is_symlink():
                    link.symlink_to(exe)
            return own
        return None

    def _env(self, src: Path | None = None) -> dict[str, str]:
        """The build's environment: ccache first on PATH; for a tree that would
        unpack edk2 blobs it lacks (:func:`unpacks_absent_edk2`), a PATH
        without ``bzip2``, so meson skips the unpacking."""
        env = dict(os.environ)
        if src is not None and unpacks_absent_edk2(src):
            env["PATH"] = str(path_without("bzip2", env.get("PATH", ""),
                                           self.tools_dir / "path-without-bzip2"))
        d = self._ccache_dir()
        if d is not None:
            env["PATH"] = f"{d}{os.pathsep}{env.get('PATH', '')}"
        return env

    def _host_bios(self) -> Path | None:
        for d in firmware.HOST_DIRS:
            if (d / "bios-256k.bin").is_file():
                return d
        return None

    def _meson_version_for(self, src: Path) -> str:
        need = _meson_min(src) or (1, 5)
        return MESON_OLD if need < (1, 1) else MESON_NEW

    def _meson_venv(self, src: Path) -> Path:
        return self.tools_dir / f"meson-{self._meson_version_for(src)}"

    def _meson_python(self, src: Path) -> Path | None:
        venv = self._meson_venv(src)
        return venv / "bin" / "python3" if (venv / ".complete").is_file() else None

    def ensure_meson(self, src: Path, log: IO[str], timeout: float = 600) -> Path:
        """A venv with the meson this tree wants (the tree bundles none); created once."""
        py = self._meson_python(src)
        if py is not None:
            return py
        venv = self._meson_venv(src)
        version = self._meson_version_for(src)
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        log.write(f"creating a venv with meson {version} in {venv}\n")
        cmds: list[list[str | os.PathLike[str]]] = [
            [sys.executable, "-m", "venv", venv],
            [venv / "bin" / "python3", "-m", "pip", "install", "-q",
             "--disable-pip-version-check", f"meson=={version}", "pycotap"],
        ]
        for cmd in cmds:
            ran = proc.run(cmd, log=log, timeout=timeout)
            if ran.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise BuildSetupError(
                    f"cannot install meson {version} into {venv} (see the log); by hand: "
                    f"python3 -m venv {venv} && {venv}/bin/pip install meson=={version} pycotap"
                )
        (venv / ".complete").write_text(version + "\n")
        return venv / "bin" / "python3"

    # -- building ----------------------------------------------------------------------

    def _help(self, src: Path, log: IO[str]) -> str:
        with tempfile.TemporaryDirectory(prefix="sdqtest-configure-help-") as tmp:
            r = proc.capture([src / "configure", "--help"], cwd=tmp, timeout=120)
        if r.returncode != 0:
            log.write(f"configure --help exited with {r.returncode}; using minimal flags\n")
        return r.stdout + r.stderr

    def _stamp(self) -> Path:
        return self.build_dir / ".sdqtest-configure.json"

    def build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        before = _untracked(src)
        try:
            return self._build(src, commit, log, timeout)
        finally:
            _tidy(src, before, log)

    def _build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        import time

        deadline = time.monotonic() + timeout
        if not (src / "configure").is_file() or not (src / "meson.build").is_file():
            return BuildResult(False, message="no configure/meson.build at this commit "
                               "(not a meson-based QEMU)")
        help_text = self._help(src, log)
        flags = configure_flags(help_text, src, self.system_targets)
        if self.coverage:
            if "gcov" not in configure_options(help_text):
                return BuildResult(False, message="this configure has no --enable-gcov")
            flags.append("--enable-gcov")
        if self.sanitize:
            try:
                flags += sanitizer_flags(help_text, self.sanitize)
            except BuildSetupError as e:
                return BuildResult(False, message=str(e))
        if not _bundles_meson(src):
            try:
                py = self.ensure_meson(src, log)
            except BuildSetupError as e:
                return BuildResult(False, message=str(e))
            flags.append(meson_flag(help_text, py))
        want = {"flags": flags, "configure": _digest(src / "configure"), "src": str(src)}
        self.build_dir.mkdir(parents=True, exist_ok=True)
        notes: list[str] = []
        configured = False
        if _read_json(self._stamp()) != want or not (self.build_dir / "build.ninja").is_file():
            ok = self._configure(src, flags, log, deadline)
            if not ok:
                return BuildResult(False, message="configure failed (see the log)")
            configured = True
            self._stamp().write_text(json.dumps(want))
        ok = self._ninja(src, log, deadline)
        if not ok and not configured and self.retry_configure:
            notes.append("incremental build failed; configured afresh and retried")
            self._stamp().unlink(missing_ok=True)
            if not self._configure(src, flags, log, deadline):
                return BuildResult(False, message="configure failed (see the log)", notes=notes)
            self._stamp().write_text(json.dumps(want))
            ok = self._ninja(src, log, deadline)
        if not ok:
            return BuildResult(False, message="ninja failed (see the log)", notes=notes)
        for name in self.binaries:
            if not (self.build_dir / name).is_file():
                return BuildResult(False, message=f"ninja made no {self.build_dir / name}",
                                   notes=notes)
        binary = self.build_dir / self.binaries[0]
        notes += self._firmware(src, log)
        return BuildResult(True, binary, "built", notes)

    def _configure(self, src: Path, flags: list[str], log: IO[str], deadline: float) -> bool:
        import time

        log.write(f"configuring {src} in {self.build_dir}\n")
        if unpacks_absent_edk2(src):
            log.write("bzip2 hidden from configure and ninja: this tree's pc-bios/meson.build "
                      "unpacks edk2 blobs the tree does not have (a Debian '+ds' tarball "
                      "without Debian's skip-unpack-edk2-blobs.patch)\n")
        left = max(1.0, deadline - time.monotonic())
        ran = proc.run([src / "configure", *flags], log=log, timeout=left, cwd=self.build_dir,
                       env=self._env(src))
        return ran.returncode == 0

    def _ninja(self, src: Path, log: IO[str], deadline: float) -> bool:
        import time

        left = max(1.0, deadline - time.monotonic())
        ran = proc.run(["ninja", "-C", self.build_dir, f"-j{self.jobs}", *self.binaries,
                        *self.targets],
                       log=log, timeout=left, env=self._env(src))
        return ran.returncode == 0

    def _firmware(self, src: Path, log: IO[str]) -> list[str]:
        """Make the build directory's binary find BIOS files.

        QEMU run from a build directory looks under ``<build>/qemu-bundle/<datadir>``
        (7.0 and later) or ``<build>/pc-bios`` (before); building only the
        binary fills neither.  Links go to the tree's ``pc-bios`` files, else
        to the host's (Debian's ``seabios``).
        """
        # Debian's +ds trees and a host without qemu-system-data lack some
        # (kvmvapic.bin): the host's and the installed Debian builds' firmware.
        sources = [src / "pc-bios", *firmware.fallback_dirs()]
        names = list(_FIRMWARE) + sorted(
            {f.name for d in sources if d.is_dir() for f in d.iterdir()
             if f.suffix in _FIRMWARE_SUFFIXES} - set(_FIRMWARE))
        prefix = "/usr/local"
        m = re.search(r"--prefix=(\S+)", _read_text(self.build_dir / "config.log"))
        if m:
            prefix = m.group(1)
        targets = [self.build_dir / "qemu-bundle" / prefix.lstrip("/") / "share" / "qemu",
                   self.build_dir / "pc-bios"]
        linked = 0
        for target in targets:
            target.mkdir(parents=True, exist_ok=True)
            for name in names:
                dst = target / name
                if dst.exists():
                    continue
                for d in sources:
                    if (d / name).is_file():
                        if dst.is_symlink():
                            dst.unlink()
                        dst.symlink_to(d / name)
                        linked += 1
                        break
        if linked:
            log.write(f"linked {linked} firmware files into {self.build_dir}\n")
        return []


def unpacks_absent_edk2(src: Path) -> bool:
    """The tree's ``pc-bios/meson.build`` unpacks edk2 firmware (whenever meson
    finds ``bzip2``) from ``.bz2`` files the tree does not have.

    Debian's ``+ds`` tarballs strip those blobs and Debian's
    ``skip-unpack-edk2-blobs.patch`` turns the unpacking off; the pool's
    ``.orig.tar.xz`` alone (QEMU 11.0.3, whose ``.dsc`` is gone) has the
    unpacking and not the files, so meson stops at the first missing one.
    """
    text = _read_text(src / "pc-bios" / "meson.build")
    if not re.search(r"^if unpack_edk2_blobs\s*$", text, re.M):
        return False
    names = re.findall(r"'(edk2-[\w.-]+\.fd)'", text)
    return any(not (src / "pc-bios" / f"{n}.bz2").is_file() for n in names)


def needs_fdt(src: Path, targets: tuple[str, ...] = (X86_TARGET,)) -> bool:
    """One of the tree's targets requires libfdt (``TARGET_NEED_FDT``: x86_64
    before 8.0, for microvm; aarch64 always): ``--disable-fdt`` then stops
    meson ("fdt not available but required by targets"), so the system's
    libfdt is taken (a ``+dfsg`` tarball has no ``dtc`` submodule to build it
    from)."""
    return any(re.search(r"^TARGET_NEED_FDT=y\s*$",
                         _read_text(src / "configs" / "targets" / f"{t}.mak"), re.M)
               for t in targets)


def _has_libfdt() -> bool:
    """libfdt's header is installed (meson finds the library without pkg-config)."""
    return any(Path(d, "libfdt.h").is_file() for d in ("/usr/include", "/usr/local/include"))


def needs_dtc(src: Path) -> bool:
    """The tree lists ``.dtb`` blobs it has only as ``.dts`` sources (a ``+ds``
    tarball): meson then needs ``dtc`` to make them."""
    text = _read_text(src / "pc-bios" / "dtb" / "meson.build")
    names = re.findall(r"'([\w.-]+)\.dtb'", text)
    return any(not (src / "pc-bios" / "dtb" / f"{n}.dtb").is_file() for n in names)


def path_without(exe: str, path: str, into: Path) -> Path:
    """A directory of links to every command on ``path`` except ``exe``.

    meson's ``find_program`` takes the first executable on PATH, so a
    program cannot be hidden by putting something before it; a PATH made
    of this one directory hides it.  Links are added on each call (a
    command installed since shows up), never removed.
    """
    into.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for d in path.split(os.pathsep):
        if not d or not os.path.isdir(d) or Path(d).resolve() == into.resolve():
            continue
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(d), key=lambda e: e.name):
                name = entry.name
                if name == exe or name in seen:
                    continue
                seen.add(name)
                if not (entry.is_file() and os.access(entry.path, os.X_OK)):
                    continue
                link = into / name
                if not link.is_symlink() and not link.exists():
                    with contextlib.suppress(OSError):
                        link.symlink_to(entry.path)
    (into / exe).unlink(missing_ok=True)
    return into


#: What meson leaves in a source tree even for an out-of-tree build.
_TREE_LITTER = ("subprojects/.wraplock",)


def _untracked(src: Path) -> set[str] | None:
    """Untracked, not ignored files of the tree (None if git cannot say)."""
    r = proc.capture(["git", "-C", str(src), "ls-files", "--others", "--exclude-standard"],
                     timeout=120)
    return set(r.stdout.splitlines()) if r.returncode == 0 else None


def _tidy(src: Path, before: set[str] | None, log: IO[str]) -> None:
    """Remove the files meson drops into the tree; name any other new one in the log."""
    if before is None:
        return
    after = _untracked(src) or set()
    for name in sorted(after - before):
        if name in _TREE_LITTER:
            (src / name).unlink(missing_ok=True)
            log.write(f"removed {name}, which the build left in the source tree\n")
        else:
            log.write(f"warning: the build left {name} in the source tree\n")


class BuildSetupError(SdqtestError):
    """The helper could not set up what a build needs (e.g. its private meson)."""


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# -- choosing ----------------------------------------------------------------------------


@dataclass
class AutoBuilder:
    """The tree's ``sdqtest-build`` recipe at commits that have one, else configure+ninja."""

    build_dir: Path
    name: str = "auto"

    def _pick(self, src: Path) -> Builder:
        recipe = recipe_in_tree(src)
        if recipe is not None:
            return RecipeBuilder(f"./{RECIPE}", self.build_dir, name=RECIPE)
        return QemuTreeBuilder(self.build_dir)

    def describe(self, src: Path) -> str:
        return self._pick(src).name

    def advice(self, src: Path) -> list[str]:
        picked = self._pick(src)
        return picked.advice(src) if isinstance(picked, QemuTreeBuilder) else []

    def prerequisites(self, src: Path) -> list[Missing]:
        return self._pick(src).prerequisites(src)

    def build(self, src: Path, commit: str, log: IO[str], timeout: float) -> BuildResult:
        return self._pick(src).build(src, commit, log, timeout)


def make_builder(src: Path, *, build_cmd: str | None, binary: Path | None,
                 build_dir: Path | None = None) -> Builder:
    """The builder the command-line options ask for."""
    bdir = build_dir or tree_dir(src) / "build"
    if binary is not None:
        return PrebuiltBuilder(binary)
    if build_cmd:
        return RecipeBuilder(build_cmd, bdir)
    return AutoBuilder(bdir)
