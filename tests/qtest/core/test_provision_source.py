"""``sdqtest qemu build VERSION``: fetching, checking, unpacking and naming
source releases, against a local pool (``file://``), without building QEMU."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.ledger import boundaries
from harness.provision import source
from harness.provision.source import Release, SourceError


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    mirror = tmp_path / "mirror"
    pool = mirror / source.POOL
    pool.mkdir(parents=True)
    monkeypatch.setenv("SDQTEST_DEBIAN_MIRROR", mirror.as_uri())
    return pool


def _orig(pool: Path, version: str, tmp_path: Path) -> Release:
    """A tiny ``qemu_<version>.orig.tar.xz`` in the pool, and its Release."""
    top = tmp_path / "tree" / f"qemu-{version}"
    (top / "hw" / "sd").mkdir(parents=True)
    (top / "VERSION").write_text(version + "\n")
    (top / "hw" / "sd" / "sd.c").write_text("int card;\n")
    name = f"qemu_{version}+ds.orig.tar.xz"
    subprocess.run(["tar", "-cJf", str(pool / name), "-C", str(top.parent), top.name],
                   check=True)
    digest = hashlib.sha256((pool / name).read_bytes()).hexdigest()
    return Release(version, "", name, digest)


def test_the_releases_are_the_ledgers_source_builds() -> None:
    """Every source release the version boundaries rest on can be built by name."""
    recorded = {".".join(map(str, b.version)) for b in boundaries.BUILDS
                if b.name.endswith(" src")}
    assert recorded == set(source.RELEASES)
    for r in source.RELEASES.values():
        assert len(r.sha256) == 64 and r.first.startswith("qemu_")
        assert r.patched == bool(r.debian)


def test_all_and_unknown_versions() -> None:
    assert [r.version for r in source.resolve_versions(["all"])] == list(source.RELEASES)
    assert [r.version for r in source.resolve_versions(["11.1.1", "7.2.22"])] == \
        ["7.2.22", "11.1.1"]
    with pytest.raises(SourceError, match=r"unknown source release 9\.9: choose from 7\.2"):
        source.resolve_versions(["9.9"])


def test_dsc_checksums_are_read() -> None:
    text = ("Format: 3.0 (quilt)\nSource: qemu\nChecksums-Sha1:\n"
            f" {'1' * 40} 10 qemu_1.0.orig.tar.xz\n"
            f"Checksums-Sha256:\n {'a' * 64} 10 qemu_1.0.orig.tar.xz\n"
            f" {'b' * 64} 20 qemu_1.0-1.debian.tar.xz\nFiles:\n {'c' * 32} 10 x\n")
    assert source.dsc_files(text) == [("a" * 64, "qemu_1.0.orig.tar.xz"),
                                      ("b" * 64, "qemu_1.0-1.debian.tar.xz")]
    assert source.dsc_files("Format: 3.0\n") == []


def test_fetch_unpacks_once_and_then_downloads_nothing(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = _pool(tmp_path, monkeypatch)
    rel = _orig(pool, "9.8.7", tmp_path)
    src = source.fetch(rel, log=lambda _: None)
    assert src == cache / "source" / "9.8.7" / "src"
    assert (src / "VERSION").read_text() == "9.8.7\n" and (src / "hw/sd/sd.c").is_file()
    (pool / rel.first).unlink()  # a second fetch must not need the pool
    lines: list[str] = []
    assert source.fetch(rel, log=lines.append) == src and lines == []


def test_a_file_with_another_checksum_is_refused(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = _pool(tmp_path, monkeypatch)
    rel = _orig(pool, "9.8.7", tmp_path)
    bad = Release(rel.version, "", rel.first, "0" * 64)
    with pytest.raises(SourceError, match="SHA-256 .* expected 0000"):
        source.fetch(bad, log=lambda _: None)
    folder = cache / "source" / "9.8.7"
    assert not (folder / "src").exists() and list(folder.glob("*.part")) == []


def test_a_missing_file_says_what_to_set(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pool(tmp_path, monkeypatch)
    with pytest.raises(SourceError, match="SDQTEST_DEBIAN_MIRROR"):
        source.fetch(Release("9.8.7", "", "qemu_9.8.7.orig.tar.xz", "0" * 64), log=print)


def test_a_tree_of_another_version_is_not_taken(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = _pool(tmp_path, monkeypatch)
    rel = _orig(pool, "9.8.7", tmp_path)
    src = cache / "source" / "9.8.7" / "src"
    src.mkdir(parents=True)
    (src / "VERSION").write_text("9.8.6\n")
    with pytest.raises(SourceError, match="holds QEMU 9.8.6, not 9.8.7: delete it"):
        source.fetch(rel, log=print)


def test_the_bugs_tree_leaves_the_source_alone(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = _pool(tmp_path, monkeypatch)
    rel = _orig(pool, "9.8.7", tmp_path)
    bugs = tmp_path / "bugs"
    bugs.mkdir()
    (bugs / "0001-fix.patch").write_text(
        "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n---\n"
        "diff --git a/hw/sd/sd.c b/hw/sd/sd.c\n--- a/hw/sd/sd.c\n+++ b/hw/sd/sd.c\n"
        "@@ -1 +1 @@\n-int card;\n+int card = 1;\n")
    monkeypatch.setattr(source, "BUGS_DIR", bugs)
    src = source.fetch(rel, log=lambda _: None)
    tree = source.bugs_tree(rel, log=lambda _: None)
    assert (tree / "hw/sd/sd.c").read_text() == "int card = 1;\n"
    assert (src / "hw/sd/sd.c").read_text() == "int card;\n"
    assert os.stat(tree / "VERSION").st_ino == os.stat(src / "VERSION").st_ino  # linked
    assert source.bugs_tree(rel, log=lambda _: None) == tree  # kept: same patches


def test_variants_and_their_names(cache: Path) -> None:
    rel = source.RELEASES["11.1.1"]
    assert source.wanted(rel).folder == cache / "source" / "11.1.1" / "plain"
    assert source.wanted(rel, sanitize=("undefined", "address")).variant == "asan-ubsan"
    assert source.wanted(rel, coverage=True).variant == "coverage"
    assert source.wanted(rel, bugs=True, arm=True).binaries[1].name == "qemu-system-aarch64"
    with pytest.raises(SourceError, match="one of"):
        source.wanted(rel, coverage=True, bugs=True)
    assert [b.name for b in source.wanted(rel, coverage=True, arm=True, riscv=True).binaries] \
        == ["qemu-system-x86_64", "qemu-system-aarch64", "qemu-system-riscv64"]
    for variant, arm, riscv in (("plain", False, False), ("asan-ubsan", False, False),
                                ("plain", True, False), ("coverage", False, True)):
        w = source.Wanted(rel, variant, arm, riscv=riscv)
        for b in w.binaries:
            b.parent.mkdir(parents=True, exist_ok=True)
            b.write_text("#!/bin/sh\n")
            b.chmod(0o755)
        assert w.present()
    (cache / "source" / "11.1.1" / "bugs").mkdir()  # no binary: not a build
    assert sorted(source.source_builds()) == ["11.1.1-src", "11.1.1-src-arm",
                                              "11.1.1-src-asan-ubsan", "11.1.1-src-coverage",
                                              "11.1.1-src-coverage-riscv"]
    assert source.command_for("11.1.1", "bugs") == "sdqtest qemu build 11.1.1 --bugs"


def test_a_folder_keeps_the_emulators_it_was_configured_for(cache: Path) -> None:
    """``qemu build V --riscv`` into a folder built ``--arm`` configures both
    (a narrower target list would leave a stale qemu-system-aarch64)."""
    rel = source.RELEASES["11.1.1"]
    w = source.wanted(rel, riscv=True)
    assert (w.keeping_configured().arm, w.keeping_configured().riscv) == (False, True)
    w.folder.mkdir(parents=True)
    (w.folder / ".sdqtest-configure.json").write_text(json.dumps(
        {"flags": ["--target-list=x86_64-softmmu,aarch64-softmmu", "--disable-docs"]}))
    kept = w.keeping_configured()
    assert (kept.arm, kept.riscv) == (True, True)
    assert source.wanted(rel).keeping_configured().binaries[1:] == [
        w.folder / "qemu-system-aarch64"]


def test_the_command_names_the_releases(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["qemu", "build", "9.9"]) != 0
    err = capsys.readouterr().err
    assert "unknown source release 9.9" in err and "11.1.1" in err
