"""``check --tap``: a TAP 14 stream that a TAP consumer and ``meson test``
(``protocol: 'tap'``, as QEMU registers its qtests) accept.

The consumer here is written from the TAP 14 specification
(testanything.org), not from :mod:`harness.check.tap`: every line must be
the version (first), the plan, a test point, a YAML block line, a
``Bail out!`` or a comment; the plan's count equals the points, numbered
1..N in order; a diverging run is ``not ok`` with a YAML block naming the
step and the reproducer."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.check import runner, tap
from harness.check.lockstep import Divergence
from harness.check.step import Step
from harness.ledger import LEDGER
from harness.qemu import builds

ROOT = Path(__file__).resolve().parents[3]

_VERSION = re.compile(r"TAP version (13|14)$")
_PLAN = re.compile(r"1\.\.(\d+)$")
_POINT = re.compile(r"(not ok|ok)\b(?: (\d+))?(?: -)?([^#]*)(?:# (SKIP|TODO)\S*(?: (.*))?)?$")
_YAML_START, _YAML_END = "  ---", "  ..."


@dataclass
class Point:
    ok: bool
    number: int
    description: str
    directive: str = ""
    reason: str = ""
    yaml: list[str] = field(default_factory=list)


@dataclass
class Stream:
    plan: int
    points: list[Point]
    bailed: str = ""


def consume(text: str) -> Stream:
    """Parse ``text`` as a TAP 14 stream; any line the grammar refuses fails."""
    lines = text.splitlines()
    assert lines and _VERSION.match(lines[0]), f"no version line first: {lines[:1]}"
    plan, points, bailed = -1, [], ""
    in_yaml = False
    for i, line in enumerate(lines[1:], 2):
        if in_yaml:
            if line == _YAML_END:
                in_yaml = False
            else:
                assert line.startswith("  "), f"line {i}: YAML line not indented: {line!r}"
                points[-1].yaml.append(line[2:])
            continue
        if line == _YAML_START and points and not points[-1].yaml:
            in_yaml = True
        elif m := _PLAN.match(line):
            assert plan < 0, f"line {i}: a second plan"
            plan = int(m[1])
        elif m := _POINT.match(line):
            assert not bailed, f"line {i}: a point after Bail out!"
            points.append(Point(m[1] == "ok", int(m[2]), m[3].strip(), m[4] or "", m[5] or ""))
        elif line.startswith("Bail out!"):
            bailed = line
        else:
            assert line.startswith("#") or not line.strip(), f"line {i}: not TAP: {line!r}"
    assert not in_yaml, "a YAML block is not closed"
    assert plan >= 0, "no plan"
    if not bailed:
        assert plan == len(points), f"plan 1..{plan}, {len(points)} points"
    assert [p.number for p in points] == list(range(1, len(points) + 1))
    return Stream(plan, points, bailed)


def _divergence(trace: str) -> Divergence:
    step = Step(7, "read", (0x30, 2), 0x1, 0x8001, False, True)
    return Divergence(step, "result", [step], ["NORINTSTS: model 0x1, QEMU 0x8001"],
                      "pio-read-1", trace, ["command in progress: CMD17"], "NORINTSTS | CMD17")


def _results(trace: str) -> list[runner.Result]:
    quirky = runner.Result("11.1", "quirky", "data", "pc", runner.QUIRK)
    quirky.use(next(iter(LEDGER.values()))).applied.append(3)
    return [
        runner.Result("11.1", "card-init", "card", "q35", runner.AGREE, steps=40),
        runner.Result("11.1", "pio-read-1", "data", "q35", runner.DIVERGE,
                      "divergence at step 7", divergence=_divergence(trace), steps=7),
        quirky,
        runner.Result("7.2", "needs-clock", "card", "q35", runner.SKIP,
                      "needs virtual time (qtest accelerator), which this build lacks"),
        runner.Result("11.1-arm", "pl181 # 2", "mmci", "virt", runner.CANNOT_RUN,
                      "cannot run on this build: machine type 'x' not found"),
        runner.Result("11.1", "crashes", "data", "q35", runner.CRASH, "QEMU killed by SIGABRT"),
    ]


def _yaml(point: Point) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    doc: dict[str, Any] = yaml.safe_load("\n".join(point.yaml))
    return doc


def test_every_line_is_tap_and_each_status_maps() -> None:
    s = consume("\n".join(tap.lines(_results("reports/pio-read-1.qtest"))) + "\n")
    assert s.plan == 6 and not s.bailed
    agree, diverge, quirk, skip, cannot, crash = s.points
    assert agree.ok and not agree.directive and not agree.yaml
    assert agree.description == "card-init [q35] 11.1"
    assert not diverge.ok and not diverge.directive
    y = _yaml(diverge)
    assert y["severity"] == "fail" and y["data"]["step"] == 7
    assert y["data"]["reproducer"] == "reports/pio-read-1.qtest"
    assert "NORINTSTS" in y["data"]["operation"] and y["data"]["status"] == "diverge"
    assert not quirk.ok and quirk.directive == "TODO" and next(iter(LEDGER)) in quirk.reason
    assert skip.ok and skip.directive == "SKIP" and "virtual time" in skip.reason
    assert cannot.ok and cannot.directive == "SKIP" and cannot.description.startswith("pl181 %23 2")
    assert not crash.ok and _yaml(crash)["message"] == "QEMU killed by SIGABRT"


def test_a_stopped_check_bails_out() -> None:
    s = consume("\n".join(tap.lines(_results("")[:2], aborted="Traceback\nKeyError: 'x'")))
    assert s.bailed.startswith("Bail out!") and "KeyError" in s.bailed
    assert "reproducer" not in _yaml(s.points[1])["data"]


def test_no_runs_is_an_empty_plan() -> None:
    assert consume("\n".join(tap.lines([]))).plan == 0


def _meson() -> str:
    found = shutil.which("meson") or shutil.which("meson", path=str(Path(sys.executable).parent))
    if not found:
        pytest.skip("meson is not installed (pip install meson)")
    return found


def _meson_test(tmp: Path, command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``meson test`` of a project whose one test runs ``command``, ``protocol: 'tap'``."""
    src = tmp / "src"
    src.mkdir(parents=True)
    (src / "meson.build").write_text(textwrap.dedent(f"""\
        project('sdqtest-tap', meson_version: '>=0.59')
        test('sdqtest-check', find_program('{command[0]}'), args: {command[1:]!r},
             protocol: 'tap', timeout: {int(timeout)}, workdir: '{tmp}')
        """))
    meson = _meson()
    subprocess.run([meson, "setup", str(tmp / "build"), str(src)], check=True,
                   capture_output=True, text=True, timeout=120)
    return subprocess.run([meson, "test", "-C", str(tmp / "build"), "--print-errorlogs"],
                          capture_output=True, text=True, timeout=timeout + 60)


