"""What a bisect step checks on a built binary: a check scenario or a
finding (in-process, through the check session), a benchmark figure
(in-process, :mod:`harness.bench.metrics`) or a pytest node id (in a pytest
subprocess: a crashing test then ends the check, never the bisect).
Each check maps its outcome to ``git bisect run``'s codes: 0 good, 1 bad,
125 skip (cannot tell on this build), 128 abort (the check itself is broken).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from harness.bisect import ABORT, BAD, GOOD, SKIP
from harness.check import report, runner, session, verdict
from harness.check.runner import Result
from harness.errors import QemuError, SdqtestError
from harness.provision import proc


def _project_root() -> Path:
    """The checkout ``harness`` was imported from (its ``tests/qtest`` and
    settings apply), or the current directory when sdqtest is installed."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "tests" / "qtest").is_dir():
        return root
    return Path.cwd()


#: Where the checks run from: the checkout, or the current directory.
PROJECT_ROOT = _project_root()


@dataclass
class CheckResult:
    """A check's verdict: ``code`` for git, one ``summary`` line, ``detail`` lines."""

    code: int
    summary: str
    detail: list[str] = field(default_factory=list)
    figure: float | None = None


class Check(Protocol):
    """A check on one binary."""

    def describe(self) -> str:
        """One line for the progress display, e.g. ``scenario card-registers``."""
        ...

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        """Run against ``binary``; output goes to ``log``."""
        ...


def _env(binary: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["QTEST_QEMU_BINARY"] = str(binary)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
    )
    for var in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                "PYTEST_CURRENT_TEST"):
        env.pop(var, None)
    return env


def _timed_out(timeout: float) -> CheckResult:
    return CheckResult(SKIP, f"check timed out after {timeout:g} s (skipped)")


# -- scenario -----------------------------------------------------------------------------


@dataclass
class ScenarioCheck:
    """One check scenario on the binary, in-process (:mod:`harness.check.session`):
    good when model and QEMU agree, bad on a divergence (or a crash), skip
    when the build cannot run it.  QEMU is bounded by the check's own
    per-command timeouts (a hung QEMU is stopped and counts as a crash)."""

    scenario: str
    machine: str | None = None
    crash_is_skip: bool = False
    #: the check session; tests put a fake here
    check: Callable[[session.CheckRequest], session.CheckOutcome] = session.run

    def describe(self) -> str:
        return f"scenario {self.scenario}" + (f" on {self.machine}" if self.machine else "")

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        out = _checked(self.check, log, self.crash_is_skip, qemu=(str(binary),),
                       scenarios=(self.scenario,),
                       machines=(self.machine,) if self.machine else None)
        if isinstance(out, CheckResult):
            return out
        bad = [r for r in out.results if r.status not in (runner.AGREE, runner.QUIRK,
                                                          runner.SKIP)]
        first = _one_line(bad[0]) if bad else ""
        status = out.verdict.status
        if status == verdict.INTERNAL:  # a bug of sdqtest says nothing of the commit
            return CheckResult(ABORT, "internal error of sdqtest: "
                               + "; ".join(out.verdict.why), detail=divergence_lines(bad))
        if status == verdict.CLEAN:
            return CheckResult(GOOD, "model and QEMU agree")
        if status == verdict.FAILED:
            return CheckResult(BAD, first or "diverges", detail=divergence_lines(bad))
        if status == verdict.CRASHED:
            return _crashed(self.crash_is_skip, first, divergence_lines(bad))
        skipped = [r for r in out.results if r.status == runner.SKIP]
        return CheckResult(SKIP, "scenario skipped on this build: "
                           + (_one_line(skipped[0]) if skipped else "missing capability"))


def _crashed(crash_is_skip: bool, why: str, detail: list[str]) -> CheckResult:
    """QEMU crashed or could not start: bad, or skip (``--crash-is-skip``)."""
    return CheckResult(SKIP if crash_is_skip else BAD,
                       f"QEMU crashed or failed to start: {why}", detail=detail)


