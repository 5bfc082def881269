"""A failure of sdqtest itself never looks like QEMU's: exit status 70
(``EX_SOFTWARE``), one line on stderr naming a traceback file that holds
the traceback, and, for the check, the report and JSON of every run done
before the failure.

The failure is made on purpose in a subprocess of the real command line: a
small driver script patches one hook of the harness (the function that runs
one scenario, or a scenario's own body) to raise, then calls
:func:`harness.cli.main` as ``sdqtest`` does.  Nothing in the harness knows
about it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import EXIT_INTERNAL
from harness.qemu.builds import QemuBuild
from tests.qtest.core.schema_subset import validate_check

ROOT = Path(__file__).resolve().parents[3]

#: The driver: ``FAIL_AT`` (the Nth scenario run, counted in each process
#: that runs scenarios) raises there; ``FAIL_IN`` (a scenario name) makes
#: that scenario's body raise instead (a harness bug inside one run);
#: ``FAIL_SIDE`` the compat matrix (in its process beside the runs).
DRIVER = textwrap.dedent('''
    import os, sys
    from harness.check import parallel
    import harness.scenarios as scenarios

    at = int(os.environ.get("FAIL_AT", "0"))
    if at:
        real, n = parallel._run_one, [0]

        def run_one(r):
            n[0] += 1
            if n[0] == at:
                raise LookupError(f"planted failure in run {at}: {r.scenario.name}")
            return real(r)

        parallel._run_one = run_one
    name = os.environ.get("FAIL_IN")
    if name:
        sc = scenarios.all_scenarios()[name]

        def body(target, ctx):
            raise LookupError(f"planted failure in scenario {name}")

        object.__setattr__(sc, "fn", body)
    if os.environ.get("FAIL_SIDE"):
        from harness.check import compat_matrix

        def matrix(*args, **kw):
            raise LookupError("planted failure in the compat matrix")

        compat_matrix.check_verdicts = matrix
    from harness.cli import main
    sys.exit(main(sys.argv[1:]))
''')


def run_cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    e = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    e.pop("QTEST_QEMU_BINARY", None)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=300, env=e, cwd=tmp_path)


def internal_line(p: subprocess.CompletedProcess[str]) -> str:
    """The one line of stderr about the internal error (a CI log may also
    carry the progress line, ``sdqtest: [1/9] ...``)."""
    lines = [ln for ln in p.stderr.splitlines() if "internal error" in ln]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    return lines[0]


def traceback_file(line: str) -> Path:
    assert "; traceback in " in line, line
    path = Path(line.rsplit("; traceback in ", 1)[1])
    assert path.is_file(), line
    return path


CARD = ("--group", "card", "-j", "1")


@pytest.mark.qemu
def test_a_failure_mid_check_exits_70_and_keeps_the_runs_done(qemu_build: QemuBuild,
                                                              tmp_path: Path) -> None:
    reports, out = tmp_path / "reports", tmp_path / "out.json"
    p = run_cli(tmp_path, "check", "--qemu", str(qemu_build.binary), *CARD,
                "--json", str(out), "--report-dir", str(reports), FAIL_AT="4")
    assert p.returncode == EXIT_INTERNAL, p.stdout + p.stderr
    line = internal_line(p)
    assert line.startswith("sdqtest: internal error of sdqtest (a bug of sdqtest, not of QEMU):")
    assert "the check stopped after 3 of " in line and "LookupError: planted failure in run 4" \
        in line
    trace = traceback_file(line)
    assert trace.parent == reports
    text = trace.read_text()
    assert "Traceback (most recent call last)" in text and "in run_one" in text
    assert "LookupError: planted failure in run 4" in text
    data = json.loads(out.read_text())
    validate_check(data)
    s = data["summary"]
    assert (s["exit_status"], s["verdict"], s["complete"]) == (EXIT_INTERNAL, "internal-error",
                                                                False)
    assert len(data["results"]) == s["runs"] == 3 < s["planned_runs"]
    assert all(r["status"] in ("agree", "quirk", "skipped") and not r["internal_error"]
               for r in data["results"]), data["results"]
    assert "3 of " in p.stdout and "scenario runs done" in p.stdout  # the report, too


@pytest.mark.qemu
def test_a_failure_in_a_worker_is_the_same(qemu_build: QemuBuild, tmp_path: Path) -> None:
    """With two worker processes the exception crosses a process boundary:
    the traceback file still holds the worker's own traceback."""
    out = tmp_path / "out.json"
    p = run_cli(tmp_path, "check", "--qemu", str(qemu_build.binary), "--group", "card",
                "-j", "2", "--json", str(out), "--report-dir", str(tmp_path / "r"),
                FAIL_AT="3")
    assert p.returncode == EXIT_INTERNAL, p.stdout + p.stderr
    text = traceback_file(internal_line(p)).read_text()
    assert "in check worker" in text and "in run_one" in text
    data = json.loads(out.read_text())
    validate_check(data)
    assert not data["summary"]["complete"] and data["results"]
    assert len(data["results"]) < data["summary"]["planned_runs"]


