"""Install Debian's ``qemu-system-arm`` 7.2, 10.0 and 11.1 beside the x86 builds.

The package holds both ``qemu-system-arm`` and ``qemu-system-aarch64``.  Each build
lives in ``qemu_dir()/<name>-arm/`` with the layout of :mod:`harness.provision.install`
(``root/``, patched copies in ``bin/``, ``bin/qemu-bundle -> ../root``, ``logs/``,
``build.json`` written last).  Debian deletes ``accel-qtest-*.so`` from 7.2 and 10.0
here too: both targets' modules are rebuilt from the same Debian source as the x86
module (one configure, ``--target-list=arm-softmmu,aarch64-softmmu``), with Debian's
exact ``--with-pkgversion`` so that their stamp matches.  11.1 ships ``accel-qtest.so``.
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
    "ARM_BINARIES",
    "install_all",
    "main",
    "ArmBuild",
    "arm_name",
    "install_arm",
    "installed_arm_builds",
    "verify_board",
]

PACKAGE = "qemu-system-arm"
#: target (module suffix) -> binary name, in the order both are installed.
ARM_BINARIES = {"arm": "qemu-system-arm", "aarch64": "qemu-system-aarch64"}
#: machine per binary used to prove ``-accel qtest`` works (a board with an SDHCI).
VERIFY_MACHINE = {"qemu-system-arm": "xilinx-zynq-a9", "qemu-system-aarch64": "raspi3b"}
LAYOUT_VERSION = 1


def arm_name(name: str) -> str:
    """Cache folder and command-line name of the ARM build of x86 build ``name``."""
    return f"{name}-arm"


@dataclass(frozen=True)
class ArmBuild:
    """An installed ARM build: both binaries, sharing one extracted root."""

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


def installed_arm_builds() -> list[ArmBuild]:
    """The ARM builds completely installed in the cache, in ``BUILDS`` order."""
    found = (_read(qemu_dir() / arm_name(n)) for n in BUILDS)
    return [b for b in found if b is not None]


def verify_board(binary: Path, machine: str) -> str | None:
    """None when ``binary -machine machine -accel qtest`` answers ``clock_step``."""
    return x86.verify_argv(
        [str(binary), "-machine", machine, "-accel", "qtest", "-qtest", "stdio",
         "-qtest-log", "/dev/null", "-display", "none", "-nodefaults"]  # fmt: skip
    )


def _install_one(name: str, mirror: str, log: Log) -> ArmBuild:
    build = BUILDS[name]
    folder = qemu_dir() / arm_name(name)
    shutil.rmtree(folder, ignore_errors=True)
    logs = folder / "logs"
    logs.mkdir(parents=True)
    root = folder / "root"
    with x86._step(log, f"QEMU {folder.name}: extract {PACKAGE} from {build.suite}"):
        x86._mmdebstrap(build, root, mirror, logs / "mmdebstrap.log", package=PACKAGE)
    bins = {t: x86._patch_binary(build, folder, logs / "patchelf.log", b)
            for t, b in ARM_BINARIES.items()}
    upstream, pkgversion = x86._binary_version(bins["arm"])
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
        machine = VERIFY_MACHINE[binary.name]
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
    """True when installing the ARM builds of ``names`` has work to do."""
    return any(_read(qemu_dir() / arm_name(n)) is None for n in x86.resolve_names(names))


def install_arm(names: Sequence[str], *, log: Log = print) -> list[ArmBuild]:
    """Install the ARM builds of the named releases; idempotent, fast when done."""
    wanted = x86.resolve_names(names)
    done = {n: _read(qemu_dir() / arm_name(n)) for n in wanted}
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
                again = _read(qemu_dir() / arm_name(n))
                if again is None:
                    start = time.monotonic()
                    again = _install_one(n, mirror, log)
                    log(f"QEMU {again.name}: done in {time.monotonic() - start:.0f} s")
                done[n] = again
    return [b for b in done.values() if b is not None]


def install_all(names: Sequence[str], *, log: Log = print) -> list[x86.InstalledBuild]:
    """Install the named x86 builds, then their ARM builds (``sdqtest qemu install``)."""
    done = x86.install(names, log=log)
    install_arm(names, log=log)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: install the named releases' x86 and ARM builds."""
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
