"""The bisect helper without QEMU: git plumbing, exit codes, skips, refusals, signals.

The repositories are made at run time (:mod:`harness.bisect.synthetic`); the
check here is an in-process fake that reads the built wrapper script, so
these tests take a few seconds.  ``test_bisect_qemu.py`` does the same with
real QEMU runs.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest

from harness.bisect import ABORT, BAD, GOOD, SKIP
from harness.bisect.checks import (
    CheckResult,
    FindingCheck,
    ScenarioCheck,
    divergence_lines,
)
from harness.bisect.driver import BisectError, _parse, bisect
from harness.bisect.progress import BisectProgress
from harness.bisect.synthetic import Commit, make_repo
from harness.check import runner
from harness.check.lockstep import Divergence
from harness.check.scoreboard import Difference
from harness.check.session import CheckRequest
from harness.check.step import Step
from harness.check.verdict import CLEAN, CRASHED, FAILED, INTERNAL, SKIPPED, Verdict
from harness.cli import main as bisect_main
from harness.errors import QemuError
from harness.provision.build import (
    Missing,
    QemuTreeBuilder,
    RecipeBuilder,
    configure_flags,
    format_missing,
    make_builder,
)
from tests.qtest.signals import inherit

ROOT = Path(__file__).resolve().parents[2]
FAKE_QEMU = Path("/bin/true")
MARK = "sd-card.spec_version=2"
#: pytest starts 3x faster without these plugins, which the nodes here do not use
FAST_PYTEST = "-p no:hypothesispytest -p no:benchmark -p no:xdist"


class MarkerCheck:
    """Bad when the built wrapper passes ``MARK``; counts its runs."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def describe(self) -> str:
        return "fake marker check"

    def run(self, binary: Path, log: IO[str], timeout: float) -> CheckResult:
        text = binary.read_text()
        self.runs.append(text)
        if MARK in text:
            return CheckResult(BAD, f"wrapper passes {MARK}", detail=["SCR differs"])
        return CheckResult(GOOD, "clean")


def _head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "symbolic-ref", "-q", "HEAD"],
                          capture_output=True, text=True, timeout=30).stdout.strip()


def _bisect_state(repo: Path) -> bool:
    return (repo / ".git" / "BISECT_START").exists()


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path / "cache"))


def _repo(tmp_path: Path, n: int, first_bad: int, broken: tuple[int, ...] = ()) -> list[str]:
    """Commit 0 is good; commits >= first_bad pass MARK; ``broken`` ones fail to build."""
    commits = [
        Commit(f"commit {i}", [MARK] if i >= first_bad else [],
               broken="missing header" if i in broken else "")
        for i in range(n + 1)
    ]
    return make_repo(tmp_path / "repo", FAKE_QEMU, commits)


@pytest.mark.parametrize("n,first_bad", [(16, 1), (16, 7), (16, 16), (9, 5), (1, 1)])
def test_finds_first_bad_within_log2_steps(tmp_path: Path, n: int, first_bad: int) -> None:
    shas = _repo(tmp_path, n, first_bad)
    repo = tmp_path / "repo"
    check = MarkerCheck()
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 check, progress=BisectProgress(live=False))
    assert res.code == 0, res.report()
    assert res.first_bad == shas[first_bad]
    assert res.subject == f"commit {first_bad}"
    assert len(res.steps) <= math.floor(math.log2(n)) + 1
    assert res.outcome is not None and "SCR differs" in res.outcome.detail
    # left as found: on its branch, no bisect state, nothing changed
    assert _head(repo) == "refs/heads/main" and not _bisect_state(repo)
    report = "\n".join(res.report())
    assert shas[first_bad] in report and f"commit {first_bad}" in report
    assert res.log_dir is not None and str(res.log_dir) in report
    logs = sorted(res.log_dir.glob("step-*.log"))
    assert len(logs) == len(res.steps)
    assert (res.log_dir / "summary.txt").is_file()
    assert "git bisect start" in (res.log_dir / "bisect-log.txt").read_text()


def test_build_failure_is_skipped(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 8, 6, broken=(3, 4))
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False))
    assert res.first_bad == shas[6]
    skipped = [s for s in res.steps if s.code == SKIP]
    for s in skipped:
        assert s.summary.startswith("build failed") and s.commit in (shas[3], shas[4])
        assert s.log is not None and "missing header" in s.log.read_text()


def test_only_skipped_left_names_candidates(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 4, 2, broken=(2,))
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False))
    assert res.code == 1 and res.first_bad is None
    assert shas[2] in res.candidates and shas[3] in res.candidates
    assert not _bisect_state(repo)


