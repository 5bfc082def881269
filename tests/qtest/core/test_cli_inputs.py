"""Bad input to the command line: one line naming the problem and the fix,
a non-zero exit status, and the user's image untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.qemu.builds import QemuBuild

ROOT = Path(__file__).resolve().parents[3]


def sdqtest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    e.pop("QTEST_QEMU_BINARY", None)
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, timeout=300, env=e, cwd=ROOT)


def one_line_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode != 0
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("sdqtest: ")
    return lines[0]


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_missing_binary(tmp_path: Path) -> None:
    msg = one_line_error(sdqtest("check", "--qemu", str(tmp_path / "qemu-system-x86_64")))
    assert "does not exist" in msg and "--qemu" in msg


def test_unknown_build_name() -> None:
    msg = one_line_error(sdqtest("qemu", "list", "--qemu", "6.0"))
    assert "unknown QEMU build '6.0'" in msg and "sdqtest qemu install" in msg


@pytest.mark.qemu
def test_unknown_machine_type(qemu_build: QemuBuild) -> None:
    msg = one_line_error(sdqtest("check", "--qemu", str(qemu_build.binary),
                                 "--machine", "pc-q35-1.0", "--scenario", "card-registers"))
    assert "no machine type 'pc-q35-1.0'" in msg and "offers" in msg


@pytest.mark.qemu
def test_image_size_qemu_refuses(qemu_build: QemuBuild, tmp_path: Path) -> None:
    img = tmp_path / "odd.img"
    img.write_bytes(b"\x5a" * (3 << 20))  # 3 MiB: not a power of two
    before = digest(img)
    msg = one_line_error(sdqtest("check", "--qemu", str(qemu_build.binary), "--image", str(img),
                                 "--scenario", "card-registers"))
    assert "power of 2" in msg and "QEMU refuses it too" in msg and "qemu-img resize" in msg
    assert digest(img) == before


@pytest.mark.qemu
def test_unreadable_and_missing_image(qemu_build: QemuBuild, tmp_path: Path) -> None:
    msg = one_line_error(sdqtest("check", "--qemu", str(qemu_build.binary),
                                 "--image", str(tmp_path / "none.img")))
    assert "does not exist" in msg
    if os.geteuid() == 0:
        pytest.skip("root reads any file: the unreadable case needs another user")
    img = tmp_path / "secret.img"
    img.write_bytes(bytes(1 << 20))
    img.chmod(0)
    msg = one_line_error(sdqtest("check", "--qemu", str(qemu_build.binary), "--image", str(img)))
    assert "not readable" in msg


@pytest.mark.qemu
def test_user_image_is_never_written(qemu_build: QemuBuild, tmp_path: Path) -> None:
    """A read-only (0444) user image: the check writes and erases blocks, on
    a copy; the file keeps its bytes and its mode."""
    img = tmp_path / "card.img"
    img.write_bytes(bytes(range(256)) * (4 << 12))  # 4 MiB
    img.chmod(0o444)
    before = digest(img)
    p = sdqtest("check", "--qemu", str(qemu_build.binary), "--image", str(img),
                "--scenario", "pio-write-7", "--scenario", "erase-ranges-sdsc-16m",
                "--report-dir", str(tmp_path / "reports"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert digest(img) == before and (img.stat().st_mode & 0o777) == 0o444


@pytest.mark.qemu
def test_socket_directory_not_creatable(qemu_build: QemuBuild, tmp_path: Path) -> None:
    msg = one_line_error(sdqtest("check", "--qemu", str(qemu_build.binary),
                                 "--scenario", "card-registers",
                                 env={"TMPDIR": str(tmp_path / "missing" / "dir")}))
    assert "socket directory" in msg and "TMPDIR" in msg


def test_any_harness_error_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An error of the tree outside usage and QEMU (an install step, an image
    recipe) ends the command with one line and status 2, not a traceback."""
    from harness import cli
    from harness.commands import qemu
    from harness.images import ImageError

    def fails(args: object) -> int:
        raise ImageError("recipe sdsc-16m: mkfs.vfat not found")

    monkeypatch.setattr(qemu, "run_list", fails)
    assert cli.main(["qemu", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["sdqtest: error: recipe sdsc-16m: mkfs.vfat not found"]
