"""Firmware search for a QEMU binary whose build directory lacks blobs
(a fake binary that answers ``-L help``; no QEMU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.provision import firmware


def _binary(tmp_path: Path, *dirs: Path) -> Path:
    exe = tmp_path / "qemu-system-x86_64"
    exe.write_text("#!/bin/sh\n[ \"$1 $2\" = '-L help' ] || exit 1\n"
                   + "".join(f"echo {d}\n" for d in dirs))
    exe.chmod(0o755)
    return exe


def _dir(path: Path, *names: str) -> Path:
    path.mkdir(parents=True)
    for n in names:
        (path / n).write_bytes(b"rom")
    return path


def test_a_build_with_its_firmware_gets_no_option(tmp_path: Path) -> None:
    own = _dir(tmp_path / "own", *firmware.PC_FIRMWARE)
    assert firmware.search_args(_binary(tmp_path, own)) == []


def test_a_build_without_kvmvapic_keeps_its_own_dirs_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """QEMU searches -L directories first: the build's own come before the
    fallback, which must hold everything the build lacks."""
    own = _dir(tmp_path / "own", "bios-256k.bin", "linuxboot_dma.bin")
    partial = _dir(tmp_path / "partial", "bios-256k.bin")
    full = _dir(tmp_path / "full", "kvmvapic.bin")
    monkeypatch.setattr(firmware, "fallback_dirs", lambda: [partial, full])
    assert firmware.search_args(_binary(tmp_path, own)) == ["-L", str(own), "-L", str(full)]
    monkeypatch.setattr(firmware, "fallback_dirs", lambda: [partial])
    assert firmware.search_args(_binary(tmp_path, own)) == []  # nothing helps: QEMU says why


def test_a_binary_that_cannot_answer_has_no_data_dirs(tmp_path: Path) -> None:
    assert firmware.data_dirs(tmp_path / "absent") == []