def test_bad_endpoint_that_tests_good(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 4, 99)
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False))
    assert res.code == 1
    assert f"--bad commit {shas[-1][:12]} itself tests good" in res.report()[0]


def test_dirty_tree_refused(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 4, 2)
    repo = tmp_path / "repo"
    (repo / "config.sh").write_text("# local edit\n")
    with pytest.raises(BisectError, match="uncommitted changes.*config.sh.*stash"):
        bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
               MarkerCheck(), progress=BisectProgress(live=False))
    assert (repo / "config.sh").read_text() == "# local edit\n"
    assert _head(repo) == "refs/heads/main" and not _bisect_state(repo)


def test_cli_refuses_dirty_tree_and_bad_refs(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    shas = _repo(tmp_path, 2, 1)
    repo = tmp_path / "repo"
    assert bisect_main(["bisect", "--qemu-src", str(repo), "--good", "nope",
                        "--pytest", "x.py"]) == 2
    assert "--good 'nope' is not a commit" in capsys.readouterr().err
    assert bisect_main(["bisect", "--qemu-src", str(repo), "--good", shas[-1], "--bad",
                        shas[0], "--pytest", "x.py"]) == 2
    assert "swapped" in capsys.readouterr().err
    (repo / "sdqtest-build").write_text("#!/bin/sh\nexit 1\n")
    assert bisect_main(["bisect", "--qemu-src", str(repo), "--good", shas[0],
                        "--pytest", "x.py"]) == 2
    assert "uncommitted changes (sdqtest-build)" in capsys.readouterr().err
    assert bisect_main(["bisect", "--qemu-src", str(repo), "--good", shas[0],
                        "--bench", "launch-ms"]) == 2
    assert "--bench needs --threshold" in capsys.readouterr().err


def test_build_that_writes_into_tree_aborts(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 4, 2)
    repo = tmp_path / "repo"
    builder = RecipeBuilder("./sdqtest-build && echo x >> config.sh && "
                            "echo $SDQTEST_BUILD_DIR/qemu-system-x86_64", tmp_path / "b")
    res = bisect(repo, shas[0], shas[-1], builder, MarkerCheck(),
                 progress=BisectProgress(live=False))
    assert res.code == 3 and "changed tracked files" in res.message
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], timeout=30)


def test_build_cmd_and_tree_recipe_are_both_first_class(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 4, 3)
    repo = tmp_path / "repo"
    (tmp_path / "mybuild").write_text(
        "#!/bin/sh\n. ./config.sh\nb=$SDQTEST_BUILD_DIR/custom\n"
        "printf '#!/bin/sh\\n# %s %s\\n' \"$GLOBALS\" \"$SDQTEST_COMMIT\" > $b\n"
        "chmod +x $b\necho custom\n")
    (tmp_path / "mybuild").chmod(0o755)
    builder = make_builder(repo, build_cmd=str(tmp_path / "mybuild"), binary=None,
                           build_dir=tmp_path / "bd")
    check = MarkerCheck()
    res = bisect(repo, shas[0], shas[-1], builder, check, progress=BisectProgress(live=False))
    assert res.first_bad == shas[3]
    assert (tmp_path / "bd" / "custom").is_file()
    assert all(s.commit in text for s, text in zip(res.steps, check.runs, strict=True))


