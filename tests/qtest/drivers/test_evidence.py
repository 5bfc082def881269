"""Driver evidence of the ledger: the measured file is consistent with the ledger and
the recordings, every entry says what it has, and a run's notes become uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.check import driver_evidence, runner
from harness.check.runner import Result
from harness.ledger import LEDGER, adopting
from harness.ledger import drivers as L
from harness.scenarios import drivers


def test_the_evidence_file_names_ledger_entries_recordings_and_their_phases() -> None:
    data = json.loads(L.FILE.read_text())
    phases = {r["name"]: [p["name"] for p in r["phases"]] for r in drivers.recordings()}
    assert data["entries"]
    for key, uses in data["entries"].items():
        assert key in LEDGER, key
        for u in uses:
            assert u["recording"] in phases and u["how"] in L.HOW and u["builds"]
            assert set(u["phases"]) <= set(phases[u["recording"]]), (key, u)
    assert L.uses(next(iter(data["entries"])))  # the module reads the same file


def test_every_entry_says_which_drivers_meet_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert L.evidence_text("no.such-entry") == "none"
    assert cli.main(["drivers", "ledger", "--markdown"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")][2:]
    assert len(rows) == len(LEDGER)
    assert all(row.rstrip(" |").rsplit("| ", 1)[1] for row in rows)  # none or uses


def test_a_drivers_use_refuses_an_unknown_how() -> None:
    with pytest.raises(ValueError):
        L.DriverUse("r", ("probe",), "seen", ("11.1",))


def test_a_runs_phase_notes_and_adoptions_become_uses() -> None:
    r = Result("11.1", "linux-x", drivers.GROUP, "q35", runner.AGREE)
    r.notes = ["driver phase probe: steps 0-100; consulted: sd.a; quirks: ",
               "driver phase read-512: steps 100-150; consulted: sd.a sd.b; quirks: q.c",
               "something else"]
    r.use(adopting("RCA")).adopted.append((42, "RCA", 0x1234))
    ev: driver_evidence.Evidence = {}
    phases = driver_evidence.from_result(ev, r, "11.1")
    assert phases == [("probe", 0, 100), ("read-512", 100, 150)]
    assert ev["sd.a"]["linux-x"].phases == {"probe"} and not ev["sd.a"]["linux-x"].shown
    assert ev["sd.b"]["linux-x"].phases == {"read-512"}
    assert ev["q.c"]["linux-x"].shown
    rca = ev[adopting("RCA").key]["linux-x"]
    assert rca.phases == {"probe"} and rca.shown and rca.builds == {"11.1"}


def test_the_commands_refuse_bad_input_in_one_line(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    assert cli.main(["drivers", "record", "--board", "no-such-board"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no recording guest for board no-such-board" in err[0]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(drivers.FormatError, match="bad.json: not JSON"):
        drivers.recordings(tmp_path)
    (tmp_path / "bad.json").write_text('{"format": 99}')
    with pytest.raises(drivers.FormatError, match="format 99"):
        drivers.recordings(tmp_path)


def test_the_list_names_each_recordings_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["drivers", "list"]) == 0
    out = capsys.readouterr().out
    for rec in drivers.recordings():
        assert out.count(f"{rec['name']}: {rec['driver']}") == 1
        assert rec["source"]["guest"]["kernel_package_version"] in out


@pytest.mark.slow
def test_coverage_by_the_recordings_beside_the_corpus(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """The model alone: the recordings take branches, some the explore corpus does not."""
    assert cli.main(["drivers", "coverage"]) == 0
    out = capsys.readouterr().out
    counts = dict(line.strip().rsplit(":", 1) for line in out.splitlines()[1:5])
    assert int(counts[next(k for k in counts if k.startswith("real drivers"))]) > 0
    assert "not measured" not in out
