"""``sdqtest bugs --qemu-src TREE --verify``: the C tests in QEMU's own suite.

The bugs' libqtest tests (``harness/bugs/data/tests/NNNN-slug.c``) go into TREE as one
program, ``tests/qtest/sdcard-test.c`` (:mod:`harness.bugs.qtest_file`, the
file the series adds), registered in tests/qtest/meson.build;
ninja builds it beside the binary (:class:`harness.provision.build.QemuTreeBuilder`)
and each bug's cases run (``-p``) with ``QTEST_QEMU_BINARY``: without a
fix they must fail.  Each
fix (``bugs/NNNN-slug.patch``) is then applied in turn, the build redone
(incrementally) and the bug's test run again: it must pass.  With every fix
applied, QEMU's own sdhci-test and fuzz-sdcard-test must pass, and the
default check runs on the fixed binary and must be clean.
Then TREE is restored (:class:`harness.bugs.tree.TreeEdits`) and rebuilt,
so tree and build directory are as they were.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.bugs import qtest_file
from harness.bugs.catalog import Bug
from harness.bugs.tree import TreeEdits, git_status
from harness.check import report, session
from harness.errors import UsageError
from harness.provision import build, proc
from harness.table import print_table

#: Seconds one C test may take (it starts a QEMU or two).
TEST_TIMEOUT = 120.0


@dataclass
class TestRun:
    passed: bool
    summary: str
    seconds: float


#: QEMU's own SD tests, which must still pass with the fixes: sdhci-test.c
#: is built into qos-test (its cases are the qos paths with "sdhci" in them).
QEMU_TESTS = ("qos-test", "fuzz-sdcard-test")
#: The cases of a program to run: those whose path has this (None: all).
CASES = {"qos-test": "sdhci"}
SDCARD_TEST = qtest_file.MESON_NAME


def run_program(build_dir: Path, name: str, log: IO[str], paths: tuple[str, ...] = ()
                ) -> TestRun:
    """Run tests/qtest/``name`` (only ``paths`` when given: ``-p /x86_64PATH``)
    on the build directory's binary, as QEMU's test runner does (TAP)."""
    exe = build_dir / "tests" / "qtest" / name
    env = dict(os.environ, QTEST_QEMU_BINARY=str(build_dir / build.BINARY))
    select = [a for p in paths for a in ("-p", f"/x86_64{p}")]
    if not paths and name in CASES:
        listed = subprocess.run([exe, "-l"], env=env, cwd=build_dir, capture_output=True,
                                text=True, timeout=TEST_TIMEOUT, check=False).stdout
        select = [a for ln in listed.splitlines() if CASES[name] in ln
                  for a in ("-p", ln.strip())]
    tag = "-" + paths[0].strip("/").replace("/", "-") if paths else ""
    out_path = build_dir / f"{name}{tag}.tap"
    with out_path.open("wb") as out:
        ran = proc.run([exe, "--tap", "-k", *select], log=log, timeout=TEST_TIMEOUT,
                       cwd=build_dir, env=env, stdout=out)
    lines = out_path.read_text(errors="replace").splitlines()
    log.write(f"$ QTEST_QEMU_BINARY=... {exe.name} --tap -k {' '.join(select)}\n"
              + "\n".join(lines) + "\n")
    oks = [ln for ln in lines if ln.startswith(("ok ", "not ok "))]
    if ran.timed_out:
        how = f"timed out after {TEST_TIMEOUT:g} s"
    else:
        bad = [ln for ln in oks if ln.startswith("not ok")]
        how = (f"{len(oks) - len(bad)}/{len(oks)} ok" if oks else "no TAP result") + (
            f", exit {ran.returncode}" if ran.returncode else "")
        why = next((ln for ln in lines if ln.startswith("Bail out!")), "")
        if why:  # the failed assertion, without the path of the tree
            how += ": " + re.sub(r"\.\./[^/: ]+/", "", why.removeprefix("Bail out! "))
    return TestRun(ran.returncode == 0 and bool(oks), how, ran.seconds)


def meson_test(build_dir: Path, bug: Bug, log: IO[str]) -> str:
    """``bug``'s cases through QEMU's own runner (``meson test``, the way
    ``make check-qtest`` runs sdcard-test), its output as it prints it."""
    meson = build_dir / "pyvenv" / "bin" / "meson"
    if not meson.is_file():
        return f"(no {meson}: meson test not run)"
    paths = " ".join(f"-p /x86_64{p}" for p in qtest_file.case(bug).paths)
    cmd = [str(meson), "test", "-C", str(build_dir), "--no-rebuild", "--print-errorlogs",
           f"qtest-x86_64/{SDCARD_TEST}", "--test-args", paths]
    out_path = build_dir / f"{SDCARD_TEST}-meson-test.txt"
    with out_path.open("wb") as out:
        proc.run(cmd, log=log, timeout=TEST_TIMEOUT * 2, cwd=build_dir, stdout=out)
    text = out_path.read_text(errors="replace")
    log.write(text)
    keep = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("ninja:")]
    return "\n".join([f"$ meson test --no-rebuild --print-errorlogs qtest-x86_64/{SDCARD_TEST} "
                      f"--test-args '{paths}'", *keep])


def run_test(build_dir: Path, bug: Bug, log: IO[str]) -> TestRun:
    """Run ``bug``'s cases of sdcard-test."""
    return run_program(build_dir, SDCARD_TEST, log, qtest_file.case(bug).paths)