def test_bisect_run_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``bisect-run`` does one step: 0/1/125 as git bisect run wants."""
    shas = _repo(tmp_path, 3, 2, broken=(1,))
    repo = tmp_path / "repo"
    fake = tmp_path / "test_fake.py"
    fake.write_text(
        "import os\n"
        f"def test_marker():\n    assert {MARK!r} not in "
        "open(os.environ['QTEST_QEMU_BINARY']).read()\n")
    skipped = tmp_path / "test_skipped.py"
    skipped.write_text("import pytest\n@pytest.mark.skip(reason='no')\ndef test_x(): pass\n")
    want = {0: GOOD, 1: SKIP, 2: BAD}
    for i, code in want.items():
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", shas[i]], timeout=30,
                       check=True)
        args = ["bisect-run", "--qemu-src", str(repo), "--pytest", str(fake),
                "--pytest-args", FAST_PYTEST]
        assert bisect_main(args) == code, capsys.readouterr()
        out = capsys.readouterr().out
        assert out.startswith(shas[i][:12]) and "log: " in out
    assert bisect_main(["bisect-run", "--qemu-src", str(repo), "--pytest", str(skipped),
                        "--pytest-args", FAST_PYTEST]) == SKIP
    assert "all 1 tests skipped" in capsys.readouterr().out


def _outcome(status: int, results: list[runner.Result]) -> Any:
    """A check outcome as :class:`ScenarioCheck` reads it: results and verdict."""
    return SimpleNamespace(results=results, verdict=Verdict(status))


def test_scenario_check_maps_verdicts(tmp_path: Path) -> None:
    """The check session's verdict becomes git bisect's code; a divergence's
    reason is the summary; a QEMU that cannot be run is a crash."""
    diverged = runner.Result("11.1", "card-registers", "registers", "q35", runner.DIVERGE,
                             reason="SCR[59:56] SD_SPEC: model 2, qemu 1")
    skipped = runner.Result("11.1", "card-registers", "registers", "q35", runner.SKIP,
                            reason="no sdhci-pci")
    asked: list[CheckRequest] = []
    binary = tmp_path / "qemu"
    for status, results, crash_skip, code in [
            (CLEAN, [], False, GOOD), (FAILED, [diverged], False, BAD),
            (CRASHED, [], False, BAD), (CRASHED, [], True, SKIP),
            (SKIPPED, [skipped], False, SKIP), (INTERNAL, [], False, ABORT)]:
        out = _outcome(status, results)

        def fake(rq: CheckRequest, out: Any = out) -> Any:
            asked.append(rq)
            return out

        c = ScenarioCheck("card-registers", crash_is_skip=crash_skip, check=fake)
        with open(tmp_path / "log", "w") as log:
            res = c.run(binary, log, timeout=30)
        assert res.code == code, (status, res)
        if status == FAILED:
            assert res.summary == "[11.1 q35] SCR[59:56] SD_SPEC: model 2, qemu 1"
        if status == SKIPPED:
            assert "no sdhci-pci" in res.summary
    assert {(rq.qemu, rq.scenarios) for rq in asked} == {((str(binary),), ("card-registers",))}

    def gone(rq: CheckRequest) -> Any:
        raise QemuError("qemu-system-x86_64 exited at start")

    with open(tmp_path / "log", "w") as log:
        res = ScenarioCheck("card-registers", check=gone).run(binary, log, timeout=30)
    assert res.code == BAD and "exited at start" in res.summary


def test_finding_check_is_bad_only_where_a_run_shows_that_signature(tmp_path: Path) -> None:
    """``bisect --finding SIG``: a commit is bad when any run shows the
    finding, even after another difference earlier in the same run; good
    when the runs show only other differences."""
    cid = "result:RSPREG1.RSP | CMD2 ALL_SEND_CID | ident"
    erase = "image | CMD38 ERASE | tran"

    def diverged(*sigs: str) -> runner.Result:
        r = runner.Result("11.1", "erase-range", "erase", "q35", runner.DIVERGE)
        for i, sig in enumerate(sigs):
            d = Divergence(Step(10 * (i + 1), "read", (0x14, 4), 1, 2, False, False), "result",
                           [], signature=sig)
            r.differences.append(Difference(d, sig, first=i == 0))
        return r

    asked: list[CheckRequest] = []
    for results, code in [([diverged(cid, erase)], BAD), ([diverged(cid)], GOOD),
                          ([], GOOD)]:
        outcome = _outcome(FAILED, results)

        def fake(rq: CheckRequest, out: Any = outcome) -> Any:
            asked.append(rq)
            return out

        with open(tmp_path / "log", "w") as log:
            res = FindingCheck(erase, ("erase-range",), check=fake).run(tmp_path / "q", log, 30)
        assert res.code == code, res
        if code == BAD:
            assert "after earlier differences" in res.summary and "step 20" in res.summary
    assert FindingCheck("image").matches(erase) and not FindingCheck("imag").matches(erase)
    assert all(rq.scenarios == ("erase-range",) and rq.max_differences > 1 for rq in asked)


def test_divergence_lines_name_the_first_ones_fields() -> None:
    step = Step(3, "read", (0x10, 4), 2, 1, False, False)
    d = Divergence(step, "result", [], ["SCR: model 2, QEMU 1"])
    d.trace_file = "/r/x.sh"
    bad = [runner.Result("11.1", "a", "registers", "pc", runner.DIVERGE,
                         reason="SCR differs\nmore", divergence=d),
           runner.Result("10.0", "b", "registers", "q35", runner.ERROR, reason="boom")]
    assert divergence_lines(bad) == ["[11.1 pc] SCR differs", "  SCR: model 2, QEMU 1",
                                     "  reproducer: /r/x.sh", "[10.0 q35] boom"]


def test_git_output_parsing() -> None:
    st = _parse("Bisecting: 7 revisions left to test after this (roughly 3 steps)\n[abc] x")
    assert (st.revisions, st.left, st.first_bad) == (7, 3, None)
    sha = "a" * 40
    assert _parse(f"{sha} is the first bad commit\ncommit {sha}\n").first_bad == sha
    st = _parse("There are only 'skip'ped commits left to test.\n"
                f"The first bad commit could be any of:\n{sha}\n{'b' * 40}\n"
                "We cannot bisect more!\n")
    assert st.candidates == [sha, "b" * 40]


HELP_10 = """
  --target-list=LIST       set target list
  --without-default-features default all --enable-* options to "disabled"
  --disable-docs
  --disable-download
  --disable-install-blobs
  --enable-werror / --disable-werror
  --disable-fdt
  --python=PYTHON
