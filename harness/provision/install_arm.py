"""Install Debian's board builds of 7.2, 10.0 and 11.1 beside the x86 builds.

Two families (:data:`FAMILIES`), each build in its own folder
``qemu_dir()/<name>-<family>/`` with the layout of :mod:`harness.provision.install`
(``root/``, patched copies in ``bin/``, ``bin/qemu-bundle -> ../root``, ``logs/``,
``build.json`` written last):

* ``arm``: Debian's ``qemu-system-arm``, which holds both ``qemu-system-arm`` and
  ``qemu-system-aarch64`` (``7.2-arm``, ...);
* ``riscv``: ``qemu-system-riscv64``, in ``qemu-system-misc`` up to 7.2 and in its
  own ``qemu-system-riscv`` package since Debian's 9.1 split (``7.2-riscv``, ...).
  A folder of its own rather than a third binary in the ARM root: a check run uses
  one binary per build, the ARM builds already installed stay valid, and the
  RISC-V module has its own configure anyway.

Debian deletes ``accel-qtest-*.so`` from 7.2 and 10.0 here too: each family's
modules are rebuilt from the same Debian source as the x86 module (one configure,
``--target-list`` the family's targets), with Debian's exact ``--with-pkgversion``
so that their stamp matches.  11.1 ships ``accel-qtest.so``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.paths import folder_lock, qemu_dir
from harness.provision import install as x86
from harness.provision.install import BUILDS, InstallError, Log

__all__ = [
    "ARM",
    "ARM_BINARIES",
    "FAMILIES",
    "RISCV",
    "Family",
    "install_all",
    "main",
    "ArmBuild",
    "arm_name",
    "install_arm",
    "install_boards",
    "installed_arm_builds",
    "installed_board_builds",
    "verify_board",
]

PACKAGE = "qemu-system-arm"
#: target (module suffix) -> binary name, in the order both are installed.
ARM_BINARIES = {"arm": "qemu-system-arm", "aarch64": "qemu-system-aarch64"}
#: machine per binary used to prove ``-accel qtest`` works (a board with an SDHCI).
VERIFY_MACHINE = {"qemu-system-arm": "xilinx-zynq-a9", "qemu-system-aarch64": "raspi3b"}
LAYOUT_VERSION = 1


@dataclass(frozen=True)
class Family:
    """A family of board builds: which Debian package, which binaries, which board
    proves each binary's ``-accel qtest``."""

    suffix: str
    """Cache folder and name suffix: ``7.2-<suffix>``."""
    packages: dict[str, str]
    """Debian binary package by release name (``7.2``)."""
    binaries: dict[str, str]
    """target (module suffix) -> binary name, in install order."""
    verify: dict[str, str]
    """binary name -> machine started under ``-accel qtest`` to prove it works."""
    runs: str
    """The target whose binary the boards run on (it has every board of the family)."""

    def name(self, release: str) -> str:
        """Cache folder and command-line name of this family's build of ``release``."""
        return f"{release}-{self.suffix}"


ARM = Family("arm", {n: PACKAGE for n in BUILDS}, ARM_BINARIES, VERIFY_MACHINE, "aarch64")
#: Debian moved qemu-system-riscv* out of qemu-system-misc into qemu-system-riscv
#: in 9.1 (the 10.0/11.1 package ``Replaces: qemu-system-misc (<< 1:9.1.0+ds-9~)``).
RISCV = Family("riscv", {"7.2": "qemu-system-misc", "10.0": "qemu-system-riscv",
                         "11.1": "qemu-system-riscv"},
               {"riscv64": "qemu-system-riscv64"},
               {"qemu-system-riscv64": "microchip-icicle-kit"}, "riscv64")
FAMILIES: tuple[Family, ...] = (ARM, RISCV)


def arm_name(name: str) -> str:
    """Cache folder and command-line name of the ARM build of x86 build ``name``."""
    return ARM.name(name)


@dataclass(frozen=True)
class ArmBuild:
    """An installed board build (ARM: both binaries sharing one extracted root;
    RISC-V: ``qemu-system-riscv64``)."""

    name: str
    binaries: dict[str, Path]
    debian_version: str
    root: Path


