"""The runner reports a QEMU that died, closed its qtest stream or hung as
a crash, never as a harness or model bug."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.check import runner, testbench
from harness.errors import QemuError
from harness.profile import NEWEST
from harness.qemu.builds import QemuBuild
from harness.qemu.qtest import QtestClosed, QtestError, QtestTimeout
from harness.qemu.session import QemuDied
from harness.scenarios import Context, Scenario
from harness.target import Target
from tests.qtest.fakes import fake_qemu


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: BaseException) -> runner.Result:
    fake = fake_qemu(error)
    monkeypatch.setattr(runner, "QemuTarget", fake)
    monkeypatch.setattr(testbench, "QemuTarget", fake)  # the bench launches it
    image = tmp_path / "card.img"
    with open(image, "wb") as f:
        f.truncate(1 << 20)
    profile = dataclasses.replace(NEWEST, machine_types=("q35", "pc-q35-11.1"))
    build = QemuBuild("fake", Path("/nonexistent"), profile)

    def read_one(t: Target, ctx: Context) -> None:
        t.read(0x24, 4)

    sc = Scenario("read-one", "registers", read_one)
    return runner.run(build, sc, "q35",
                      runner.RunOptions(image=runner.UserImage(image, "raw", image)))


@pytest.mark.parametrize("error", [
    QtestTimeout("no answer from QEMU within 10 s (hung); it was stopped"),
    QtestClosed("QEMU closed the qtest stream"),
    QemuDied(-9, "", [], ["qemu-system-x86_64"]),
], ids=["timeout", "closed", "died"])
def test_qemu_gone_is_a_crash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                              error: QemuError) -> None:
    res = _run(monkeypatch, tmp_path, error)
    assert res.status == runner.CRASH, res.reason
    assert res.reason == str(error) and not res.notes


def test_other_qemu_errors_are_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    res = _run(monkeypatch, tmp_path, QtestError("readl 0xe0000024", "FAIL"))
    assert res.status == runner.ERROR and "FAIL" in res.reason and not res.notes


def test_a_harness_bug_is_an_error_with_its_traceback(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    res = _run(monkeypatch, tmp_path, KeyError("oops"))
    assert res.status == runner.ERROR and res.internal
    assert res.reason == "internal error of sdqtest: KeyError: 'oops'"
    assert "Traceback" in res.notes[0] and "KeyError: 'oops'" in res.notes[0]


def test_qemu_errors_are_not_internal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    res = _run(monkeypatch, tmp_path, QtestError("readl 0xe0000024", "FAIL"))
    assert not res.internal
