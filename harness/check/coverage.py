"""What of QEMU's ``hw/sd`` code a run executed, read from a gcov build.

A QEMU configured with ``--enable-gcov`` (meson's ``b_coverage``; ``sdqtest
qemu build SRC --coverage`` makes one) leaves a ``.gcno`` file beside each
object, and every QEMU process of that build that exits normally (QMP
``quit`` or SIGTERM; a killed one adds nothing) adds its counts to the
``.gcda`` file beside it.  :class:`CoverageBuild` finds the ``hw/sd``
objects of such a build directory, clears their counts before a
measurement, and reads them back through ``gcov --json-format --stdout``
(GCC 9 and later) into :class:`Coverage`: lines, branches and functions per
source file.

Nothing here knows QEMU's functions by name: the function list comes from
the build, so a patched tree or another version is measured the same way.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import SdqtestError

#: Source folders measured (relative to the QEMU tree).
SOURCES = ("hw/sd/",)
#: gcov is given this long per object file.
GCOV_TIMEOUT = 120.0
#: Environment variable QEMU sessions read for how long a normal exit may
#: take before they escalate to SIGTERM; a gcov build writes its counts at
#: exit, which takes longer than the usual three seconds under load.
EXIT_GRACE_ENV = "SDQTEST_EXIT_GRACE"


@dataclass(frozen=True)
class OutOfReach:
    """Functions of a measured file that sdhci-pci with an SD card cannot
    execute, and why; ``boards`` names the boards (``check --board``) or
    the other device that do reach them, empty when nothing here can."""

    path: str
    pattern: str                       #: regular expression on the function name
    reason: str
    boards: tuple[str, ...] = ()


#: Derived by reading which device each function serves (its type's
#: ``class_init``/``realize`` and callers), not from what a run reached.
OUT_OF_REACH: tuple[OutOfReach, ...] = (
    OutOfReach("hw/sd/sdhci.c", r"^sdhci_sysbus_(unrealize|finalize)$",
               "a board's own controller is never unplugged, and QEMU does not destroy "
               "the machine's devices when it exits"),
    OutOfReach("hw/sd/sdhci.c", r"^sdhci_sysbus_",
               "the sysbus variant of the controller (ARM and other boards' SoCs)",
               ("zynq", "raspi3b", "ast2600", "fuji-emmc")),
    OutOfReach("hw/sd/sdhci.c", r"^(usdhc_|imx_usdhc_)",
               "the i.MX uSDHC register variant (device imx-usdhc)", ("mcimx7d",)),
    OutOfReach("hw/sd/sdhci.c", r"^sdhci_s3c_", "the Samsung S3C variant (device s3c-sdhci)",
               ("smdkc210",)),
    OutOfReach("hw/sd/sd.c", r"^(sd_spi_|spi_)|_spi_",
               "SPI mode: device sd-card-spi behind ssi-sd on an SSI controller, not on an "
               "SD bus (the spi group: check --board lm3s6965evb)", ("lm3s6965evb",)),
    OutOfReach("hw/sd/sd.c", r"^emmc_|_emmc|^mmc_|rpmb",
               "the eMMC device (-device emmc): reachable on sdhci-pci, but not with an "
               "SD card (measured by the eMMC groups)", ("emmc groups", "fuji-emmc")),
)


def out_of_reach(path: str, function: str, boards: bool = False) -> OutOfReach | None:
    """Why ``function`` of ``path`` is left out of the reachable set, or None;
    ``boards``: the measurement ran the boards (and the eMMC groups) too, so
    only what none of them reaches is left out."""
    for o in OUT_OF_REACH:
        if o.path == path and re.search(o.pattern, function) and not (boards and o.boards):
            return o
    return None


def reachable_rows(cov: Coverage, boards: bool = False) -> list[list[str]]:
    """Per file: the lines of functions the measured runs can reach (sdhci-pci
    with an SD card; with ``boards``, every board and the eMMC too)."""
    rows = []
    for path, f in sorted(cov.files.items()):
        total = hit = 0
        spans = [(fn.start, fn.end) for fn in f.functions.values()
                 if out_of_reach(path, fn.name, boards) is not None]
        for line, count in f.lines.items():
            if any(a <= line <= b for a, b in spans):
                continue
            total += 1
            hit += count > 0
        rows.append([path, f"{hit}/{total}", percent(hit, total),
                     str(len(spans))])
    return rows


class CoverageError(SdqtestError):
    """The build directory is not a usable coverage build, or gcov failed."""


@dataclass(frozen=True)
class FunctionCoverage:
    """One function as gcov reports it (lines are the function's own)."""

    name: str
    start: int
    end: int
    calls: int
    lines: int
    lines_hit: int

    @property
    def executed(self) -> bool:
        return self.calls > 0


@dataclass
class FileCoverage:
    """Per-line execution counts and per-line branch counts of one source file."""

    path: str                                       #: relative to the tree: hw/sd/sd.c
    source: Path | None = None                      #: the file itself, when found
    lines: dict[int, int] = field(default_factory=dict)
    branches: dict[int, list[int]] = field(default_factory=dict)
    functions: dict[str, FunctionCoverage] = field(default_factory=dict)

    @property
    def lines_hit(self) -> int:
        return sum(1 for c in self.lines.values() if c > 0)

    @property
    def branch_total(self) -> int:
        return sum(len(b) for b in self.branches.values())

    @property
    def branches_taken(self) -> int:
        return sum(1 for b in self.branches.values() for c in b if c > 0)

    def merge(self, other: FileCoverage) -> None:
        """Add ``other``'s counts (the same file compiled into another object)."""
        for line, count in other.lines.items():
            self.lines[line] = self.lines.get(line, 0) + count
        for line, counts in other.branches.items():
            mine = self.branches.setdefault(line, [0] * len(counts))
            if len(mine) == len(counts):
                self.branches[line] = [a + b for a, b in zip(mine, counts, strict=True)]
        for name, fn in other.functions.items():
            old = self.functions.get(name)
            if old is None:
                self.functions[name] = fn
            else:
                self.functions[name] = FunctionCoverage(
                    name, fn.start, fn.end, old.calls + fn.calls, fn.lines,
                    max(old.lines_hit, fn.lines_hit))


@dataclass
class Coverage:
    """The measured files, by path relative to the QEMU tree."""

    files: dict[str, FileCoverage] = field(default_factory=dict)

    def lines_hit(self) -> set[tuple[str, int]]:
        """Every executed (file, line): what a coverage-guided corpus keys on."""
        return {(f.path, n) for f in self.files.values() for n, c in f.lines.items() if c > 0}

    def never_executed(self) -> list[tuple[str, FunctionCoverage]]:
        """Functions no run called, by file and line."""
        return sorted(((f.path, fn) for f in self.files.values()
                       for fn in f.functions.values() if not fn.executed),
                      key=lambda p: (p[0], p[1].start))

    def to_json(self) -> dict[str, object]:
        return {"files": {
            p: {"lines": len(f.lines), "lines_hit": f.lines_hit,
                "branches": f.branch_total, "branches_taken": f.branches_taken,
                "functions": {fn.name: {"start": fn.start, "calls": fn.calls,
                                        "lines": fn.lines, "lines_hit": fn.lines_hit}
                              for fn in sorted(f.functions.values(), key=lambda x: x.start)}}
            for p, f in sorted(self.files.items())}}


def tree_relative(path: str, roots: Iterable[str] = SOURCES) -> str | None:
    """``../../src/qemu/hw/sd/sd.c`` -> ``hw/sd/sd.c``; None outside ``roots``."""
    norm = path.replace("\\", "/")
    for root in roots:
        i = norm.rfind("/" + root)
        if i >= 0:
            return norm[i + 1:]
        if norm.startswith(root):
            return norm
    return None


def parse_gcov_json(doc: dict[str, object], roots: Iterable[str] = SOURCES,
                    cwd: Path | None = None) -> dict[str, FileCoverage]:
    """The files under ``roots`` of one ``gcov --json-format`` document
    (source paths in it are relative to ``cwd``, the build directory)."""
    out: dict[str, FileCoverage] = {}
    files = doc.get("files")
    if not isinstance(files, list):
        raise CoverageError("gcov JSON without a 'files' list (needs GCC 9 or later)")
    for entry in files:
        rel = tree_relative(str(entry.get("file", "")), roots)
        if rel is None or not rel.endswith(".c"):
            continue
        src = Path(str(entry["file"]))
        if cwd is not None and not src.is_absolute():
            src = cwd / src
        fc = FileCoverage(rel, src.resolve() if src.is_file() else None)
        by_fn_lines: dict[str, list[int]] = {}
        for ln in entry.get("lines", []):
            n = int(ln["line_number"])
            fc.lines[n] = fc.lines.get(n, 0) + int(ln["count"])
            br = [int(b["count"]) for b in ln.get("branches", []) if not b.get("throw")]
            if br:
                fc.branches[n] = br
            fname = ln.get("function_name")
            if fname:
                by_fn_lines.setdefault(str(fname), []).append(int(ln["count"]))
        for fn in entry.get("functions", []):
            name = str(fn.get("demangled_name") or fn["name"])
            counts = by_fn_lines.get(str(fn["name"]), [])
            fc.functions[name] = FunctionCoverage(
                name, int(fn["start_line"]), int(fn["end_line"]),
                int(fn["execution_count"]), len(counts), sum(1 for c in counts if c > 0))
        if rel in out:
            out[rel].merge(fc)
        else:
            out[rel] = fc
    return out


def _load_json_output(text: str) -> list[dict[str, object]]:
    """gcov ``--stdout`` prints one JSON document per line (per object)."""
    docs = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            docs.append(json.loads(line))
    return docs


@dataclass
class CoverageBuild:
    """A QEMU build directory configured with coverage."""

    build_dir: Path
    roots: tuple[str, ...] = SOURCES
    gcov: str = "gcov"

    def __post_init__(self) -> None:
        self.build_dir = Path(self.build_dir).resolve()
        if not self.build_dir.is_dir():
            raise CoverageError(f"{self.build_dir} is not a directory")
        if not self.notes():
            raise CoverageError(
                f"{self.build_dir} has no gcov notes for {', '.join(self.roots)} "
                "(*.gcno): configure the tree with --enable-gcov (-Db_coverage=true), "
                "or build one with 'sdqtest qemu build SRC --coverage'")
        if shutil.which(self.gcov) is None:
            raise CoverageError(f"{self.gcov} not found (apt-get install gcc)")

    @property
    def binary(self) -> Path:
        return self.build_dir / "qemu-system-x86_64"

    @property
    def arm_binary(self) -> Path | None:
        """The build's ``qemu-system-aarch64`` (``qemu build --arm``), if any:
        it shares the ``hw/sd`` objects, so its runs add to the same counts."""
        p = self.build_dir / "qemu-system-aarch64"
        return p if p.is_file() else None

    def _prefixes(self) -> list[str]:
        # meson names an object after its source path with '/' as '_'
        return [r.rstrip("/").replace("/", "_") + "_" for r in self.roots]

    def notes(self) -> list[Path]:
        """The ``.gcno`` files of the measured sources, one per object."""
        pre = self._prefixes()
        return sorted(p for p in self.build_dir.glob("*.p/*.gcno")
                      if any(p.name.startswith(x) for x in pre))

    def counts(self) -> list[Path]:
        return [p.with_suffix(".gcda") for p in self.notes() if p.with_suffix(".gcda").is_file()]

    def reset(self) -> None:
        """Forget the counts of earlier runs: a new measurement starts at zero."""
        for p in self.counts():
            p.unlink()

    def measure(self) -> Coverage:
        """Read the counts now on disk (an object never run counts as zero)."""
        cov = Coverage()
        for note in self.notes():
            # Given x.c.gcno, gcov reads x.c.gcno and, if present, x.c.gcda;
            # with no counts it reports every line as not executed.
            try:
                r = subprocess.run(
                    [self.gcov, "--json-format", "--stdout", "--branch-probabilities", str(note)],
                    cwd=self.build_dir, capture_output=True, text=True,
                    timeout=GCOV_TIMEOUT, check=False)
            except subprocess.TimeoutExpired as e:
                raise CoverageError(f"gcov took over {GCOV_TIMEOUT:.0f} s on {note}") from e
            if r.returncode != 0:
                raise CoverageError(f"gcov failed on {note}: {r.stderr.strip()[-300:]}")
            for doc in _load_json_output(r.stdout):
                for path, fc in parse_gcov_json(doc, self.roots, self.build_dir).items():
                    if path in cov.files:
                        cov.files[path].merge(fc)
                    else:
                        cov.files[path] = fc
        return cov

    def environment(self, grace: float = 30.0) -> dict[str, str]:
        """Environment for runs of this build: QEMU gets time to write its counts."""
        return {**os.environ, EXIT_GRACE_ENV: str(grace)}


def read_gcov_json_file(path: Path, roots: Iterable[str] = SOURCES) -> dict[str, FileCoverage]:
    """A ``.gcov.json.gz`` written by ``gcov --json-format`` (without --stdout)."""
    with gzip.open(path, "rt") as f:
        return parse_gcov_json(json.load(f), roots)


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def summary_rows(cov: Coverage) -> list[list[str]]:
    """Per file: lines, branches, functions (executed/total and %)."""
    rows = []
    for path, f in sorted(cov.files.items()):
        fns = f.functions.values()
        hit = sum(1 for fn in fns if fn.executed)
        rows.append([path, f"{f.lines_hit}/{len(f.lines)}", percent(f.lines_hit, len(f.lines)),
                     f"{f.branches_taken}/{f.branch_total}",
                     percent(f.branches_taken, f.branch_total),
                     f"{hit}/{len(f.functions)}", percent(hit, len(f.functions))])
    return rows


def function_rows(cov: Coverage, pattern: str | None = None) -> list[list[str]]:
    """Per function (optionally those whose name matches ``pattern``)."""
    rx = re.compile(pattern) if pattern else None
    rows = []
    for path, f in sorted(cov.files.items()):
        for fn in sorted(f.functions.values(), key=lambda x: x.start):
            if rx and not rx.search(fn.name):
                continue
            rows.append([path, str(fn.start), fn.name, str(fn.calls),
                         f"{fn.lines_hit}/{fn.lines}", percent(fn.lines_hit, fn.lines)])
    return rows