@pytest.mark.qemu
def test_a_harness_bug_inside_a_run_exits_70_after_every_run(qemu_build: QemuBuild,
                                                             tmp_path: Path) -> None:
    """A scenario body that raises: the runner reports the run (status
    error, internal), every other run goes on, and the check exits 70, not
    1 (a divergence) nor 3 (QEMU)."""
    out = tmp_path / "out.json"
    p = run_cli(tmp_path, "check", "--qemu", str(qemu_build.binary), *CARD, "--json", str(out),
                "--junit", str(tmp_path / "j.xml"), "--report-dir", str(tmp_path / "r"),
                FAIL_IN="card-registers")
    assert p.returncode == EXIT_INTERNAL, p.stdout + p.stderr
    line = internal_line(p)
    assert "1 run ended on an internal error of sdqtest" in line and "card-registers" in line
    assert "planted failure in scenario card-registers" in traceback_file(line).read_text()
    data = json.loads(out.read_text())
    validate_check(data)
    assert data["summary"]["complete"] and data["summary"]["internal_errors"] == 1
    assert data["summary"]["runs"] == data["summary"]["planned_runs"]
    bad = [r for r in data["results"] if r["internal_error"]]
    assert [r["scenario"] for r in bad] == ["card-registers"] and bad[0]["status"] == "error"
    assert 'type="internal-error"' in (tmp_path / "j.xml").read_text()


@pytest.mark.qemu
def test_a_failure_beside_the_runs_keeps_every_run(qemu_build: QemuBuild,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    p = run_cli(tmp_path, "check", "--qemu", str(qemu_build.binary), "--group", "compat",
                "--json", str(out), "--report-dir", str(tmp_path / "r"), FAIL_SIDE="1")
    assert p.returncode == EXIT_INTERNAL, p.stdout + p.stderr
    line = internal_line(p)
    assert "LookupError: planted failure in the compat matrix" in line
    assert "in the process beside the check" in traceback_file(line).read_text()
    data = json.loads(out.read_text())
    validate_check(data)
    s = data["summary"]
    assert not s["complete"] and s["runs"] == s["planned_runs"] == len(data["results"]) > 0


def test_any_unexpected_exception_of_any_command_is_70(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    from harness import cli
    from harness.commands import qemu

    def fails(args: object) -> int:
        return [][1]  # type: ignore[no-any-return]  # the IndexError of a harness bug

    monkeypatch.setattr(qemu, "run_list", fails)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    assert cli.main(["qemu", "list"]) == EXIT_INTERNAL
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sdqtest: internal error of sdqtest"), err
    assert "IndexError: list index out of range at tests/qtest/core/test_internal_error.py:" \
        in err[0] and " fails;" in err[0]
    trace = traceback_file(err[0])
    assert trace.parent == tmp_path and "IndexError" in trace.read_text()


def test_bisect_run_aborts_git_bisect_on_an_internal_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``git bisect run`` takes 1-127 (but 125) as 'bad': a bug of sdqtest
    there exits 128, which stops the bisection."""
    from harness import cli
    from harness.commands import bisect

    def fails(args: object) -> int:
        raise AttributeError("planted")

    monkeypatch.setattr(bisect, "run_one_step", fails)
    p = cli.build_parser()
    args = p.parse_args(["bisect-run", "--binary", "/nonexistent", "--scenario", "x"])
    args.func = fails
    from harness.commands.common import call

    assert call(args) == 128
    assert "internal error of sdqtest" in capsys.readouterr().err


def test_a_usage_error_exits_2_before_anything_runs() -> None:
    p = subprocess.run([sys.executable, "-m", "harness.cli", "bench", "data", "--sizes", "abc"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 2, p.stderr
    assert "--sizes: 'abc': KiB numbers like 4,16,128" in p.stderr


@pytest.mark.parametrize("option,value,says", [
    ("--json", "/nonexistent/dir/x.json", "directory /nonexistent/dir does not exist"),
    ("--junit", "/nonexistent/dir/x.xml", "directory /nonexistent/dir does not exist"),
    ("--json", "/", "is a directory, not a file"),
    ("--report-dir", "/dev/null/reports", "/dev/null is not a directory"),
])
def test_an_output_that_cannot_be_written_is_refused_first(option: str, value: str,
                                                          says: str) -> None:
    """Refused in one line, status 2, before any build is probed: the
    ``--qemu`` given does not even exist."""
    p = subprocess.run([sys.executable, "-m", "harness.cli", "check", "--qemu",
                        "/nonexistent/qemu-system-x86_64", option, value],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [f"sdqtest: error: {option} {value}: {says}"]


def test_every_command_help_lists_its_exit_statuses() -> None:
    import argparse

    from harness import cli
    from harness.commands import failure

    def parsers(p: argparse.ArgumentParser, name: str) -> list[tuple[str, str]]:
        out = []
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sp in a.choices.items():
                    out.append((f"{name} {n}", sp.format_help()))
                    out += parsers(sp, f"{name} {n}")
        return out

    found = parsers(cli.build_parser(), "sdqtest")
    assert len(found) > 20
    for name, text in found:
        flat = " ".join(text.split())
        assert "exit status: 0" in flat or "exit: 0" in flat or "exit codes: 0" in flat, name
        if name == "sdqtest bisect-run":
            assert "internal error of sdqtest exits 128" in flat
        else:
            assert " ".join(failure.COMMON_EXITS.split()) in flat, name
