"""An ARM board's field reproducer (``qemu-system-aarch64 -M raspi3b ...
-drive if=sd``) replays on the ARM builds: the board's own ``if=sd`` card is
kept as written (only PC machines lack an SD bus), and the replay command
picks the ARM builds for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.hwdefs.boards import by_name
from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay
from harness.replay import run

pytestmark = pytest.mark.qemu

FORM = Path(__file__).resolve().parents[1] / "crosscheck" / "field_inputs" / \
    "board-raspi3b-if-sd.sh"


def test_an_arm_report_keeps_the_boards_if_sd_and_replays_clean(arm_build: QemuBuild) -> None:
    pl = replay.plan(FORM, arm_build.binary, {*arm_build.profile.machine_types,
                                              *arm_build.aliases})
    assert pl.argv is not None and pl.argv[0] == str(arm_build.binary)
    assert "if=sd,index=0,file=null-co://,format=raw" in pl.argv
    assert pl.notes == ["-nographic dropped: without -nodefaults or -serial it puts a serial "
                        "port on stdio, where the replay's qtest is"]
    assert "ARM board" in pl.model_reason
    res = replay.replay_qemu(arm_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert replay.verdict(res) == "clean" and res.answered == 5, res.summary()
    board = by_name("raspi3b")
    capareg = dict(board.sdhci)["capareg"]
    assert res.answers[1] == ("readl 0x3f300040", f"OK {capareg:#018x}")


def test_the_replay_command_runs_an_arm_report_on_arm_builds() -> None:
    assert run.is_arm_report(FORM)
    assert not run.is_arm_report(replay.field_corpus()[0])
