"""Replaying qtest traces on QEMU under a pty, and on the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay

pytestmark = pytest.mark.qemu

BAR = 0xE0000000


def _sdhci_trace() -> list[str]:
    # q35: sdhci-pci is 00:01.0 (devfn 8); identify it, map BAR0, poke it.
    cfg = 0x80000000 | (8 << 8)
    return [
        f"outl 0xcf8 {cfg:#x}", "inl 0xcfc",
        f"outl 0xcf8 {cfg | 0x10:#x}", f"outl 0xcfc {BAR:#x}",
        f"outl 0xcf8 {cfg | 0x04:#x}", "outw 0xcfc 0x6",
        f"readw {BAR + 0xFE:#x}", f"readl {BAR + 0x40:#x}", f"readl {BAR + 0x24:#x}",
        f"writew {BAR + 0x2C:#x} 0x1", f"readw {BAR + 0x2C:#x}",
        "b64write 0x100000 0x4 3q2+7w==", "read 0x100000 0x4",
    ]


def test_replay_without_crash_runs_model_too(qemu_build: QemuBuild) -> None:
    res = replay.replay_qemu(qemu_build.binary, _sdhci_trace(), replay.DEFAULT_MACHINE)
    assert not res.crashed and res.answered == res.lines
    assert res.answers[1][1].split()[1].endswith("71b36")
    replay.replay_model(res, qemu_build.profile, replay.DEFAULT_MACHINE)
    assert res.model_checked, res.model_reason
    assert res.model_diffs == []


def test_replay_reports_a_crash(qemu_build: QemuBuild) -> None:
    # A zero-length "read" trips an assertion in QEMU's qtest server.
    res = replay.replay_qemu(qemu_build.binary, ["endianness", "read 0x0 0x0", "endianness"],
                             replay.DEFAULT_MACHINE)
    assert res.crashed and res.answered == 1
    assert res.signal is not None or res.exit_status not in (0, None)
    assert "1 of 3" not in res.summary() and "crashed" in res.summary()


def test_trace_file_parsing(tmp_path: Path) -> None:
    p = tmp_path / "t.qtest"
    p.write_text("# comment\n\nreadw 0x10\n  writeb 0x20 0x1  \n")
    assert replay.read_trace(p) == ["readw 0x10", "writeb 0x20 0x1"]
