"""``sdqtest bench data|erase|harness|all|compare``: parsers and commands.

Every part measures each selected build in the same run, prints its tables,
writes a JSON file with every sample and each build's identity, and one PNG
plot per table beside it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.bench.output import Run
from harness.qemu.selection import select_builds

PARTS = ("data", "erase", "harness")
DEFAULT_OUT = "bench-results"


def _run_part(part: str, args: argparse.Namespace, builds: list[Any], workdir: Path) -> Run:
    from harness.bench.progress import Progress

    made: list[Progress] = []

    def progress(total: int) -> Progress:
        made.append(Progress(f"bench {part}", total))
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
        sizes = _ints(args.sizes) if args.sizes else (
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


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x)
    except ValueError as e:
        raise SystemExit(f"sdqtest bench: --sizes wants KiB numbers like 4,16,128: {e}") from e


def _emit(res: Run, args: argparse.Namespace, json_path: Path | None) -> None:
    from harness.bench import output

    output.print_run(res)
    out_dir = Path(args.out)
    path = json_path or output.default_json_path(out_dir, res.part)
    output.write_json(res, path)
    print(f"\nJSON: {path}")
    if not args.no_plot:
        try:
            pngs = output.plot(res, path.parent, path.stem)
        except ImportError:
            print("plots skipped: matplotlib is not installed (pip install 'sdqtest[bench]')")
        else:
            for p in pngs:
                print(f"plot: {p}")


def cmd_part(args: argparse.Namespace) -> int:
    """One part: ``bench data``, ``bench erase`` or ``bench harness``."""
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    builds = select_builds(args.qemu)
    with tempfile.TemporaryDirectory(prefix="sdqtest-bench-") as tmp:
        res = _run_part(args.part, args, builds, Path(tmp))
    _emit(res, args, Path(args.json) if args.json else None)
    return 0


def cmd_all(args: argparse.Namespace) -> int:
    """Every part in turn, one JSON file (and plots) per part in ``--out``."""
    from harness.qemu.session import install_signal_handlers

    install_signal_handlers()
    builds = select_builds(args.qemu)
    for part in PARTS:
        print(f"\n##### bench {part} #####")
        with tempfile.TemporaryDirectory(prefix="sdqtest-bench-") as tmp:
            res = _run_part(part, args, builds, Path(tmp))
        _emit(res, args, None)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
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


def add_parsers(bench_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``data``, ``erase``, ``harness``, ``all`` and ``compare`` to ``bench``."""

    def common(p: argparse.ArgumentParser, *, json: bool = True) -> None:
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

    def data_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--sizes", metavar="KIB,...",
                       help="block sizes in KiB (default 4,8,12,16,64,128,512,1024)")
        p.add_argument("--modes", default="pio,sdma,adma2", help="default pio,sdma,adma2")
        p.add_argument("--directions", default="read,write,mixed",
                       help="default read,write,mixed")
        p.add_argument("--pio-max", type=int, default=128, metavar="KIB",
                       help="largest PIO request in KiB (default 128)")

    def erase_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--limit", type=float, default=60.0, metavar="SECONDS",
                       help="stop an erase past this and report it over budget (default 60)")
        p.add_argument("--formats", default="raw,qcow2", help="default raw,qcow2")

    def harness_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument("--groups", default="registers,card",
                       help="scenario groups for scenarios/s (default registers,card)")

    parts: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
        "data": ("MiB/s through PIO, SDMA and ADMA2 by block size", data_opts),
        "erase": ("erase 2 GiB and a 64 GiB card; allocated size before/after", erase_opts),
        "harness": ("qtest clients, model vs QEMU, model erase, scenarios/s", harness_opts),
    }
    for name, (text, opts) in parts.items():
        p = bench_sub.add_parser(name, help=text, description=text)
        common(p)
        opts(p)
        p.set_defaults(func=cmd_part, part=name)
    p = bench_sub.add_parser("all", help="data, erase and harness in one run",
                             description="data, erase and harness in turn; one JSON file "
                             "and plots per part in --out")
    common(p, json=False)
    for _, opts in parts.values():
        opts(p)
    p.set_defaults(func=cmd_all)
    c = bench_sub.add_parser("compare", help="ratios between two result files or two builds",
                             description="B/A ratios of matching figures of two JSON results, "
                             "or of two builds (--build A --build B) in one")
    c.add_argument("a", metavar="A.json")
    c.add_argument("b", metavar="B.json", nargs="?")
    c.add_argument("--build", action="append", metavar="NAME",
                   help="restrict to this build; with one file give two")
    c.set_defaults(func=cmd_compare)
