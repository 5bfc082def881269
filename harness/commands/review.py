"""``sdqtest review``: two builds, or a QEMU tree and a series (see :mod:`harness.review`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from harness.commands.common import (
    add_difference_options,
    check_output,
    json_option,
    machine_output,
    max_differences,
    show_progress,
    write_json,
)
from harness.errors import SdqtestError, UsageError

EPILOG = ("exit: 0 nothing is a problem; 1 the report names a problem (changed behaviour, "
          "a default without a compat entry, a slower path); 2 bad input, a patch that does "
          "not apply, a build that fails or has no qtest accelerator (one line each)")


def register(sub: Any) -> None:
    """``sdqtest review``."""
    rv = sub.add_parser(
        "review", help="what a hw/sd patch or series changes: base and patched side by side",
        description="Runs the scenario library on base and patched QEMU: QEMU against QEMU "
        "in lockstep, and each against the model; compares the devices' properties per "
        "machine type (QMP) and benchmarks both, interleaved. Two builds (--base, "
        "--patched), or a QEMU tree and a series (--qemu-src, --series), applied and built "
        "on a scratch clone (the tree is never written).", epilog=EPILOG)
    rv.add_argument("--base", metavar="B", help="base QEMU binary or build directory (with "
                    "--qemu-src: use it instead of building the base commit)")
    rv.add_argument("--patched", metavar="B", help="patched QEMU binary or build directory")
    rv.add_argument("--qemu-src", metavar="TREE", help="QEMU git tree the series applies to")
    rv.add_argument("--series", metavar="S", help="an mbox, a directory of git format-patch "
                    "files, or a git range A..B of the tree")
    rv.add_argument("--base-ref", default="HEAD", metavar="REF",
                    help="the commit a mailed series applies to (default HEAD of the tree)")
    rv.add_argument("--each", action="store_true", help="build every patch, not only the end "
                    "points, and tell which patch introduced each change")
    rv.add_argument("--work", metavar="DIR", help="scratch clone, build directories and "
                    "binaries (default: the sdqtest cache; put it beside your own build directory "
                    "for ccache hits)")
    rv.add_argument("--build-name", default="build", metavar="NAME",
                    help="the scratch build directory's name beside the clone (named as the "
                    "tree): give your base build directory's name, and with ccache's base_dir "
                    "above both the first build hits the cache for every unchanged file")
    rv.add_argument("--coverage", action="store_true", help="also a gcov build of the patched "
                    "tree: which changed lines the check executed")
    rv.add_argument("--group", action="append", help="scenario groups (default: all)")
    rv.add_argument("--scenario", action="append", help="scenarios (default: all)")
    rv.add_argument("-j", "--jobs", type=int, default=0, help="workers (default: one per core)")
    rv.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    rv.add_argument("--rounds", type=int, default=5, help="benchmark rounds per build")
    rv.add_argument("--guest", type=int, nargs="?", const=1, default=0, metavar="ROUNDS",
                    help="also fio's 128 KiB table and a 64 MiB erase in a Linux guest "
                    "(sdqtest bench guest), ROUNDS rounds per build (default 1)")
    rv.add_argument("--fresh-base-check", action="store_true",
                    help="run the base build's model check again even if an earlier review "
                    "of the same base binary kept it")
    add_difference_options(rv)
    rv.add_argument("--report-dir", default="review-report", metavar="D",
                    help="report.txt/.md/.json and the reproducers (default review-report)")
    rv.add_argument("--markdown", action="store_true", help="print the Markdown report")
    json_option(rv, "the report (report.json's content)")
    rv.add_argument("--tap", metavar="FILE|-", nargs="?", const="-",
                    help="write the report's summary as TAP 14 for meson test: a test point "
                    "per finding, not ok for a problem (no FILE or '-': on standard output, "
                    "the text then on standard error)")
    rv.set_defaults(func=run)


def _binary(spec: str) -> Path:
    p = Path(spec).expanduser()
    if p.is_dir():
        p = p / "qemu-system-x86_64"
    if not p.is_file():
        raise SdqtestError(f"{spec}: no QEMU binary there")
    return p.absolute()


def _diff_text(scratch: Any, commits: list[str]) -> str:
    """The series as one diff: line numbers are the last commit's."""
    return str(scratch.git("diff", f"{commits[0]}^", commits[-1]).stdout)


def run(args: argparse.Namespace) -> int:
    """``sdqtest review`` (its outputs checked writable first; with
    ``--json -`` the text goes to standard error)."""
    check_output("--report-dir", args.report_dir, directory=True)
    check_output("--tap", args.tap)
    if args.tap == "-" and args.json == "-":
        raise UsageError("--json - and --tap -: only one of them can be standard output")
    if args.tap == "-":
        stdout = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            return _run(args, stdout)
    with machine_output(args) as stdout:
        return _run(args, stdout)


