"""The compat matrix holds realised values to the model's table, with a
fake QEMU session: a value that contradicts the table is a decoded
divergence, a build class default that differs while every realised value
agrees is a note, and a version newer than the table is reported unverified
by ``compat`` and by every ``check`` run (output and JSON)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import cli
from harness.check import compat_matrix, inputs, runner
from harness.commands import check as check_command
from harness.hwdefs import sdhci as H
from harness.model import emmc_defaults
from harness.profile import BuildProfile
from harness.qemu.builds import QemuBuild
from harness.scenarios import Scenario

CAP = H.CAPAREG_DEFAULT
NO_ADMA2 = CAP & ~H.CAPAB.mask("ADMA2")
_SDHCI = {"capareg": str(CAP), "maxcurr": "0", "sd-spec-version": "2", "uhs": "0"}


def _build(version: tuple[int, int, int], name: str = "fake",
           sdhci: dict[str, str | None] | None = None) -> QemuBuild:
    types = ("pc-q35-9.0", "pc-q35-9.1", "pc-q35-11.1", "pc-i440fx-11.1")
    # an emmc device as the model's table expects of the version (its own notes
    # are emmc_defaults' business, tested in model/test_emmc.py)
    emmc = {p: str(v) for p, v in emmc_defaults.expected_properties(version).items()}
    prof = BuildProfile(version, types, {"spec_version": "3", "drive": None},
                        sdhci or dict(_SDHCI),
                        emmc_properties={**emmc, "drive": None} if emmc else None,
                        emmc_pluggable=emmc_defaults.pluggable(version))
    return QemuBuild(name, Path("/nonexistent"), prof,
                     aliases={"q35": "pc-q35-11.1", "pc": "pc-i440fx-11.1"},
                     has_sdhci_pci=True)


def _fake_session(realised: Callable[[str, str, str], Any]) -> type:
    class FakeSession:
        """qom-get answers ``realised(machine, path, property)``."""

        def __init__(self, binary: Any, machine: Any, **kwargs: Any) -> None:
            self.machine = machine.type

        def __enter__(self) -> FakeSession:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def qmp_cmd(self, cmd: str, **args: Any) -> Any:
            assert cmd == "qom-get"
            return realised(self.machine, args["path"], args["property"])

    return FakeSession


def _qemu_like(machine: str, path: str, prop: str) -> Any:
    """What Debian's 11.1.3 realises."""
    if prop == "spec_version":
        return 2 if machine == "pc-q35-9.0" else 3
    return {"capareg": CAP, "maxcurr": 0, "sd-spec-version": 2, "uhs": 0}[prop]


def test_every_machine_type_and_alias_every_property(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat_matrix, "QemuSession", _fake_session(_qemu_like))
    b = _build((11, 1, 3))
    cells = compat_matrix.matrix([b])
    assert {c.machine for c in cells} == {*b.profile.machine_types, "q35", "pc"}
    assert {(c.device, c.prop) for c in cells} == {
        ("sd-card", "spec_version"), ("sdhci-pci", "capareg"), ("sdhci-pci", "maxcurr"),
        ("sdhci-pci", "sd-spec-version"), ("sdhci-pci", "uhs")}
    assert all(c.ok for c in cells)
    assert compat_matrix.unverified_notes([b]) == []
    assert compat_matrix.default_notes([b], cells) == []


def test_realised_value_contradicting_the_table_is_a_decoded_divergence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def dropped(machine: str, path: str, prop: str) -> Any:
        return NO_ADMA2 if prop == "capareg" and machine == "q35" else \
            _qemu_like(machine, path, prop)

    monkeypatch.setattr(compat_matrix, "QemuSession", _fake_session(dropped))
    b = _build((11, 1, 3), sdhci={**_SDHCI, "capareg": str(NO_ADMA2)})
    cells = compat_matrix.matrix([b])
    bad = [c for c in cells if not c.ok]
    assert [(c.machine, c.prop) for c in bad] == [("q35", "capareg")]
    text = bad[0].describe()
    assert "q35: sdhci-pci capareg realised 0x057034b4" in text
    assert "the model expects 0x057834b4" in text
    assert "build's class default (device-list-properties): 0x057034b4" in text
    assert "CAPAB.ADMA2: model 0x1, QEMU 0x0" in text
    out = io.StringIO()
    assert compat_matrix.print_matrix([b], cells, out) == 1
    assert "0x057034b4 != model 0x057834b4" in out.getvalue()
    # The class default differs but not every realised value agrees: no note.
    assert compat_matrix.default_notes([b], cells) == []


def test_compat_entry_contradicted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build whose 9.0 machine type realises spec_version 3: hw_compat_9_0 lost."""
    def no_compat(machine: str, path: str, prop: str) -> Any:
        return 3 if prop == "spec_version" else _qemu_like(machine, path, prop)

    monkeypatch.setattr(compat_matrix, "QemuSession", _fake_session(no_compat))
    bad = [c for c in compat_matrix.matrix([_build((11, 1, 3))]) if not c.ok]
    assert [(c.machine, c.prop, c.expected, c.actual) for c in bad] == [
        ("pc-q35-9.0", "spec_version", 2, 3)]
    assert "hw_compat_9_0" in bad[0].describe()


def test_differing_class_default_with_agreeing_realised_values_is_a_note(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat_matrix, "QemuSession", _fake_session(_qemu_like))
    b = _build((11, 1, 3), sdhci={**_SDHCI, "capareg": str(NO_ADMA2)})
    cells = compat_matrix.matrix([b])
    assert all(c.ok for c in cells)
    notes = compat_matrix.default_notes([b], cells)
    assert len(notes) == 1 and "sdhci-pci capareg" in notes[0] and "0x057034b4" in notes[0]
    out = io.StringIO()
    assert compat_matrix.print_matrix([b], cells, out) == 0
    assert "(class default: build's)" in out.getvalue() and notes[0] in out.getvalue()


def test_newer_version_is_unverified_in_compat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat_matrix, "QemuSession", _fake_session(_qemu_like))
    b = _build((12, 0, 0), "12.0")
    out = io.StringIO()
    assert compat_matrix.print_matrix([b], compat_matrix.matrix([b]), out) == 0
    assert "[12.0] defaults unverified: QEMU 12.0.0 is newer" in out.getvalue()


def test_every_check_run_says_unverified(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Even a check of one scenario, with no compat matrix, says so in its
    output and its JSON."""
    b = _build((12, 0, 0), "12.0")
    monkeypatch.setattr(check_command, "select_builds", lambda specs: [b])
    monkeypatch.setattr(check_command, "select_board_builds", lambda specs: [])  # no boards
    monkeypatch.setattr(inputs, "check_build", lambda build: None)

    def agree(build: QemuBuild, sc: Scenario, machine: str, **kw: Any) -> runner.Result:
        return runner.Result(build.name, sc.name, sc.group, machine, runner.AGREE)

    monkeypatch.setattr(runner, "run", agree)
    out_json = tmp_path / "r.json"
    assert cli.main(["check", "--scenario", "card-registers", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "[12.0] defaults unverified: QEMU 12.0.0 is newer" in text
    notes = json.loads(out_json.read_text())["builds"][0]["notes"]
    assert notes and "12.0.0 is newer" in notes[0]