"""

HELP_5 = """
  --target-list=LIST       set target list
  --disable-docs           disable documentation build
  --disable-werror
  --meson=MESON
"""


HELP_MESON = """
  --without-default-features   default all --enable-* options to "disabled"
  --disable-install-blobs  install provided firmware blobs
  --enable-fdt[=CHOICE]    Whether and how to find the libfdt library

Optional features, enabled with --enable-FEATURE and
disabled with --disable-FEATURE, default is enabled if available
(unless built with --without-default-features):

  docs            Documentations build support
  guest-agent     Build QEMU Guest Agent
  werror          Treat warnings as errors
  user            supported user emulation targets
"""


def test_configure_flags_follow_help_text(tmp_path: Path) -> None:
    assert configure_flags(HELP_MESON, tmp_path) == [
        "--target-list=x86_64-softmmu", "--without-default-features", "--disable-docs",
        "--disable-werror", "--disable-fdt", "--disable-guest-agent", "--disable-user",
        "--disable-install-blobs"]
    f = configure_flags(HELP_10, tmp_path)
    assert f == ["--target-list=x86_64-softmmu", "--without-default-features",
                 "--disable-docs", "--disable-werror", "--disable-download", "--disable-fdt",
                 "--disable-install-blobs"]
    (tmp_path / "pc-bios").mkdir()
    (tmp_path / "pc-bios" / "bios-256k.bin").write_bytes(b"")
    assert "--disable-install-blobs" not in configure_flags(HELP_10, tmp_path)
    assert configure_flags(HELP_5, tmp_path) == [
        "--target-list=x86_64-softmmu", "--disable-docs", "--disable-werror"]
    assert "--without-default-devices" not in " ".join(configure_flags(HELP_10, tmp_path))


def test_prerequisites_name_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "qemu"
    src.mkdir()
    (src / "configure").write_text("#!/bin/sh\n")
    (src / "meson.build").write_text("project('qemu', meson_version: '>=1.5.0')\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "git").symlink_to("/usr/bin/git")
    monkeypatch.setenv("PATH", str(bindir))
    missing = QemuTreeBuilder(tmp_path / "build").prerequisites(src)
    text = format_missing(missing)
    for pkg in ("gcc", "ninja-build", "pkg-config", "make"):
        assert pkg in text
    assert "apt-get install -y --no-install-recommends" in text
    assert "bios-256k.bin" in text or Path("/usr/share/seabios/bios-256k.bin").exists()
    assert format_missing([Missing("x", "pkg-x")]).endswith("pkg-x")


def test_not_a_qemu_tree(tmp_path: Path) -> None:
    src = tmp_path / "t"
    src.mkdir()
    text = format_missing(QemuTreeBuilder(tmp_path / "b").prerequisites(src))
    assert "not a QEMU source tree" in text and "--build-cmd" in text


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN],
                         ids=["inherited-default", "inherited-ignored"])
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                      (signal.SIGHUP, 129)])
def test_interrupted_bisect_resets_tree(tmp_path: Path, sig: signal.Signals, code: int,
                                        inherited: signal.Handlers) -> None:
    """A signal in the middle of a build: the build is killed and the tree
    reset, whether the bisect inherited the signal at its default or ignored."""
    commits = [Commit(f"c{i}", [MARK] if i >= 3 else []) for i in range(6)]
    shas = make_repo(tmp_path / "repo", FAKE_QEMU, commits)
    repo = tmp_path / "repo"
    pidfile = tmp_path / "build.pid"
    build = f"echo $$ > {pidfile}; exec sleep 60"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-m", "harness", "bisect", "--qemu-src", str(repo),
         "--good", shas[0], "--bad", shas[-1], "--pytest", "x.py", "--build-cmd", build],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=inherit(inherited))
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline, "the build never started"
            assert p.poll() is None, p.communicate()[0]
            time.sleep(0.05)
        assert _bisect_state(repo)
        p.send_signal(sig)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert p.returncode == code, out
    assert "interrupted" in out
    assert _head(repo) == "refs/heads/main" and not _bisect_state(repo)
    pid = int(pidfile.read_text())
    assert _gone(pid, within=10.0), f"the build (pid {pid}) outlived the bisect"
    assert json.dumps(out)  # output is text


def _gone(pid: int, within: float) -> bool:
    """``pid`` has ended (or is a zombie waiting for its reaper) within ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        if state == "Z":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_verify_good(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 8, 0)  # even the --good commit is bad
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False), verify_good=True)
    assert res.code == 1 and len(res.steps) == 1
    assert "--good commit" in res.message and "does not test good" in res.message
    assert _head(repo) == "refs/heads/main" and not _bisect_state(repo)
    res = bisect(repo, shas[0], shas[-1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False))
    assert res.first_bad == shas[1] and "--verify-good" in "\n".join(res.report())
    shas2 = _repo(tmp_path / "two", 8, 5)
    repo2 = tmp_path / "two" / "repo"
    res = bisect(repo2, shas2[0], shas2[-1], make_builder(repo2, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False), verify_good=True)
    assert res.first_bad == shas2[5] and len(res.steps) <= 5
    assert res.steps[0].commit == shas2[0] and res.steps[0].code == GOOD