def _run(args: argparse.Namespace, stdout: TextIO) -> int:
    import harness.scenarios as scenarios
    from harness.check import parallel
    from harness.review import report, run, series

    groups = [g for a in args.group or [] for g in a.split(",") if g] or None
    names = [n for a in args.scenario or [] for n in a.split(",") if n] or None
    try:
        selected = list(scenarios.select(groups, names))
    except KeyError as e:
        raise SdqtestError(str(e.args[0])) from e
    opts = run.ReviewOptions(selected, args.jobs or parallel.default_jobs(), Path(args.report_dir),
                       not args.no_bench, args.rounds, args.guest, not args.fresh_base_check,
                       max_differences(args))
    t0 = time.monotonic()
    build_times: dict[str, float] = {}
    try:
        if args.qemu_src:
            if not args.series or args.patched:
                raise SdqtestError("--qemu-src takes --series (and no --patched)")
            rv = _review_series(args, opts, build_times)
        else:
            if not (args.base and args.patched) or args.series:
                raise SdqtestError("give --base B --patched B, or --qemu-src TREE --series S")
            rv = run.review(_binary(args.base), _binary(args.patched), opts, show_progress)
    except series.SeriesError as e:
        print(f"sdqtest review: {e}", file=sys.stderr)
        return 2
    rv.times = {**build_times, **rv.times}
    txt, md, js = report.write(rv, opts.report_dir)
    rc = 1 if any(f.problem for f in report.findings(rv)) else 0
    print(report.render(rv, md=args.markdown), end="")
    print(f"\nreports: {txt}, {md}, {js} ({time.monotonic() - t0:.0f} s in all)")
    if args.json:
        write_json(json.loads(js.read_text()), args.json, stdout)
    if args.tap:
        from harness.check import tap

        tap.write_stream(tap.stream(tap_points(rv)), args.tap, stdout)
    return rc


def tap_points(rv: Any) -> list[Any]:
    """``review --tap``: each finding of the summary a test point, not ok for
    a problem (the exit status's rule); a review without findings one ok
    point saying what was compared."""
    from harness.check import tap
    from harness.review import report

    found = report.findings(rv)
    if not found:
        return [tap.Point(True, f"no behaviour change: {len(rv.rows)} scenario runs compared, "
                          "base against patched and each against the model")]
    return [tap.Point(not f.problem, f.text, diagnostics={
        "message": f.text, "severity": "fail"} if f.problem else None) for f in found]


def _review_series(args: argparse.Namespace, opts: Any, times: dict[str, float]) -> Any:
    from harness.provision.build import tree_dir
    from harness.review import run, series, tree

    src = Path(args.qemu_src).expanduser().resolve()
    s = series.read(args.series, src)
    work = Path(args.work).expanduser() if args.work else tree_dir(src) / "review"
    scratch = tree.Scratch(src, work, jobs=min(2, os.cpu_count() or 1),
                           build_name=args.build_name)
    t = time.monotonic()
    base_sha = scratch.prepare(s.base or args.base_ref)
    commits = scratch.apply(s, base_sha)
    base_bin = _binary(args.base) if args.base else scratch.build(base_sha, "base").binary
    n = len(s.patches)
    points = list(range(1, n + 1)) if args.each else [n]
    bins = [(s.label(i) if args.each or n == 1 else f"[1-{n}/{n}] the series",
             scratch.build(commits[i - 1], s.label(i)).binary) for i in points]
    times["builds"] = time.monotonic() - t
    rv = run.review(base_bin, bins[-1][1], opts, show_progress,
                    title=f"{s.source} ({n} patch{'es' if n > 1 else ''}) on {base_sha[:12]}")
    rv.patches = [s.label(i) for i in range(1, n + 1)]
    rv.notes.append("builds: " + ", ".join(
        f"{b.commit[:12]} {'cached' if b.cached else f'{b.seconds:.0f} s'}"
        for b in scratch.builds))
    if len(bins) > 1:
        run.attribute(rv, bins, opts, show_progress)
    else:
        for c in rv.props:
            c.patch = bins[0][0]
        for f in rv.findings:
            f.patch = bins[0][0]
        run.rows_patches(rv, [bins[0][0]])
    if args.coverage:
        t = time.monotonic()
        rv.untested, unmeasured = _untested(scratch, s, commits, opts)
        if unmeasured:
            rv.notes.append("untested hunks: gcov counts hw/sd only; not measured: "
                            + ", ".join(unmeasured))
        times["coverage"] = time.monotonic() - t
    return rv


def _untested(scratch: Any, s: Any, commits: list[str], opts: Any
              ) -> tuple[list[str], list[str]]:
    """Changed lines of the series no scenario executed, on a gcov build, and
    the changed files it has no counts for (``file (N changed lines)``)."""
    from harness.check import coverage, parallel
    from harness.check.testbench import RunSpec
    from harness.qemu.builds import probe
    from harness.review import series, tree

    gcov = tree.Scratch(scratch.src, scratch.root, scratch.jobs, coverage=True,
                        build_name=scratch.build_name)
    gcov.git("checkout", "-q", "--force", "--detach", commits[-1])
    built = gcov.build(commits[-1], "coverage build")
    cb = coverage.CoverageBuild(built.binary.parent)
    cb.reset()
    b = probe(built.binary, "patched-gcov")
    runs = [RunSpec(b, sc, "q35") for sc in opts.scenarios]
    old = dict(os.environ)
    os.environ.update(cb.environment())
    try:
        parallel.run_all(runs, parallel.SharedOptions(), opts.jobs)
    finally:
        os.environ.clear()
        os.environ.update(old)
    cov = cb.measure()
    out: list[str] = []
    unmeasured: list[str] = []
    for path, lines in series.changed_lines(_diff_text(scratch, commits)).items():
        fc = cov.files.get(path)
        if fc is None:
            unmeasured.append(f"{path} ({len(lines)} changed line{'s' if len(lines) > 1 else ''})")
            continue
        src = (scratch.clone / path).read_text(errors="replace").splitlines()
        for n in lines:
            if fc.lines.get(n) == 0:
                out.append(f"{path}:{n}: {src[n - 1].strip() if n <= len(src) else ''}")
    return out, unmeasured
