"""Every command's JSON against its published schema
(``harness/schemas/COMMAND.schema.json``, read as package data), from real
runs: ``--json -`` on standard output, the text on standard error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.check import report, runner
from harness.commands import common
from harness.qemu.builds import QemuBuild
from tests.qtest.core import schema_subset

ROOT = Path(__file__).resolve().parents[3]


schema = schema_subset.check_schema
validate = schema_subset.validate_check


@pytest.mark.parametrize("name", schema_subset.names())
def test_the_schema_uses_only_the_keywords_the_validator_checks(name: str) -> None:
    used = schema_subset.keywords(schema_subset.schema(name))
    assert used <= schema_subset.CHECKED | schema_subset.ANNOTATIONS, used
    version = report.SCHEMA_VERSION if name == "check" else common.SCHEMA_VERSION
    props = schema_subset.schema(name)["properties"]
    assert props["schema_version"] == {"const": version}
    assert props["command"] == {"const": name.replace("-", " ")}


def test_every_command_with_json_has_a_schema() -> None:
    import argparse

    from harness import cli

    with_json = []
    for a in cli.build_parser()._actions:
        if isinstance(a, argparse._SubParsersAction):
            for n, sp in a.choices.items():
                subs = [x for x in sp._actions if isinstance(x, argparse._SubParsersAction)]
                for m, ssp in (subs[0].choices.items() if subs else [("", sp)]):
                    if any("--json" in x.option_strings and x.metavar == "FILE|-"
                           for x in ssp._actions):
                        with_json.append(f"{n}-{m}" if m else n)
    assert sorted(with_json) == schema_subset.names()


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


def _json_of(*args: str, cwd: Path) -> tuple[dict[str, Any], str]:
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.pop("QTEST_QEMU_BINARY", None)
    p = subprocess.run([sys.executable, "-m", "harness.cli", *args, "--json", "-"],
                       capture_output=True, text=True, timeout=600, env=e, cwd=cwd)
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc, p.stderr


@pytest.mark.qemu
def test_every_command_json_validates(qemu_build: QemuBuild, tmp_path: Path) -> None:
    b = str(qemu_build.binary)
    q35 = qemu_build.versioned_machines("q35")[-1]
    runs = {"qemu-list": ["qemu", "list", "--qemu", b], "bugs": ["bugs", "--qemu", b],
            "compat": ["compat", "--qemu", b],
            "migrate": ["migrate", "--qemu", b, "--machine", q35, "--point", "idle",
                        "--report-dir", str(tmp_path / "r")],
            "review": ["review", "--base", b, "--patched", b, "--no-bench", "--group", "card",
                       "--report-dir", str(tmp_path / "rv")]}
    for name, argv in runs.items():
        doc, text = _json_of(*argv, cwd=tmp_path)
        schema_subset.validate(doc, name)
        assert text.strip(), name  # the table went to stderr
    assert json.loads((tmp_path / "rv" / "report.json").read_text()) == doc  # the same
    doc, _ = _json_of("bugs", cwd=tmp_path)
    schema_subset.validate(doc, "bugs")
    assert doc["summary"]["bugs"] == len(doc["bugs"]) > 0 and doc["verdicts"] == []