def _checked(check: Callable[[session.CheckRequest], session.CheckOutcome], log: IO[str],
             crash_is_skip: bool, **request: Any) -> session.CheckOutcome | CheckResult:
    """The check session on one build, in-process, its report in ``log``
    and its reproducers beside it; the step's result where it could not run."""
    with tempfile.TemporaryDirectory(prefix="sdqtest-bisect-") as tmp:
        rq = session.CheckRequest(jobs=1, report_dir=_reports_dir(log, tmp), **request)
        try:
            out = check(rq)
        except QemuError as e:
            return _crashed(crash_is_skip, str(e), [])
        except SdqtestError as e:
            return CheckResult(ABORT, f"the check could not run: {e}")
    text = io.StringIO()
    report.print_report(out.results, text)
    log.write(text.getvalue())
    return out


@dataclass
class FindingCheck:
    """One finding, by its signature (:mod:`harness.check.scoreboard`): bad
    when any run of the check shows it, first or after other differences
    (each run goes on past them), good when none does; a QEMU crash as in
    :class:`ScenarioCheck`.  ``signature``: the whole signature, or its
    leading parts (``result:RSPREG1.RSP``)."""

    signature: str
    scenarios: tuple[str, ...] = ()
    machine: str | None = None
    crash_is_skip: bool = False
    check: Callable[[session.CheckRequest], session.CheckOutcome] = session.run

    def describe(self) -> str:
        where = f" in {', '.join(self.scenarios)}" if self.scenarios else ""
        return f"finding {self.signature!r}{where}"

    def matches(self, sig: str) -> bool:
        want = self.signature.strip()
        return sig == want or sig.startswith(want + " |")

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        out = _checked(self.check, log, self.crash_is_skip, qemu=(str(binary),),
                       scenarios=self.scenarios or None, no_boards=True,
                       machines=(self.machine,) if self.machine else None)
        if isinstance(out, CheckResult):
            return out
        hits = [(r, d) for r in out.results for d in r.differences if self.matches(d.signature)]
        if hits:
            r, d = hits[0]
            where = "the first difference" if d.first else "after earlier differences"
            return CheckResult(BAD, f"[{r.build} {r.machine}] {r.scenario}: {d.signature} "
                               f"at step {d.divergence.step.index} ({where})",
                               detail=[f"{len(hits)} run"
                                       f"{'s show' if len(hits) != 1 else ' shows'} it"]
                               + ([f"reproducer: {d.divergence.trace_file}"]
                                  if d.divergence.trace_file else []))
        crashed = [r for r in out.results if r.status == runner.CRASH]
        if crashed:
            return _crashed(self.crash_is_skip, _one_line(crashed[0]),
                            divergence_lines(crashed))
        return CheckResult(GOOD, f"no run shows {self.signature!r}")


def _reports_dir(log: IO[str], fallback: str) -> Path:
    """Reproducers go beside the step's log (``step-03-...-reports/``)."""
    name = getattr(log, "name", None)
    if isinstance(name, str) and name.endswith(".log"):
        return Path(name[: -len(".log")] + "-reports")
    return Path(fallback) / "reports"


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _one_line(r: Result) -> str:
    """``[build machine] reason``, the reason's first line."""
    reason = r.reason.strip().splitlines()[0] if r.reason.strip() else r.status
    return f"[{r.build} {r.machine}] {reason}"


def divergence_lines(bad: Sequence[Result], limit: int = 5) -> list[str]:
    """The failing results, one line each, with the first one's fields and
    where its reproducer is."""
    lines = [_one_line(r) for r in bad[:limit]]
    d = bad[0].divergence if bad else None
    if d is not None:
        lines[1:1] = ["  " + str(f) for f in d.fields] + (
            [f"  reproducer: {d.trace_file}"] if d.trace_file else [])
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more")
    return lines


# -- pytest ------------------------------------------------------------------------------