def _build(builder: build.QemuTreeBuilder, src: Path, log: IO[str], timeout: float,
           what: str) -> None:
    t0 = time.monotonic()
    print(f"building {what} ...", flush=True)
    res = builder.build(src, "HEAD", log, timeout)
    if not res.ok:
        raise UsageError(f"build failed ({what}): {res.message} (log: {log.name})")
    print(f"  built in {time.monotonic() - t0:.0f} s", flush=True)


def _check(binary: Path, log: IO[str]) -> tuple[bool, str]:
    """The default check on ``binary``, in-process (:mod:`harness.check.session`);
    clean or not, and its summary lines (the report goes to ``log``)."""
    print(f"running: sdqtest check --qemu {binary} -j 2", flush=True)
    out = session.run(session.CheckRequest(qemu=(str(binary),), jobs=2,
                                           report_dir=Path("reports")))
    text = io.StringIO()
    report.print_report(out.results, text)
    log.write(text.getvalue() + "\n".join(out.notes) + "\n" + session.summary(out) + "\n")
    bad = [f"[{r.build} {r.machine}] {r.scenario}: {r.status.upper()}"
           for r in out.results if not r.ok][:3]
    return out.verdict.status == 0, "\n".join([*bad, session.summary(out)])


def default_build_dir(src: Path) -> Path:
    """Where ``sdqtest qemu build TREE`` puts TREE's build."""
    return build.bisect_root().parent / "builds" / build.tree_dir(src).name


def verify(bugs: list[Bug], src: Path, *, build_dir: str | None, check: bool,
           timeout: float, series_dir: Path | None = None) -> int:
    """Run the C tests without and with the fixes in ``src`` (module doc)."""
    src = src.resolve()
    if not (src / "configure").is_file() or not (src / "tests/qtest/meson.build").is_file():
        raise UsageError(f"{src} is not a QEMU source tree (no configure, tests/qtest)")
    with_tests = [b for b in bugs if b.c_test is not None]
    if not with_tests:
        raise UsageError("none of these bugs has a C test")
    out = Path(build_dir).resolve() if build_dir else default_build_dir(src)
    out.parent.mkdir(parents=True, exist_ok=True)
    log_path = out.parent / f"{out.name}-bugs-verify.log"
    before = git_status(src)
    edits = TreeEdits(src)
    targets = tuple(f"tests/qtest/{n}" for n in (SDCARD_TEST, *QEMU_TESTS))
    # configure as the build directory was (with the ARM target or not): a
    # different target list would configure it afresh and rebuild it all
    arm = any(f.startswith("--target-list=") and "aarch64-softmmu" in f
              for f in build.configured_flags(out))
    builder = build.QemuTreeBuilder(build_dir=out, jobs=min(2, os.cpu_count() or 1),
                                    targets=targets, arm=arm)
    print(f"verifying {len(with_tests)} C tests in {src}, build {out} (log: {log_path})")
    with log_path.open("w") as log:
        try:
            rc = _steps(with_tests, src, out, edits, builder, log, timeout, check)
            if series_dir is not None:
                edits.restore()
                rc |= _series_steps(series_dir, src, out, edits, builder, log, timeout)
        finally:
            restored = edits.restore()
            print(f"\nrestored {len(restored)} files of {src}; rebuilding the binary as "
                  "the tree is", flush=True)
            _build(build.QemuTreeBuilder(build_dir=out, jobs=builder.jobs, arm=arm), src,
                   log, timeout, "the tree as found")
        after = git_status(src)
        if before is not None:
            print("git status of the tree: " + ("as found" if after == before else
                                                "CHANGED (see git status)"))
    return rc