def test_meson_reads_the_stream(tmp_path: Path) -> None:
    """meson's own TAP parser: the diverging run fails the test, the TODO and
    SKIP points do not, and nothing is reported as a parse error."""
    results = tmp_path / "emit.py"
    results.write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_tap import _results
        from harness.check import tap
        only = sys.argv[1]
        rs = [r for r in _results("r.qtest") if only == "all" or r.status != "{runner.DIVERGE}"
              and r.status != "{runner.CRASH}"]
        tap.write(rs, "-", sys.stdout)
        """))
    r = _meson_test(tmp_path / "bad", [sys.executable, str(results), "all"], 60)
    assert r.returncode != 0
    assert "TAP parsing error" not in r.stdout + r.stderr
    assert re.search(r"Fail:\s+1", r.stdout), r.stdout
    good = _meson_test(tmp_path / "good", [sys.executable, str(results), "known"], 60)
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"Ok:\s+1", good.stdout) and "TAP parsing error" not in good.stdout


@pytest.mark.slow
@pytest.mark.qemu
def test_meson_runs_the_check(tmp_path: Path) -> None:
    """The check itself as a meson test, as a QEMU tree would register it."""
    if "11.1" not in builds.installed():
        pytest.skip("QEMU 11.1 is not installed (sdqtest qemu install)")
    sdqtest = Path(sys.executable).parent / "sdqtest"
    r = _meson_test(tmp_path, [str(sdqtest), "check", "--qemu", "11.1", "--group", "card",
                               "-j", "1", "--no-boards", "--report-dir",
                               str(tmp_path / "reports"), "--tap"], 900)
    log = (tmp_path / "build" / "meson-logs" / "testlog.txt").read_text()
    assert "TAP parsing error" not in log, log[-3000:]
    assert "scenario runs in" in log and "QEMU launched" not in log  # counters: --verbose
    assert r.returncode == 0, r.stdout + log[-3000:]
    assert re.search(r"Ok:\s+1", r.stdout), r.stdout


@pytest.mark.parametrize("argv, words", [
    (["--json", "-", "--tap", "-"], "only one of them"),
    (["--tap", "/nonexistent/dir/t.tap"], "--tap /nonexistent/dir/t.tap: directory"),
    (["--strict", "--tap"], "--tap"),
])
def test_tap_usage_errors_before_the_run(argv: list[str], words: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A TAP output that cannot be given is refused, exit 2, nothing run."""
    from harness.commands import check, common

    args = common.parse_one(check.register, ["check", "--qemu", "/nonexistent/qemu", *argv])
    assert common.call(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_replay_points_follow_its_exit_status() -> None:
    """``replay --tap``: clean ok, refused a SKIP, a crash or a model
    difference not ok with QEMU's outcome and the model's reads."""
    from harness.replay import engine
    from harness.replay.run import tap_point

    trace = Path("cve-x.sh")
    crash = engine.ReplayResult(lines=3, answered=2, crashed=True, signal=6,
                                verdict=engine.CRASHED, stderr="a\nAssertion `len' failed.\n")
    diff = engine.ReplayResult(lines=3, answered=3, model_diffs=["read 0x30: QEMU 1, model 0"])
    refused = engine.ReplayResult(verdict=engine.REFUSED, refusal="no machine x")
    points = [tap_point(trace, "7.2", engine.ReplayResult(lines=3, answered=3), "ok"),
              tap_point(trace, "7.2", refused, "refused"),
              tap_point(trace, "11.1", crash, "finding"),
              tap_point(trace, "11.1", diff, "diff")]
    s = consume("\n".join(tap.stream(points)))
    clean, skip, crashed, differs = s.points
    assert clean.ok and clean.description == "cve-x 7.2"
    assert skip.ok and skip.directive == "SKIP" and "no machine x" in skip.reason
    assert not crashed.ok and _yaml(crashed)["data"]["verdict"] == "crash"
    assert "Assertion `len' failed." in _yaml(crashed)["data"]["stderr"]
    assert not differs.ok and _yaml(differs)["data"]["model"] == ["read 0x30: QEMU 1, model 0"]


def test_review_refuses_two_standard_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.commands import common, review

    args = common.parse_one(review.register, ["review", "--base", "/nonexistent/b",
                                              "--patched", "/nonexistent/p", "--json", "-",
                                              "--tap", "-"])
    assert common.call(args) == 2
    assert "only one of them" in capsys.readouterr().err