def _read(folder: Path) -> ArmBuild | None:
    try:
        data = json.loads((folder / x86.MARKER).read_text())
        if data.get("layout") != LAYOUT_VERSION or data.get("name") != folder.name:
            return None
        bins = {str(k): Path(v) for k, v in dict(data["binaries"]).items()}
        found = ArmBuild(folder.name, bins, str(data["debian_version"]), Path(data["root"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if found.root != folder / "root" or not all(p.is_file() for p in bins.values()):
        return None
    return found


def installed_arm_builds(family: Family = ARM) -> list[ArmBuild]:
    """The ARM (or ``family``'s) builds completely installed in the cache, in
    ``BUILDS`` order."""
    found = (_read(qemu_dir() / family.name(n)) for n in BUILDS)
    return [b for b in found if b is not None]


def installed_board_builds() -> list[tuple[Family, ArmBuild]]:
    """Every family's installed builds, family by family."""
    return [(f, b) for f in FAMILIES for b in installed_arm_builds(f)]


def verify_board(binary: Path, machine: str) -> str | None:
    """None when ``binary -machine machine -accel qtest`` answers ``clock_step``."""
    return x86.verify_argv(
        [str(binary), "-machine", machine, "-accel", "qtest", "-qtest", "stdio",
         "-qtest-log", "/dev/null", "-display", "none", "-nodefaults"]  # fmt: skip
    )


def _install_one(name: str, mirror: str, log: Log, family: Family = ARM) -> ArmBuild:
    build = BUILDS[name]
    folder = qemu_dir() / family.name(name)
    shutil.rmtree(folder, ignore_errors=True)
    logs = folder / "logs"
    logs.mkdir(parents=True)
    root = folder / "root"
    package = family.packages[name]
    with x86._step(log, f"QEMU {folder.name}: extract {package} from {build.suite}"):
        x86._mmdebstrap(build, root, mirror, logs / "mmdebstrap.log", package=package)
    bins = {t: x86._patch_binary(build, folder, logs / "patchelf.log", b)
            for t, b in family.binaries.items()}
    upstream, pkgversion = x86._binary_version(next(iter(bins.values())))
    if not upstream.startswith(build.upstream_series + "."):
        raise InstallError(
            f"QEMU {folder.name}: {build.suite} now ships QEMU {upstream}; "
            f"fix: update BUILDS in {x86.__name__} for the new version"
        )
    moddir = root / x86.MODULE_DIR
    if build.module_source is not None:
        for built in x86._build_module(build, pkgversion, folder, log, targets=tuple(bins)):
            moddir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, moddir / built.name)
    for binary in bins.values():
        machine = family.verify[binary.name]
        with x86._step(log, f"QEMU {folder.name}: {binary.name} -machine {machine} qtest OK"):
            reason = verify_board(binary, machine)
            if reason is not None:
                raise InstallError(
                    f"QEMU {folder.name}: {binary.name} -machine {machine} -accel qtest "
                    f"failed: {reason}; fix: see {logs}, delete {folder} and rerun"
                )
    marker = {
        "layout": LAYOUT_VERSION,
        "name": folder.name,
        "binaries": {t: str(p) for t, p in bins.items()},
        "debian_version": pkgversion.removeprefix("Debian "),
        "upstream_version": upstream,
        "pkgversion": pkgversion,
        "suite": build.suite,
        "root": str(root),
        "module_rebuilt": build.module_source is not None,
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    x86.write_marker(folder, marker)
    found = _read(folder)
    if found is None:
        raise InstallError(f"QEMU {folder.name}: {folder / x86.MARKER} unreadable after install")
    return found


def need_root_arm(names: Sequence[str]) -> bool:
    """True when installing the board builds (every family) of ``names`` has work to do."""
    return any(_read(qemu_dir() / f.name(n)) is None
               for f in FAMILIES for n in x86.resolve_names(names))


def install_arm(names: Sequence[str], *, log: Log = print,
                family: Family = ARM) -> list[ArmBuild]:
    """Install the ARM (or ``family``'s) builds of the named releases;
    idempotent, fast when done."""
    wanted = x86.resolve_names(names)
    done = {n: _read(qemu_dir() / family.name(n)) for n in wanted}
    todo = [n for n, b in done.items() if b is None]
    for found in done.values():
        if found is not None:
            log(f"QEMU {found.name}: installed ({found.debian_version}) in {found.root.parent}")
    if todo:
        if os.geteuid() != 0:
            raise InstallError(
                "installing QEMU builds needs root (apt-get, mmdebstrap): run as root: "
                + x86._root_command(todo, module=__name__))
        with folder_lock(qemu_dir()):
            x86.prepare_host(log, qemu_dir() / "host-setup.log")
            mirror = x86.debian_mirror()
            for n in todo:
                again = _read(qemu_dir() / family.name(n))
                if again is None:
                    start = time.monotonic()
                    again = _install_one(n, mirror, log, family)
                    log(f"QEMU {again.name}: done in {time.monotonic() - start:.0f} s")
                done[n] = again
    return [b for b in done.values() if b is not None]


def install_boards(names: Sequence[str], *, log: Log = print) -> list[ArmBuild]:
    """Install every family's builds of the named releases (ARM, then RISC-V)."""
    return [b for f in FAMILIES for b in install_arm(names, log=log, family=f)]


def install_all(names: Sequence[str], *, log: Log = print) -> list[x86.InstalledBuild]:
    """Install the named x86 builds, then their board builds, every family
    (``sdqtest qemu install``)."""
    done = x86.install(names, log=log)
    install_boards(names, log=log)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: install the named releases' x86 and board (ARM, RISC-V) builds."""
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="{7.2,10.0,11.1,all}", default=["all"])
    args = parser.parse_args(argv)
    try:
        install_all(args.names, log=lambda s: print(s, flush=True))
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
