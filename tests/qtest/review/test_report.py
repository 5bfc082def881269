"""The report's first lines: the real problem and the intended change, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from harness.profile import BuildProfile
from harness.qemu.builds import QemuBuild
from harness.review import classify as C
from harness.review import props, report
from harness.review.direct import DIFFERS, SAME, DirectResult
from harness.review.run import Review
from harness.review.speed import Comparison

MACHINES = ("pc-q35-10.2", "pc-q35-11.0", "pc-q35-11.1")


def build(name: str) -> QemuBuild:
    profile = BuildProfile(version=(11, 1, 1), machine_types=MACHINES,
                           sd_card_properties={}, sdhci_properties={}, has_qtest_accel=True)
    return QemuBuild(name, Path(f"/nonexistent/{name}"), profile, has_sdhci_pci=True)


def bug_row() -> C.ReviewRow:
    d = DirectResult("erase-ranges-sdhc-4g", "q35", DIFFERS,
                     "first difference in erase-ranges-sdhc-4g at step 699: read BDATA -> 0x0 "
                     "(base 0xffffffff)", ["command in progress: CMD18 READ_MULTIPLE_BLOCK"])
    return C.classify_one("erase-ranges-sdhc-4g@q35", C.ModelEvidence("agree"),
                          C.ModelEvidence("diverge", "x"), d)


def review(compat: bool) -> Review:
    rv = Review(build("base"), build("patched"), title="demo")
    rows = [bug_row(),
            C.classify_one("card-registers@q35", C.ModelEvidence("agree"), C.ModelEvidence("agree"),
                           DirectResult("card-registers", "q35", DIFFERS, "SCR"),
                           "sd-card scr-cmd23=on (new default)"),
            C.classify_one("reset-values@q35", C.ModelEvidence("agree"), C.ModelEvidence("agree"),
                           DirectResult("reset-values", "q35", SAME)),
            C.classify_one("adma1@q35", C.ModelEvidence("diverge"), C.ModelEvidence("diverge"),
                           DirectResult("adma1", "q35", SAME))]
    rows[0].patch, rows[1].patch = "[3/3] erase", "[2/3] scr"
    rv.rows = rows
    realised = {m: ("off" if compat and m != MACHINES[-1] else "on") for m in MACHINES}
    rv.props = [props.PropChange("sd-card", "scr-cmd23", props.ADDED, None, "on", False, {},
                                 realised, "off", ["card-registers@q35"], "[2/3] scr")]
    rv.speed = [Comparison("read adma2 128 KiB", "MiB/s", True, [100, 104, 98], [99, 103, 101])]
    return rv


def test_first_lines_name_the_bug_then_the_intended_change_and_no_other_problem() -> None:
    text = report.render(review(compat=True))
    lines = text.splitlines()
    assert lines[2].startswith("== Findings: 1 problem, 1 other change")
    assert lines[3].startswith("1. PROBLEM: changed behaviour in 1 scenario run (")
    assert "[3/3] erase" in lines[3] and "CMD18" in lines[3]
    assert lines[4].startswith("2. change: new property sd-card scr-cmd23, default on")
    assert "compat entry" in lines[4] and "[2/3] scr" in lines[4]
    assert text.count("PROBLEM") == 1  # within-noise speed, both-diverge: not problems


def test_a_new_default_without_a_compat_entry_is_a_problem() -> None:
    fs = report.findings(review(compat=False))
    assert [f.problem for f in fs] == [True, True]
    assert "NO COMPAT ENTRY: pc-q35-10.2..pc-q35-11.0 (2 machine types) realise on" in fs[1].text


def test_a_guest_integrity_check_only_patched_fails_is_a_problem() -> None:
    rv = review(compat=True)
    rv.speed.append(Comparison("guest end-to-end integrity check=pattern present", "", True,
                               base_status=["yes"], patched_status=["NO"]))
    rv.speed.append(Comparison("guest end-to-end integrity check=guards intact", "", True,
                               base_status=["yes"], patched_status=["yes"]))
    fs = report.findings(rv)
    assert [f.problem for f in fs] == [True, True, False]  # problems first
    assert fs[1].text == ("guest benchmark: guest end-to-end integrity check=pattern present: "
                          "base yes, patched NO")


def test_markdown_and_json(tmp_path: Path) -> None:
    txt, md, js = report.write(review(compat=True), tmp_path)
    assert md.read_text().startswith("### sdqtest review: demo")
    assert "**Findings: 1 problem" in md.read_text()
    doc = json.loads(js.read_text())
    assert doc["counts"][C.CHANGED] == 1 and doc["counts"][C.BOTH] == 1
    assert doc["findings"][0]["problem"] is True


def test_tap_has_a_point_per_finding_not_ok_for_a_problem() -> None:
    """``review --tap``: the summary's findings as TAP points, as the exit
    status counts them; a review with none is one ok point."""
    from harness.check import tap
    from harness.commands.review import tap_points
    from tests.qtest.core.test_tap import consume

    s = consume("\n".join(tap.stream(tap_points(review(compat=True)))))
    assert [p.ok for p in s.points] == [False, True]
    assert "changed behaviour" in s.points[0].description and s.points[0].yaml
    assert "scr-cmd23" in s.points[1].description
    quiet = Review(build("base"), build("patched"), title="none")
    (only,) = consume("\n".join(tap.stream(tap_points(quiet)))).points
    assert only.ok and only.description.startswith("no behaviour change: 0 scenario runs")