def test_git_bisect_run_drives_bisect_run(tmp_path: Path) -> None:
    """``git bisect run sdqtest bisect-run ...`` (the user's own loop) names the commit."""
    shas = _repo(tmp_path, 6, 4, broken=(2,))
    repo = tmp_path / "repo"
    node = tmp_path / "test_marker.py"
    node.write_text(
        "import os\n"
        f"def test_marker():\n    assert {MARK!r} not in "
        "open(os.environ['QTEST_QEMU_BINARY']).read()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=300, env=env)

    assert git("bisect", "start", shas[-1], shas[0]).returncode == 0
    try:
        r = git("bisect", "run", sys.executable, "-m", "harness", "bisect-run",
                "--pytest", str(node), "--pytest-args", FAST_PYTEST)
    finally:
        git("bisect", "reset")
    assert f"{shas[4]} is the first bad commit" in r.stdout, r.stdout + r.stderr
    assert not _bisect_state(repo)


def test_meson_litter_is_removed_from_tree(tmp_path: Path) -> None:
    from harness.provision.build import _tidy, _untracked

    _repo(tmp_path, 1, 1)
    repo = tmp_path / "repo"
    (repo / "mine.txt").write_text("the user's own untracked file")
    before = _untracked(repo)
    assert before == {"mine.txt"}
    (repo / "subprojects").mkdir()
    (repo / "subprojects" / ".wraplock").write_text("")
    (repo / "other").write_text("")
    with open(tmp_path / "log", "w+") as log:
        _tidy(repo, before, log)
        log.seek(0)
        text = log.read()
    assert not (repo / "subprojects" / ".wraplock").exists()
    assert (repo / "mine.txt").exists() and (repo / "other").exists()
    assert "removed subprojects/.wraplock" in text and "left other" in text


def test_progress_lines() -> None:
    import io

    out = io.StringIO()
    p = BisectProgress(out, live=True)
    p.step(2, 3, "a" * 40, "subject")
    with p.phase("build") as shown:
        shown.append("ok")
    text = out.getvalue()
    assert "[step 2 of ~5, " in text and "aaaaaaaaaaaa subject" in text
    assert "\r\x1b[K    build ...  0.0 s" in text  # the shared live line (harness.progress)
    assert text.endswith("\r\x1b[K    build: ok (0.0 s)\n")


def test_one_commit_range(tmp_path: Path) -> None:
    shas = _repo(tmp_path, 1, 1)
    repo = tmp_path / "repo"
    res = bisect(repo, shas[0], shas[1], make_builder(repo, build_cmd=None, binary=None),
                 MarkerCheck(), progress=BisectProgress(live=False), verify_good=True)
    assert res.first_bad == shas[1] and [s.commit for s in res.steps] == shas


def test_ccache_goes_first_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    b = QemuTreeBuilder(tmp_path / "build", tools_dir=tmp_path / "tools")
    assert b._env()["PATH"] == str(bindir) and "not installed" in b.advice(tmp_path)[0]
    (bindir / "ccache").write_text("#!/bin/sh\n")
    (bindir / "ccache").chmod(0o755)
    first = Path(b._env()["PATH"].split(os.pathsep)[0])
    assert (first / "cc").resolve().name == "ccache"
    assert "ccache found" in b.advice(tmp_path)[0]
