"""What a bisect step checks on a built binary, each run as a subprocess.

A crashing QEMU or a harness bug then ends the check, never the bisect.
Each check maps its outcome to ``git bisect run``'s codes: 0 good, 1 bad,
125 skip (cannot tell on this build), 128 abort (the check itself is broken).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from harness.bisect import ABORT, BAD, GOOD, SKIP
from harness.provision import proc

#: The project's root (where ``harness`` lives): the checks run from there.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


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
    """``sdqtest check --scenario NAME``: 0 agree, 1 divergence, 3 crash, 4 skipped."""

    scenario: str
    machine: str | None = None
    crash_is_skip: bool = False
    #: how to run ``sdqtest``; tests put a fake here
    cli: Sequence[str] = (sys.executable, "-m", "harness.cli")

    def describe(self) -> str:
        return f"scenario {self.scenario}" + (f" on {self.machine}" if self.machine else "")

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        with tempfile.TemporaryDirectory(prefix="sdqtest-bisect-") as tmp:
            report = Path(tmp) / "report.json"
            cmd = [*self.cli, "check", "--qemu", str(binary), "--scenario", self.scenario,
                   "--json", str(report), "--report-dir", str(_reports_dir(log, tmp))]
            if self.machine:
                cmd += ["--machine", self.machine]
            with tempfile.TemporaryFile("w+b") as out:
                ran = proc.run(cmd, log=log, timeout=timeout, cwd=PROJECT_ROOT,
                               env=_env(binary), stdout=out)
                out.seek(0)
                stdout = out.read().decode(errors="replace")
            log.write(stdout)
            data = _load_json(report)
        if ran.returncode is None:
            return _timed_out(timeout)
        rc = ran.returncode
        tail = [ln for ln in stdout.splitlines() if ln.strip()][-3:]
        first = first_divergence(data)
        if rc == 0:
            return CheckResult(GOOD, "model and QEMU agree")
        if rc == 1:
            return CheckResult(BAD, first or (tail[-1] if tail else "diverges"),
                               detail=divergence_lines(data) or tail)
        if rc == 3:
            code = SKIP if self.crash_is_skip else BAD
            return CheckResult(code, "QEMU crashed or failed to start: "
                               + (first or (tail[-1] if tail else "")), detail=tail)
        if rc == 4:
            return CheckResult(SKIP, "scenario skipped on this build: "
                               + (first or (tail[-1] if tail else "missing capability")),
                               detail=tail)
        return CheckResult(ABORT, f"sdqtest check exited with status {rc} "
                           "(usage or harness error, see the log)", detail=tail)


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


def _divergences(data: Any) -> list[Any]:
    """Divergence entries of a check report, wherever the report keeps them.

    ``sdqtest check --json`` writes ``{"results": [{"status", "reason",
    "divergence": {"operation", "fields", ...}}, ...]}``; results whose status
    is not a pass come first.  Other shapes (lists, ``divergences`` keys) are
    read too, so that a report format change degrades to less detail only.
    """
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return []
    results = data.get("results")
    if isinstance(results, list):
        bad = [r for r in results if isinstance(r, dict)
               and str(r.get("status", "")).lower() not in ("agree", "pass", "ok", "skip",
                                                           "skipped", "good")]
        if bad:
            return bad
    for key in ("divergences", "unexplained", "failures", "diffs"):
        v = data.get(key)
        if isinstance(v, list) and v:
            return v
    return []


def _one_line(entry: Any) -> str:
    if isinstance(entry, str):
        return entry.strip().splitlines()[0] if entry.strip() else ""
    if isinstance(entry, dict):
        for key in ("reason", "summary", "message", "text", "description", "what"):
            v = entry.get(key)
            if isinstance(v, str) and v.strip():
                where = [str(entry[k]) for k in ("build", "machine") if entry.get(k)]
                prefix = f"[{' '.join(where)}] " if where and key == "reason" else ""
                return prefix + v.strip().splitlines()[0]
        return json.dumps(entry, sort_keys=True)[:240]
    return str(entry)[:240]


def _fields(entry: Any) -> list[str]:
    """The register/field lines of one divergence, and where its reproducer is."""
    if not isinstance(entry, dict):
        return []
    d = entry.get("divergence")
    if not isinstance(d, dict):
        return []
    lines = [str(f) for f in d.get("fields") or []]
    if d.get("trace"):
        lines.append(f"reproducer: {d['trace']}")
    return lines


def first_divergence(data: Any) -> str:
    """The first divergence of a ``sdqtest check --json`` report, as one line."""
    found = _divergences(data)
    return _one_line(found[0]) if found else ""


def divergence_lines(data: Any, limit: int = 5) -> list[str]:
    """The divergences of a report, one line each, with the first one's fields."""
    found = _divergences(data)
    lines = [_one_line(d) for d in found[:limit]]
    if found:
        lines[1:1] = ["  " + f for f in _fields(found[0])]
    if len(found) > limit:
        lines.append(f"... and {len(found) - limit} more")
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
                   f"--junitxml={junit}", "-o", "junit_family=xunit2"]
            if self.machine:
                cmd += ["--machine", self.machine]
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
        with tempfile.TemporaryDirectory(prefix="sdqtest-bisect-") as tmp:
            out = Path(tmp) / "figure.json"
            cmd = [sys.executable, "-m", "harness.bench.metrics", self.metric,
                   "--qemu", str(binary), "--json", str(out)]
            ran = proc.run(cmd, log=log, timeout=timeout, cwd=PROJECT_ROOT, env=_env(binary))
            data = _load_json(out)
        if ran.returncode is None:
            return _timed_out(timeout)
        if ran.returncode != 0 or not isinstance(data, dict) or "value" not in data:
            return CheckResult(SKIP, f"could not measure {self.metric} on this build "
                               f"(status {ran.returncode}; see the log)")
        value = float(data["value"])
        unit = str(data.get("unit", ""))
        higher = self._higher()
        ok = value >= self.threshold if higher else value <= self.threshold
        op = (">=" if ok else "<") if higher else ("<=" if ok else ">")
        text = f"{self.metric} = {value:,.2f} {unit} ({op} threshold {self.threshold:g})"
        return CheckResult(GOOD if ok else BAD, text, figure=value)
