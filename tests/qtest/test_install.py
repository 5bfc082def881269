"""The QEMU installer: its data, the cache layout it reads, and (when present) real builds."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness.provision import install as inst


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty sdqtest cache; returns its ``qemu_dir()``."""
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "qemu"


def fake_build(qemu: Path, name: str, **marker: Any) -> Path:
    """Lay out a complete-looking build whose binary is a shell script; returns the binary."""
    folder = qemu / name
    (folder / "root" / "usr/bin").mkdir(parents=True)
    binary = folder / "bin" / inst.BINARY
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    data: dict[str, Any] = {
        "layout": inst.LAYOUT_VERSION,
        "name": name,
        "binary": str(binary),
        "debian_version": inst.BUILDS[name].package_version,
        "root": str(folder / "root"),
        "has_qtest_module": True,
    }
    data.update(marker)
    (folder / inst.MARKER).write_text(json.dumps(data))
    return binary


def forbid_subprocesses(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"ran a subprocess: {args!r}")

    monkeypatch.setattr(subprocess, "run", boom)
    monkeypatch.setattr(subprocess, "Popen", boom)


# ----------------------------------------------------------------------------- data


def test_builds_table_is_consistent() -> None:
    assert list(inst.BUILDS) == ["7.2", "10.0", "11.1"]
    for name, b in inst.BUILDS.items():
        assert b.name == name
        assert b.package_version.startswith(f"1:{name}")
        assert b.pkgversion == f"Debian {b.package_version}"
        assert (b.module_source is None) == (b.meson is None)
        if b.module_source is not None:
            assert b.module_source == f"qemu/{b.suite}"
        assert b.module_file.startswith("accel-qtest") and b.module_file.endswith(".so")
        assert b.suite in b.obtain
    assert inst.BUILDS["11.1"].module_source is None  # sid ships accel-qtest
    assert {b.suite for b in inst.BUILDS.values()} == {"bookworm", "trixie", "sid"}


def test_source_version_drops_binnmu_and_prefix() -> None:
    assert inst._source_version("Debian 1:7.2+dfsg-7+deb12u18+b3") == "1:7.2+dfsg-7+deb12u18"
    assert inst._source_version("Debian 1:10.0.13+ds-0+deb13u1") == "1:10.0.13+ds-0+deb13u1"


def test_version_regex_reads_debian_pkgversion() -> None:
    text = "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright ..."
    m = inst.VERSION_RE.search(text)
    assert m is not None
    assert m.groups() == ("7.2.22", "Debian 1:7.2+dfsg-7+deb12u18+b3")


def test_apt_files_use_given_mirror_and_pins() -> None:
    text = inst.apt_sources_text("http://mirror.invalid/debian")
    assert text.count("URIs: http://mirror.invalid/debian") == 2
    assert "Suites: trixie sid bookworm-backports" in text
    assert "Types: deb-src\nURIs: http://mirror.invalid/debian\nSuites: bookworm\n" in text
    pins = inst.APT_PREFERENCES_TEXT
    assert "Pin: release n=sid\nPin-Priority: 50" in pins
    assert "Pin: release n=trixie\nPin-Priority: 100" in pins


def test_mirror_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDQTEST_DEBIAN_MIRROR", "http://mirror.invalid/debian/")
    assert inst.debian_mirror() == "http://mirror.invalid/debian"


def test_resolve_names() -> None:
    assert inst.resolve_names(["all"]) == ["7.2", "10.0", "11.1"]
    assert inst.resolve_names([]) == ["7.2", "10.0", "11.1"]
    assert inst.resolve_names(["11.1", "7.2"]) == ["7.2", "11.1"]
    with pytest.raises(inst.InstallError, match="unknown QEMU build 9.9"):
        inst.resolve_names(["9.9"])


# ----------------------------------------------------------------------------- cache


def test_installed_builds_on_empty_cache(cache: Path) -> None:
    assert inst.installed_builds() == []
    assert not cache.exists()  # reading creates nothing


def test_installed_builds_reads_markers(cache: Path) -> None:
    binary = fake_build(cache, "10.0")
    (found,) = inst.installed_builds()
    assert found == inst.InstalledBuild(
        name="10.0",
        binary=binary,
        debian_version=inst.BUILDS["10.0"].package_version,
        root=cache / "10.0" / "root",
        has_qtest_module=True,
    )


def test_half_finished_or_stale_builds_are_ignored(cache: Path) -> None:
    fake_build(cache, "7.2")
    (cache / "7.2" / inst.MARKER).unlink()  # marker is written last
    fake_build(cache, "10.0", layout=inst.LAYOUT_VERSION + 99)
    fake_build(cache, "11.1", root="/elsewhere/root")  # cache was moved
    (cache / "junk").mkdir()
    assert inst.installed_builds() == []
    assert inst.need_root(["all"])


def test_install_is_fast_and_runs_nothing_when_done(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in inst.BUILDS:
        fake_build(cache, name)
    forbid_subprocesses(monkeypatch)
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # no root needed either
    lines: list[str] = []
    start = time.monotonic()
    got = inst.install(["all"], log=lines.append)
    assert time.monotonic() - start < 1.0
    assert [b.name for b in got] == ["7.2", "10.0", "11.1"]
    assert got == inst.installed_builds()
    assert len(lines) == 3 and all("installed" in ln for ln in lines)
    assert not inst.need_root(["all"])
    inst.ensure_root(["all"])  # nothing to do: no error


def test_non_root_gets_the_command_to_run(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_build(cache, "7.2")
    forbid_subprocesses(monkeypatch)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(inst.InstallError) as err:
        inst.install(["7.2", "11.1"], log=lambda _: None)
    msg = str(err.value)
    assert "\n" not in msg
    assert "needs root" in msg and "-m harness.provision.install 11.1" in msg
    assert f"SDQTEST_CACHE={cache.parent}" in msg


def test_main_reports_errors_in_one_line(
    cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert inst.main(["8.0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown QEMU build 8.0") and err.count("\n") == 1


# ----------------------------------------------------------------------------- verify


def test_verify_accepts_ok_and_reports_qemu_errors(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text("#!/bin/sh\nread cmd\necho 'OK 1000'\nexec sleep 30\n")
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho 'qemu: -accel qtest: invalid accelerator qtest' >&2\nexit 1\n")
    for f in (good, bad):
        f.chmod(0o755)
    assert inst.verify(good) is None
    assert inst.verify(bad) == "qemu: -accel qtest: invalid accelerator qtest"
    assert inst.verify(tmp_path / "missing") is not None


# ----------------------------------------------------------------------------- real builds

_REAL = {b.name: b for b in inst.installed_builds()}


@pytest.mark.qemu
@pytest.mark.parametrize("name", list(inst.BUILDS))
@pytest.mark.parametrize("machine_type", ["q35", "pc"])
def test_installed_build_runs_qtest(name: str, machine_type: str) -> None:
    build = _REAL.get(name)
    if build is None:
        pytest.skip(f"QEMU {name} is not installed: run `sdqtest qemu install {name}`")
    assert build.has_qtest_module
    out = subprocess.run(
        [str(build.binary), "--version"], capture_output=True, text=True, timeout=30, env={}
    ).stdout
    assert f"QEMU emulator version {name}." in out
    assert f"(Debian {build.debian_version})" in out
    assert inst.verify(build.binary, machine_type) is None
