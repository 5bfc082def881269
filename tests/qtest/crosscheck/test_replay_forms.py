"""Each field form replays on every build: the hand-written examples of
``field_inputs/`` (continuations and comments, -enable-kvm and i386, a
heredoc written to a file, ``-drive if=sd``, a machine type the build
lacks, a ``-qtest-log`` transcript); a command line QEMU refuses is
reported as refused with QEMU's message and exit status 4, never as a
crash; an 11 KiB ``b64write``/``b64read`` crosses the channel whole."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness import cli
from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay

pytestmark = pytest.mark.qemu

FIELD = Path(__file__).resolve().parent / "field_inputs"
FORMS = sorted(p.name for p in FIELD.glob("form-*"))


def _machines(b: QemuBuild) -> set[str]:
    return {*b.profile.machine_types, *b.aliases}


@pytest.mark.parametrize("name", FORMS)
def test_form_replays_clean_and_the_model_agrees(qemu_build: QemuBuild, name: str) -> None:
    pl = replay.plan(FIELD / name, qemu_build.binary, _machines(qemu_build))
    assert len(pl.trace) == 16
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert res.verdict == replay.CLEAN, res.summary() + res.stderr
    assert res.answered == 16
    replay.replay_model(res, qemu_build.profile, pl.machine)
    assert res.model_checked, res.model_reason
    assert res.model_reads >= 4 and res.model_diffs == []


def test_if_sd_as_is_is_refused_not_crashed(qemu_build: QemuBuild,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """QEMU 6.0 and later refuse ``if=sd`` on PC machines: as written, the
    reproducer is a refusal (exit 4), rewritten it runs (exit 0)."""
    path = str(FIELD / "form-drive-if-sd.sh")
    rc = cli.main(["replay", path, "--qemu", str(qemu_build.binary), "--as-is", "--no-model"])
    out = capsys.readouterr().out
    assert rc == 4, out
    assert "refused: " in out and "if=sd" in out and "crashed" not in out
    rc = cli.main(["replay", path, "--qemu", str(qemu_build.binary), "--no-model"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "if=sd becomes if=none, plus -device sd-card,drive=sd0" in out and "16 of 16" in out


def test_unknown_device_is_refused_with_qemus_message(qemu_build: QemuBuild) -> None:
    pl = replay.plan(FIELD / "refused-unknown-device.sh", qemu_build.binary,
                     _machines(qemu_build))
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert res.verdict == replay.REFUSED and not res.crashed
    assert "no-such-device" in res.refusal and res.summary().startswith("refused: ")


def test_a_crash_is_exit_3_with_its_line(qemu_build: QemuBuild, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # QEMU's qtest server asserts on a zero-length read (system/qtest.c).
    t = tmp_path / "crash.qtest"
    t.write_text("endianness\nread 0x0 0x0\nendianness\n")
    rc = cli.main(["replay", str(t), "--qemu", str(qemu_build.binary)])
    out = capsys.readouterr().out
    assert rc == 3, out
    assert "crashed (signal SIGABRT) at trace line 2 of 3" in out


def test_dma_sized_lines_cross_whole(qemu_build: QemuBuild) -> None:
    """11 KiB of guest memory written and read back in one command each,
    as the fuzzer's reproducers do: QEMU's answer is the data written, and
    the model (given the same bytes) agrees."""
    data = bytes((i * 7 + 3) & 0xFF for i in range(11 << 10))
    b64 = base64.b64encode(data).decode()
    trace = [f"b64write 0x100000 {len(data):#x} {b64}", f"b64read 0x100000 {len(data):#x}",
             f"read 0x100000 {len(data):#x}"]
    res = replay.replay_qemu(qemu_build.binary, trace, replay.DEFAULT_MACHINE)
    assert res.verdict == replay.CLEAN and res.answered == 3
    assert res.answers[1][1] == f"OK {b64}"
    assert res.answers[2][1] == f"OK 0x{data.hex()}"
    replay.replay_model(res, qemu_build.profile, replay.DEFAULT_MACHINE)
    assert res.model_diffs == [] and res.model_reads == 2


def test_fuzz_input_takes_each_form_and_says_its_rewrites(qemu_build: QemuBuild) -> None:
    from harness.fuzz.inputs import trace_ops

    notes: list[str] = []
    ops = trace_ops(FIELD / "form-drive-if-sd.sh", qemu_build.binary, qemu_build.profile,
                    notes=notes)
    assert {"op": "write", "off": 0x29, "size": 1, "value": 0x0F} in ops
    assert any("if=sd becomes if=none, plus -device sd-card" in n for n in notes)
    with pytest.raises(replay.ReplayError, match="refused: .*no-such-device"):
        trace_ops(FIELD / "refused-unknown-device.sh", qemu_build.binary, qemu_build.profile)
