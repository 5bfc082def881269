"""``check --junit``: one test case per run, failures and skips marked."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from harness.check import junit, runner


def test_junit_marks_each_status(tmp_path: Path) -> None:
    rs = [runner.Result("11.1", "a", "data", "q35", runner.AGREE, seconds=0.5),
          runner.Result("11.1", "b", "data", "q35", runner.DIVERGE, "step 3 differs"),
          runner.Result("7.2", "c", "card", "pc", runner.SKIP, "no qtest accel"),
          runner.Result("7.2", "d", "card", "q35", runner.CRASH, "QEMU killed by SIGABRT")]
    junit.write(rs, tmp_path / "j.xml")
    root = ET.parse(tmp_path / "j.xml").getroot()
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"sdqtest 11.1", "sdqtest 7.2"}
    assert suites["sdqtest 11.1"].get("failures") == "1"
    cases = {c.get("name"): c for s in root for c in s}
    assert cases["a[q35]"].get("classname") == "sdqtest.11.1.data" and len(cases["a[q35]"]) == 0
    assert cases["b[q35]"][0].tag == "failure" and "step 3" in (cases["b[q35]"][0].text or "")
    assert cases["c[pc]"][0].tag == "skipped"
    assert cases["d[q35]"][0].tag == "error"
