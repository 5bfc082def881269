"""``sdqtest bench qtest|check|data|erase|harness|all|compare|guest``: parsers and commands.

Every part measures each selected build in the same run, prints its tables,
writes a JSON file with every sample and each build's identity, and one PNG
plot per table beside it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.bench.output import Run
from harness.check import session
from harness.commands.common import board_options, check_output, qemu_option, show_progress
from harness.errors import UsageError
from harness.qemu.selection import select_builds

PARTS = ("data", "erase", "harness")
DEFAULT_OUT = "bench-results"


def register(sub: Any) -> None:
    """``sdqtest bench``: ``qtest`` and ``check`` here, the parts of :mod:`harness.bench`
    (:func:`add_parsers`)."""
    b = sub.add_parser("bench", help="benchmarks (figures, never pass/fail)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    bq = bsub.add_parser("qtest", help="qtest round trips: naive vs sync vs pipelined")
    qemu_option(bq)
    bq.add_argument("--ops", type=int, default=3000)
    bq.add_argument("--repeats", type=int, default=5)
    bq.set_defaults(func=run_qtest)
    bc = bsub.add_parser("check", help="scenarios/s through check: step by step vs "
                         "optimistic lockstep (and QEMU launched afresh), side by side")
    qemu_option(bc)
    bc.add_argument("--group", action="append",
                    help="scenario group (repeatable, or comma-separated; default: all)")
    bc.add_argument("--scenario", action="append", metavar="NAME",
                    help="one scenario by name (repeatable)")
    board_options(bc)
    bc.add_argument("-j", "--jobs", metavar="N[,N...]", type=job_list,
                    help="worker counts to measure (default: one per core)")
    bc.add_argument("--equivalence", action="store_true",
                    help="instead: run each scenario fresh and on a reused QEMU step by step "
                    "and optimistically, and name those whose steps, qtest trace or report "
                    "differ (exit 1 if any)")
    bc.add_argument("--fresh", action="store_true",
                    help="also time each QEMU launched afresh (step by step)")
    bc.add_argument("--differences", action="store_true",
                    help="instead of step by step: each run stopped at its first difference "
                    "(--first-only) against going on past them (the default), side by side")
    bc.add_argument("--profile", action="store_true",
                    help="instead: the time split by concern (model, driver, comparison, "
                    "qtest wire, launch/reset, image compare) under cProfile, on one worker")
    bc.set_defaults(func=run_check)
    add_parsers(bsub)


def run_qtest(args: argparse.Namespace) -> int:
    from harness.bench import qtest_bench

    for b in select_builds(args.qemu):
        for line in qtest_bench.run(b.name, b.binary, ops=args.ops, repeats=args.repeats).lines():
            print(line)
    return 0


def run_check(args: argparse.Namespace) -> int:
    """``check``'s own runs (the same selection: builds, boards, groups),
    each way side by side."""
    from harness.bench import check_bench
    from harness.check import parallel

    runs = session.plan(session.CheckRequest(
        qemu=tuple(args.qemu) if args.qemu else None, groups=session.names(args.group),
        scenarios=session.names(args.scenario),
        boards=tuple(args.board) if args.board is not None else None,
        no_boards=args.no_boards)).runs
    if args.equivalence:
        lines = check_bench.equivalence(runs, progress=show_progress)
        show_progress("")
        print("\n".join(lines))
        return 1 if len(lines) > 1 else 0
    ways = ("fresh", "step", "optimistic") if args.fresh else ("step", "optimistic")
    if args.differences:
        ways = ("first-only", "optimistic")
    if args.profile:
        lines = check_bench.profile(runs, ways, progress=show_progress)
        show_progress("")
        print("\n".join(lines))
        return 0
    jobs = list(args.jobs) if args.jobs else [parallel.default_jobs()]
    before = os.getloadavg()
    ms = check_bench.measure(runs, jobs, progress=show_progress, ways=ways)
    show_progress("")
    for line in check_bench.report(ms, runs, before, os.getloadavg()):
        print(line)
    return 0


def _run_part(part: str, args: argparse.Namespace, builds: list[Any], workdir: Path) -> Run:
    from harness.bench.progress import BenchProgress

    made: list[BenchProgress] = []

    def progress(total: int) -> BenchProgress:
        made.append(BenchProgress(f"bench {part}", total))
        return made[-1]

    try:
        return _measure(part, args, builds, workdir, progress)
    finally:
        for p in made:
            p.clear()


def _measure(part: str, args: argparse.Namespace, builds: list[Any], workdir: Path,
             progress: Callable[[int], Any]) -> Run:
    from harness.bench import data, erase, harness_bench

    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    usable = [b for b in builds if b.has_sdhci_pci]
    skipped = [b.name for b in builds if not b.has_sdhci_pci]
    if part == "data":
        sizes = args.sizes if args.sizes else (
            data.QUICK_SIZES if args.quick else data.DEFAULT_SIZES)
        res = data.run(usable, sizes_kib=sizes, modes=args.modes.split(","),
                       directions=args.directions.split(","), repeats=repeats,
                       min_bytes=(16 if args.quick else 128) * 1024, pio_max_kib=args.pio_max,
                       workdir=workdir, progress_factory=progress)
    elif part == "erase":
        cases = erase.QUICK_CASES if args.quick else erase.DEFAULT_CASES
        res = erase.run(usable, cases=cases, formats=args.formats.split(","),
                        repeats=repeats, limit=args.limit, workdir=workdir,
                        progress_factory=progress)
    else:
        res = harness_bench.run(usable, repeats=repeats, quick=args.quick,
                                groups=args.groups.split(","), workdir=workdir,
                                progress_factory=progress)
    res.options["quick"] = bool(args.quick)
    for name in skipped:
        res.notes.append(f"{name}: skipped, no sdhci-pci/sd-card in this build")
    return res


def job_list(text: str) -> tuple[int, ...]:
    """``-j 1,2``: positive worker counts (a usage error otherwise, exit 2)."""
    try:
        return kib_list(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r}: worker counts like 1,2") from None


def _outputs(args: argparse.Namespace) -> None:
    """``--json`` and ``--out`` refused before anything runs when they
    cannot be written (a usage error; the JSON file's directory is made
    as ``--out`` is)."""
    dest = getattr(args, "json", None)
    if dest == "-":
        raise UsageError("--json -: bench writes its results to a file")
    if dest is not None:
        if Path(dest).is_dir():
            raise UsageError(f"--json {dest}: is a directory, not a file")
        try:
            check_output("--json", str(Path(dest).absolute().parent), directory=True)
        except UsageError as e:
            raise UsageError(f"--json {dest}: {str(e).split(': ', 1)[1]}") from None
    check_output("--out", args.out, directory=True)


def kib_list(text: str) -> tuple[int, ...]:
    """``--sizes 4,16,128``: positive KiB numbers (a usage error otherwise:
    argparse says so in one line, exit status 2, before anything runs)."""
    try:
        got = tuple(int(x) for x in text.split(",") if x)
    except ValueError:
        got = ()
    if not got or min(got) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: KiB numbers like 4,16,128")
    return got


def _emit(res: Run, args: argparse.Namespace, json_path: Path | None) -> None:
    from harness.bench import output, plots

    output.print_run(res)
    out_dir = Path(args.out)
    path = json_path or output.default_json_path(out_dir, res.part)
    output.write_json(res, path)
    print(f"\nJSON: {path}")
    if not args.no_plot:
        try:
            pngs = plots.plot(res, path.parent, path.stem)
        except ImportError:
            print("plots skipped: matplotlib is not installed (pip install 'sdqtest[bench]')")
        else:
            for p in pngs:
                print(f"plot: {p}")


def run_part(args: argparse.Namespace) -> int:
    """One part: ``bench data``, ``bench erase`` or ``bench harness``."""
    _outputs(args)
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    builds = select_builds(args.qemu)
    with tempfile.TemporaryDirectory(prefix="sdqtest-bench-") as tmp:
        res = _run_part(args.part, args, builds, Path(tmp))
    _emit(res, args, Path(args.json) if args.json else None)
    return 0


def run_all(args: argparse.Namespace) -> int:
    """Every part in turn, one JSON file (and plots) per part in ``--out``."""
    _outputs(args)
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    builds = select_builds(args.qemu)
    for part in PARTS:
        print(f"\n##### bench {part} #####")
        with tempfile.TemporaryDirectory(prefix="sdqtest-bench-") as tmp:
            res = _run_part(part, args, builds, Path(tmp))
        _emit(res, args, None)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    """Ratios between two runs (B over A), or two builds of one run."""
    from harness.bench import output

    try:
        a = output.read_json(Path(args.a))
        b = output.read_json(Path(args.b)) if args.b else None
    except (OSError, ValueError, KeyError) as e:
        print(f"sdqtest bench compare: {e}", file=sys.stderr)
        return 2
    builds = args.build or []
    if b is None and len(builds) != 2:
        print("sdqtest bench compare: with one file, name two builds: --build X --build Y",
              file=sys.stderr)
        return 2
    n = output.compare(a, b, builds)
    return 0 if n else 1


def _common(p: argparse.ArgumentParser, *, json: bool = True) -> None:
    """The options every bench part takes."""
    p.add_argument("--qemu", action="append", metavar="NAME|PATH",
                   help="QEMU build: installed name or binary path; repeatable "
                   "(default: $QTEST_QEMU_BINARY, else every installed build)")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="samples per figure (default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="fewer sizes, smaller ranges, one repeat (tests, CI)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where JSON and plots go (default ./{DEFAULT_OUT})")
    if json:
        p.add_argument("--json", metavar="FILE",
                       help="JSON result file (default DIR/PART-TIMESTAMP.json)")
    p.add_argument("--no-plot", action="store_true", help="write no PNG plots")



def _data_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", metavar="KIB,...", type=kib_list,
                   help="block sizes in KiB (default 4,8,12,16,64,128,512,1024)")
    p.add_argument("--modes", default="pio,sdma,adma2", help="default pio,sdma,adma2")
    p.add_argument("--directions", default="read,write,mixed",
                   help="default read,write,mixed")
    p.add_argument("--pio-max", type=int, default=128, metavar="KIB",
                   help="largest PIO request in KiB (default 128)")



def _erase_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=float, default=60.0, metavar="SECONDS",
                   help="stop an erase past this and report it over budget (default 60)")
    p.add_argument("--formats", default="raw,qcow2", help="default raw,qcow2")



def _harness_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--groups", default="registers,card",
                   help="scenario groups for scenarios/s (default registers,card)")


def add_parsers(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``data``, ``erase``, ``harness``, ``all`` and ``compare`` to ``bench``."""
    parts: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
        "data": ("MiB/s through PIO, SDMA and ADMA2 by block size", _data_opts),
        "erase": ("erase 2 GiB and a 64 GiB card; allocated size before/after", _erase_opts),
        "harness": ("qtest clients, model vs QEMU, model erase, scenarios/s", _harness_opts),
    }
    for name, (text, opts) in parts.items():
        p = bench_sub.add_parser(name, help=text, description=text)
        _common(p)
        opts(p)
        p.set_defaults(func=run_part, part=name)
    p = bench_sub.add_parser("all", help="data, erase and harness in one run",
                             description="data, erase and harness in turn; one JSON file "
                             "and plots per part in --out")
    _common(p, json=False)
    for _, opts in parts.values():
        opts(p)
    p.set_defaults(func=run_all)
    c = bench_sub.add_parser("compare", help="ratios between two result files or two builds",
                             description="B/A ratios of matching figures of two JSON results, "
                             "or of two builds (--build A --build B) in one")
    c.add_argument("a", metavar="A.json")
    c.add_argument("b", metavar="B.json", nargs="?")
    c.add_argument("--build", action="append", metavar="NAME",
                   help="restrict to this build; with one file give two")
    c.set_defaults(func=run_compare)
    add_guest_parser(bench_sub)
    from harness.bench import report

    report.add_parser(bench_sub)