def _steps(bugs: list[Bug], src: Path, out: Path, edits: TreeEdits,
           builder: build.QemuTreeBuilder, log: IO[str], timeout: float,
           check: bool) -> int:
    edits.write(qtest_file.TREE_PATH, qtest_file.render(bugs).encode())
    meson = Path("tests/qtest/meson.build")
    edits.write(meson, qtest_file.meson_edit((src / meson).read_text()).encode())
    _build(builder, src, log, timeout, f"the tree with {qtest_file.TREE_PATH}")
    smoke = run_program(out, SDCARD_TEST, log, qtest_file.SMOKE_PATHS)
    print(f"sdcard-test smoke cases without fixes: {'pass' if smoke.passed else 'FAIL'} "
          f"({smoke.summary})")
    without = {b.key: run_test(out, b, log) for b in bugs}
    shown = next((b for b in bugs if b.patch is not None), None)
    if shown is not None:
        print(f"\n{shown.name} without its fix, as QEMU's test runner prints it:\n"
              + meson_test(out, shown, log))
    patched = [b for b in bugs if b.patch is not None]
    for b in patched:
        assert b.patch is not None
        err = edits.apply_patch(b.patch)
        if err:
            raise UsageError(f"{b.patch.name} does not apply to {src}: {err}")
    fixed: dict[str, TestRun] = {}
    if patched:
        _build(builder, src, log, timeout,
               "with " + ", ".join(b.patch.name for b in patched if b.patch))
        fixed = {b.key: run_test(out, b, log) for b in bugs}
        if shown is not None:
            print(f"\n{shown.name} with the fixes, as QEMU's test runner prints it:\n"
                  + meson_test(out, shown, log))
    rows, bad = [], 0
    for b in bugs:
        w, f = without[b.key], fixed.get(b.key)
        want = b.patch is not None  # with the fixes: passes with its own, fails without
        bad += w.passed + (f is not None and f.passed != want)
        rows.append([b.name, "fails" if not w.passed else "PASSES (must fail)", w.summary,
                     "-" if f is None else ("passes" if f.passed else "fails") + (
                         "" if f.passed == want else " (UNEXPECTED)"),
                     "" if f is None else f.summary, b.patch.name if b.patch else "-"])
    print()
    print_table(["bug", "11.1.1 as is", "", "with the fixes", "", "fix"], rows)
    bad += not smoke.passed
    if patched:
        bad += _qemu_tests(out, log)
        bad += _fixed_build(patched, out / build.BINARY, log, check)
    return 1 if bad else 0


def _qemu_tests(out: Path, log: IO[str]) -> int:
    """QEMU's own SD tests and sdcard-test's smoke cases on the build with
    every fix; the number that fail."""
    print("\nQEMU's own tests on the build with the fixes:")
    bad = 0
    for name in QEMU_TESTS:
        r = run_program(out, name, log)
        bad += not r.passed
        what = f"{name} ({CASES[name]} cases)" if name in CASES else name
        print(f"  {what}: {'pass' if r.passed else 'FAIL'} ({r.summary})")
    r = run_program(out, SDCARD_TEST, log, qtest_file.SMOKE_PATHS)
    print(f"  {SDCARD_TEST} smoke cases: {'pass' if r.passed else 'FAIL'} ({r.summary})")
    return bad + (not r.passed)


def _fixed_build(patched: list[Bug], binary: Path, log: IO[str], check: bool) -> int:
    """The reproducers (they must say absent) and the default check (it must
    be clean) on the binary with every fix; the number of failures."""
    from harness.bugs import run
    from harness.qemu.selection import select_builds

    q = select_builds([str(binary)], install_missing=False)[0]
    bad = 0
    print(f"\nreproducers on the build with the fixes ({binary}):")
    for b in patched:
        o = run.run(b, q)
        bad += o.verdict is not run.BugVerdict.ABSENT
        print(f"  {b.name}: {o.verdict.value}: {o.detail}")
    if check:
        clean, tail = _check(binary, log)
        print("\ndefault check on the build with the fixes: "
              + ("clean" if clean else "NOT CLEAN (see the log)"))
        print("\n".join("  " + ln for ln in tail.splitlines()))
        bad += not clean
    return bad


def _series_steps(series_dir: Path, src: Path, out: Path, edits: TreeEdits,
                  builder: build.QemuTreeBuilder, log: IO[str], timeout: float) -> int:
    """The series of ``series_dir`` applied to the tree patch by patch (what
    ``git am`` applies; the tree need not be a git repository), built
    incrementally, then every sdcard-test case and QEMU's own SD tests run:
    all must pass.  1 on a failure."""
    patches = sorted(p for p in series_dir.glob("[0-9][0-9][0-9][0-9]-*.patch")
                     if not p.name.startswith("0000-"))
    if not patches:
        raise UsageError(f"{series_dir}: no patches (sdqtest bugs --series DIR writes them)")
    print(f"\napplying the series of {series_dir} ({len(patches)} patches) to {src}:")
    for p in patches:
        err = edits.apply_patch(p)
        if err:
            print(f"  {p.name}: DOES NOT APPLY: {err}")
            return 1
        print(f"  {p.name}: applied")
    _build(builder, src, log, timeout, "the tree with the series")
    bad = 0
    for name in (SDCARD_TEST, *QEMU_TESTS):
        r = run_program(out, name, log)
        bad += not r.passed
        print(f"  {name}: {'pass' if r.passed else 'FAIL'} ({r.summary})")
    return 1 if bad else 0
