"""Which launch failures say the build lacks what the machine needs (a
ROM, a machine type, a device): those and no others are ``cannot run on
this build``; any other failure to start stays an error (it may be a
regression).  The messages are QEMU's, as its sources print them."""

from __future__ import annotations

import pytest

from harness.check import report, runner, verdict
from harness.check.runner import Result
from harness.qemu.cannot_run import lacks

PREFIX = "QEMU refused to start: "


@pytest.mark.parametrize("stderr,words", [
    # hw/arm/npcm7xx_boards.c npcm7xx_load_bootrom, after QEMU's -mon warning
    ("qemu-system-aarch64: -mon chardev=qmp,mode=control: warning: '-mon' is deprecated "
     "qemu-system-aarch64: Could not find ROM image 'npcm7xx_bootrom.bin'",
     "Could not find ROM image 'npcm7xx_bootrom.bin'"),
    ('unsupported machine type: "quanta-gbs-bmc" Use -machine help to list supported machines',
     'unsupported machine type: "quanta-gbs-bmc"'),
    ("unsupported machine type Use -machine help to list supported machines",  # 7.2
     "unsupported machine type"),
    ("-device emmc,id=card: 'emmc' is not a valid device model name",
     "'emmc' is not a valid device model name"),
    ("unknown type 'emmc'", "unknown type 'emmc'"),
])
def test_what_the_build_lacks_in_qemus_words(stderr: str, words: str) -> None:
    assert lacks(PREFIX + stderr) == words


@pytest.mark.parametrize("stderr", [
    "qemu-system-aarch64: -drive if=sd,index=0,file=x: machine type does not support "
    "if=sd,bus=0,unit=0",
    "qemu-system-aarch64: sdhci: Property 'sd-spec-version' bad value",
    "QEMU exited at start with status -6",
    "QEMU did not connect to qtest within 20 s",
])
def test_any_other_start_failure_is_not_cannot_run(stderr: str) -> None:
    assert lacks(PREFIX + stderr) is None


def test_cannot_run_is_counted_apart_and_fails_nothing() -> None:
    ok = Result("11.1", "a", "card", "xilinx-zynq-a9", runner.AGREE)
    cannot = [Result("11.1", s, "card", "quanta-gbs-bmc", runner.CANNOT_RUN,
                     "cannot run on this build: Could not find ROM image 'x.bin'")
              for s in ("a", "b")]
    c = report.counts([ok, *cannot])
    assert (c["agreed"], c["unexplained"], c["cannot_run"], c["skipped"]) == (1, 0, 2, 0)
    assert verdict.judge([ok, *cannot]).status == verdict.CLEAN
    assert verdict.judge(cannot).status == verdict.SKIPPED  # nothing ran at all
    assert runner.skipped_too_much([ok, *cannot]) == []


def test_a_machine_type_the_build_lacks_cannot_run_on_it() -> None:
    """A board whose machine type the build's query-machines does not list:
    no run is planned there, and the check says it cannot run on the build."""
    import dataclasses
    from pathlib import Path

    from harness.check import boards
    from harness.profile import NEWEST
    from harness.qemu.builds import QemuBuild

    profile = dataclasses.replace(NEWEST, machine_types=("xilinx-zynq-a9",))
    build = QemuBuild("old-arm", Path("/nonexistent"), profile)
    assert boards.machines_for(build, ["zynq", "quanta-gbs"]) == ["xilinx-zynq-a9"]
    assert boards.absent_machines([build], ["zynq", "quanta-gbs"]) == [
        ("old-arm", "quanta-gbs", "quanta-gbs-bmc",
         "no machine type quanta-gbs-bmc (the build's query-machines)")]
    assert boards.not_run([build], ["zynq", "quanta-gbs"]) == [
        "[old-arm] board quanta-gbs (quanta-gbs-bmc): cannot run on this build: no machine "
        "type quanta-gbs-bmc (the build's query-machines)"]