# -- sdqtest bench guest (a real Linux guest; harness/bench/guest.py) ----------------------


def run_guest(args: argparse.Namespace) -> int:
    """``bench guest``: fio, erase and integrity inside a Linux guest, per build."""
    from harness.bench import guest
    from harness.errors import GuestError
    from harness.guest.card import CardError, qemu_img
    from harness.provision.install import InstallError
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    for opt in ("kernel", "initrd"):
        p = getattr(args, opt)
        if p is not None and not Path(p).is_file():
            print(f"sdqtest bench guest: --{opt} {p}: no such file", file=sys.stderr)
            return 2
    if args.format == "qcow2" and qemu_img() is None:
        from harness.provision.install import ensure_tools

        ensure_tools(lambda m: print(m, file=sys.stderr))  # as root: apt-get install qemu-utils
    if args.format == "qcow2" and qemu_img() is None:
        print("sdqtest bench guest: --format qcow2 needs qemu-img (Debian: qemu-utils)",
              file=sys.stderr)
        return 2
    logs = Path(args.out) / "guest-logs"
    logs.mkdir(parents=True, exist_ok=True)
    opts = guest.Options(
        runtime=args.runtime, sweep_runtime=args.sweep_runtime,
        sizes=args.sizes if args.sizes else guest.DEFAULT_SIZES,
        sweep_rw=tuple(x for x in args.sweep_rw.split(",") if x), erase_mib=args.erase_mib,
        fio_mib=args.fio_mib, fmt=args.format, accel=args.accel,
        boot_timeout=args.boot_timeout, erase_limit=args.erase_limit,
        kernel=Path(args.kernel) if args.kernel else None,
        initrd=Path(args.initrd) if args.initrd else None, append=args.append or "",
        qtest=not args.no_qtest, qtest_repeats=args.repeats or 3,
        keep_logs=logs)
    builds = [b for b in select_builds(args.qemu) if b.has_sdhci_pci]
    if not builds:
        print("sdqtest bench guest: no selected build has sdhci-pci/sd-card", file=sys.stderr)
        return 2
    from harness.bench.progress import BenchProgress

    made: list[BenchProgress] = []

    def progress(total: int) -> BenchProgress:
        made.append(BenchProgress("bench guest", total))
        return made[-1]

    try:
        with tempfile.TemporaryDirectory(prefix="sdqtest-guest-") as tmp:
            res = guest.run(builds, opts, workdir=Path(tmp), progress_factory=progress,
                            log=lambda m: print(m, file=sys.stderr))
    except (GuestError, CardError, InstallError, ValueError) as e:
        for p in made:
            p.clear()
        print(f"sdqtest bench guest: {e}", file=sys.stderr)
        return 1
    _emit(res, args, Path(args.json) if args.json else None)
    return 0