@dataclass
class PytestCheck:
    """``pytest NODEID`` with ``QTEST_QEMU_BINARY`` set: 0 pass, 1 fail, 5 or all skipped."""

    nodeid: str
    machine: str | None = None
    #: more pytest arguments (``--pytest-args``), e.g. ``-k spec`` or ``-p no:hypothesispytest``
    extra_args: Sequence[str] = ()

    def describe(self) -> str:
        return f"pytest {self.nodeid}"

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        with tempfile.TemporaryDirectory(prefix="sdqtest-bisect-") as tmp:
            junit = Path(tmp) / "junit.xml"
            cmd = [sys.executable, "-m", "pytest", self.nodeid, "-q", "-p", "no:cacheprovider",
                   "-p", "harness.pytest_plugin",
                   f"--junitxml={junit}", "-o", "junit_family=xunit2"]
            if self.machine:
                cmd += ["--sdq-machine", self.machine]
            cmd += list(self.extra_args)
            ran = proc.run(cmd, log=log, timeout=timeout, cwd=PROJECT_ROOT, env=_env(binary))
            counts, failures = _junit(junit)
        if ran.returncode is None:
            return _timed_out(timeout)
        rc = ran.returncode
        tests, skipped = counts
        if rc == 0:
            if tests and skipped >= tests:
                return CheckResult(SKIP, f"all {tests} tests skipped on this build")
            return CheckResult(GOOD, f"{tests - skipped} passed"
                               + (f", {skipped} skipped" if skipped else ""))
        if rc == 1:
            return CheckResult(BAD, f"{len(failures) or 'some'} failed: "
                               + (failures[0] if failures else "see the log"),
                               detail=failures[:5])
        if rc == 5:
            return CheckResult(SKIP, "no tests collected (skipped)")
        return CheckResult(ABORT, f"pytest exited with status {rc} "
                           "(interrupted, internal or usage error; see the log)")


def _junit(path: Path) -> tuple[tuple[int, int], list[str]]:
    """((tests, skipped), failure lines) from a junit XML file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return (0, 0), []
    tests = skipped = 0
    failures: list[str] = []
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for s in suites:
        tests += int(s.get("tests", "0"))
        skipped += int(s.get("skipped", "0"))
        for case in s.iter("testcase"):
            for tag in ("failure", "error"):
                el = case.find(tag)
                if el is not None:
                    msg = (el.get("message") or "").strip().splitlines()
                    failures.append(f"{case.get('name')}: {msg[0] if msg else tag}")
    return (tests, skipped), failures


# -- benchmark figure ------------------------------------------------------------------


@dataclass
class BenchCheck:
    """A figure from :mod:`harness.bench.metrics` against a threshold."""

    metric: str
    threshold: float
    higher_is_better: bool | None = None

    def _higher(self) -> bool:
        if self.higher_is_better is not None:
            return self.higher_is_better
        from harness.bench.metrics import METRICS

        return METRICS[self.metric].higher_is_better

    def describe(self) -> str:
        op = ">=" if self._higher() else "<="
        return f"bench {self.metric} {op} {self.threshold:g}"

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        """The figure, measured in-process (:data:`harness.bench.metrics.METRICS`;
        QEMU bounded by its own qtest timeouts): a build it cannot be
        measured on is skipped, a bug of sdqtest aborts."""
        from harness.bench.metrics import METRICS

        metric = METRICS[self.metric]
        try:
            value = float(metric.measure(binary))
        except (QemuError, OSError) as e:
            log.write(f"could not measure {self.metric}: {type(e).__name__}: {e}\n")
            return CheckResult(SKIP, f"could not measure {self.metric} on this build "
                               f"({type(e).__name__}: {e})")
        except Exception as e:  # noqa: BLE001 - a bug of sdqtest says nothing of the commit
            return CheckResult(ABORT, f"internal error of sdqtest measuring {self.metric}: "
                               f"{type(e).__name__}: {e}")
        unit = metric.unit
        log.write(f"{metric.name} = {value:,.2f} {unit}\n")
        higher = self._higher()
        ok = value >= self.threshold if higher else value <= self.threshold
        op = (">=" if ok else "<") if higher else ("<=" if ok else ">")
        text = f"{self.metric} = {value:,.2f} {unit} ({op} threshold {self.threshold:g})"
        return CheckResult(GOOD if ok else BAD, text, figure=value)
