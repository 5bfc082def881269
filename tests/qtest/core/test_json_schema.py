"""The check's JSON report against its published schema
(``harness/schemas/check.schema.json``, read as package data), from a real
check: ``--json -`` on standard output, the report on standard error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.check import report, runner
from harness.qemu.builds import QemuBuild
from tests.qtest.core import schema_subset

ROOT = Path(__file__).resolve().parents[3]


schema = schema_subset.check_schema
validate = schema_subset.validate_check


def test_the_schema_uses_only_the_keywords_the_validator_checks() -> None:
    used = schema_subset.keywords(schema())
    assert used <= schema_subset.CHECKED | schema_subset.ANNOTATIONS, used
    assert schema()["properties"]["schema_version"] == {"const": report.SCHEMA_VERSION}


def test_the_validator_catches_a_broken_report() -> None:
    """The schema says something: a result without its status, a summary
    with a string count and an unknown verdict all fail it."""
    r = runner.Result("11.1", "s", "card", "q35", runner.AGREE)
    doc = report.to_json([r], [], {"exit_status": 0, "verdict": "clean", "why": [],
                                   "planned_runs": 1, "complete": True,
                                   "elapsed_seconds": 0.1, "cannot_run_on_build": [],
                                   "notes": []})
    validate(doc)
    del doc["results"][0]["status"]
    doc["summary"]["runs"] = "1"
    doc["summary"]["verdict"] = "fine"
    got = list(schema_subset.errors(doc, schema()))
    assert "$.results[0]: no 'status'" in got and "$.summary.runs: str, not integer" in got
    assert any(e.startswith("$.summary.verdict: 'fine' not one of") for e in got)


@pytest.mark.qemu
def test_check_json_on_stdout_validates(qemu_build: QemuBuild, tmp_path: Path) -> None:
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.pop("QTEST_QEMU_BINARY", None)
    p = subprocess.run([sys.executable, "-m", "harness.cli", "check", "--qemu",
                        str(qemu_build.binary), "--group", "card", "--json", "-",
                        "--report-dir", str(tmp_path)], capture_output=True, text=True,
                       timeout=300, env=e, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # nothing but the JSON on stdout
    validate(doc)
    s = doc["summary"]
    assert s["verdict"] == "clean" and s["complete"] and s["runs"] == len(doc["results"])
    assert "agreed, 0 unexplained" in p.stderr  # the report went to stderr
    assert not (tmp_path / "-").exists()