def add_guest_parser(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``bench guest`` (called from :func:`add_parsers`)."""
    text = "fio, erase and end-to-end integrity inside a Linux guest on the SD card"
    p = bench_sub.add_parser("guest", help=text, description=text + " (see docs/benchmarks.md, "
                             "'Guest benchmark'); the card image is made by the benchmark")
    p.add_argument("--qemu", action="append", metavar="NAME|PATH",
                   help="QEMU build: installed name or binary path; repeatable "
                   "(default: $QTEST_QEMU_BINARY, else every installed build)")
    p.add_argument("--runtime", type=int, default=10, metavar="S",
                   help="seconds per fio job of the 128 KiB table (default 10; the seed used 60)")
    p.add_argument("--sweep-runtime", type=int, default=3, metavar="S",
                   help="seconds per fio job of the block-size sweep (default 3)")
    p.add_argument("--sizes", metavar="KIB,...", type=kib_list,
                   help="sweep block sizes in KiB (default 4,8,12,16,64,128,512,1024)")
    p.add_argument("--sweep-rw", default="read,write", help="sweep directions (default read,write)")
    p.add_argument("--erase-mib", type=int, default=1024, metavar="MIB",
                   help="range the guest erases with blkdiscard (default 1024; 2048 for 2 GiB)")
    p.add_argument("--erase-limit", type=float, default=600.0, metavar="S",
                   help="stop an erase past this and report it over budget (default 600)")
    p.add_argument("--fio-mib", type=int, default=1024, metavar="MIB",
                   help="region of the card fio reads and writes (default 1024)")
    p.add_argument("--format", choices=("raw", "qcow2"), default="raw",
                   help="card image format (qcow2 needs qemu-img)")
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                   help="auto: KVM when /dev/kvm works and the guest boots with it, else TCG")
    p.add_argument("--boot-timeout", type=float, default=180.0, metavar="S",
                   help="seconds until the guest's SDQTEST-HELLO (default 180)")
    p.add_argument("--kernel", metavar="FILE", help="your own kernel (default: Debian's)")
    p.add_argument("--initrd", metavar="FILE",
                   help="your own initramfs following the result protocol (default: ours)")
    p.add_argument("--append", metavar="TEXT", help="added to the kernel command line")
    p.add_argument("--no-qtest", action="store_true",
                   help="skip the qtest-level figure beside the guest's")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="samples of the qtest-level figure (default 3)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where JSON, plots and console logs go (default ./{DEFAULT_OUT})")
    p.add_argument("--json", metavar="FILE", help="JSON result file (default DIR/guest-TIME.json)")
    p.add_argument("--no-plot", action="store_true", help="write no PNG plots")
    p.set_defaults(func=run_guest)
