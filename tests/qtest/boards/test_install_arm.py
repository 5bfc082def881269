"""The qemu-system-arm installer: the cache layout it reads, idempotence, root (no QEMU run)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from harness.provision import install as inst
from harness.provision import install_arm
from harness.qemu import builds


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty sdqtest cache; returns its ``qemu_dir()``."""
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "qemu"


def _script(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)


def fake_x86(qemu: Path, name: str) -> None:
    folder = qemu / name
    (folder / "root").mkdir(parents=True)
    _script(folder / "bin" / inst.BINARY)
    (folder / inst.MARKER).write_text(json.dumps({
        "layout": inst.LAYOUT_VERSION, "name": name, "binary": str(folder / "bin" / inst.BINARY),
        "debian_version": inst.BUILDS[name].package_version, "root": str(folder / "root"),
        "has_qtest_module": True}))


def fake_arm(qemu: Path, name: str,
             family: install_arm.Family = install_arm.ARM) -> dict[str, Path]:
    """A complete-looking board build (ARM: two binaries) of shell scripts."""
    folder = qemu / family.name(name)
    (folder / "root").mkdir(parents=True)
    bins = {t: folder / "bin" / b for t, b in family.binaries.items()}
    for p in bins.values():
        _script(p)
    (folder / inst.MARKER).write_text(json.dumps({
        "layout": install_arm.LAYOUT_VERSION, "name": folder.name,
        "binaries": {t: str(p) for t, p in bins.items()},
        "debian_version": inst.BUILDS[name].package_version, "root": str(folder / "root")}))
    return bins


def _no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"ran a subprocess: {args!r}")

    monkeypatch.setattr(subprocess, "run", boom)
    monkeypatch.setattr(subprocess, "Popen", boom)


def test_installed_arm_builds_are_read_from_their_markers(cache: Path) -> None:
    bins = fake_arm(cache, "10.0")
    (cache / "7.2-arm" / "bin").mkdir(parents=True)  # no marker: not installed
    found = install_arm.installed_arm_builds()
    assert [b.name for b in found] == ["10.0-arm"]
    assert found[0].binaries == bins
    assert builds.installed_arm() == {"10.0-arm": bins["aarch64"]}
    bins["arm"].unlink()  # a binary gone: the build is not complete
    assert install_arm.installed_arm_builds() == []


def test_install_all_is_fast_and_runs_nothing_when_done(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in inst.BUILDS:
        fake_x86(cache, name)
        for family in install_arm.FAMILIES:
            fake_arm(cache, name, family)
    _no_subprocess(monkeypatch)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    lines: list[str] = []
    start = time.monotonic()
    install_arm.install_all(["all"], log=lines.append)
    assert time.monotonic() - start < 1.0
    assert sum("-arm: installed" in ln for ln in lines) == 3
    assert sum("-riscv: installed" in ln for ln in lines) == 3
    assert not install_arm.need_root_arm(["all"])


def test_riscv_builds_are_board_builds(cache: Path) -> None:
    """The RISC-V family: its own folders, qemu-system-riscv64 from
    qemu-system-misc (7.2) or qemu-system-riscv (Debian's split since 9.1), run
    by the boards as the ARM builds' aarch64 binary is."""
    assert install_arm.RISCV.packages == {"7.2": "qemu-system-misc",
                                          "10.0": "qemu-system-riscv",
                                          "11.1": "qemu-system-riscv"}
    arm = fake_arm(cache, "11.1")
    riscv = fake_arm(cache, "7.2", install_arm.RISCV)
    assert builds.installed_arm() == {"11.1-arm": arm["aarch64"],
                                      "7.2-riscv": riscv["riscv64"]}
    assert [b.name for b in install_arm.installed_arm_builds()] == ["11.1-arm"]
    assert install_arm.need_root_arm(["11.1"])  # 11.1-riscv missing


def test_non_root_gets_the_command_that_installs_both(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_x86(cache, "11.1")
    _no_subprocess(monkeypatch)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(inst.InstallError) as err:
        install_arm.install_all(["11.1"], log=lambda _: None)
    msg = str(err.value)
    assert "\n" not in msg and "needs root" in msg
    assert "-m harness.provision.install_arm 11.1" in msg


def test_a_riscv_install_extracts_its_package_and_rebuilds_its_module(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """7.2-riscv: qemu-system-misc from bookworm, qemu-system-riscv64 patched,
    accel-qtest-riscv64.so rebuilt from Debian's source (one target), proved
    on microchip-icicle-kit, the marker written last (no network, no QEMU)."""
    calls: dict[str, object] = {}

    def extract(build: inst.Build, root: Path, mirror: str, log: Path,
                package: str = "") -> None:
        calls["package"] = (build.suite, package)
        root.mkdir(parents=True, exist_ok=True)

    def patch(build: inst.Build, folder: Path, log: Path, name: str = "") -> Path:
        binary = folder / "bin" / name
        _script(binary)
        return binary

    def module(build: inst.Build, pkgversion: str, folder: Path, log: object,
               targets: tuple[str, ...] = ()) -> list[Path]:
        calls["targets"] = targets
        built = [folder / f"accel-qtest-{t}.so" for t in targets]
        for b in built:
            b.write_bytes(b"")
        return built

    monkeypatch.setattr(inst, "_mmdebstrap", extract)
    monkeypatch.setattr(inst, "_patch_binary", patch)
    monkeypatch.setattr(inst, "_binary_version",
                        lambda b: ("7.2.22", "Debian 1:7.2+dfsg-7+deb12u18+b3"))
    monkeypatch.setattr(inst, "_build_module", module)
    monkeypatch.setattr(install_arm, "verify_board",
                        lambda b, m: None if m == "microchip-icicle-kit" else m)
    found = install_arm._install_one("7.2", "http://mirror", lambda _: None, install_arm.RISCV)
    assert calls == {"package": ("bookworm", "qemu-system-misc"), "targets": ("riscv64",)}
    assert found.name == "7.2-riscv" and set(found.binaries) == {"riscv64"}
    assert (found.root / inst.MODULE_DIR / "accel-qtest-riscv64.so").is_file()
    assert install_arm.installed_arm_builds(install_arm.RISCV) == [found]
