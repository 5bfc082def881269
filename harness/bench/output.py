"""Benchmark results: figures with their samples, tables, JSON, PNG plots, compare.

A run is a :class:`Run`: the part (``data``, ``erase``, ``harness``), when
and where it ran, each build's identity, every :class:`Figure` with all its
samples, and free-text notes.  ``write_json``/``read_json`` round-trip it;
``compare`` prints ratios between two runs or two builds of one run
(:mod:`harness.bench.plots` draws the PNGs).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.bench.stats import MIN_SPREAD_SAMPLES, Summary, samples_text, summarize

Label = str | int | float

SCHEMA = 1


@dataclass
class Figure:
    """One measured figure of one build: ``samples`` in ``unit``.

    ``table`` groups figures into one printed table and one plot; ``labels``
    say what was measured (direction, mode, block size...); ``extra`` holds
    per-figure details (per-sample lists or single values)."""

    table: str
    build: str
    labels: dict[str, Label]
    unit: str
    samples: list[float]
    higher_is_better: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"  #: "ok", or why there is no figure ("over budget", "no property"...)
    #: ``extra`` keys printed as table columns (default: every scalar one).
    columns: list[str] | None = None

    @property
    def summary(self) -> Summary | None:
        return summarize(self.samples) if self.samples else None

    def key(self) -> tuple[str, tuple[tuple[str, Label], ...]]:
        """What identifies the figure across builds and runs."""
        return self.table, tuple(sorted(self.labels.items()))

    def to_json(self) -> dict[str, Any]:
        s = self.summary
        return {
            "table": self.table, "build": self.build, "labels": self.labels,
            "unit": self.unit, "higher_is_better": self.higher_is_better,
            "status": self.status, "samples": self.samples,
            "median": s.median if s else None, "low": s.low if s else None,
            "high": s.high if s else None, "extra": self.extra, "columns": self.columns,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Figure:
        return Figure(d["table"], d["build"], dict(d["labels"]), d["unit"],
                      [float(x) for x in d["samples"]], bool(d.get("higher_is_better", True)),
                      dict(d.get("extra", {})), str(d.get("status", "ok")), d.get("columns"))


@dataclass
class Run:
    """Everything one ``sdqtest bench PART`` run measured."""

    part: str
    builds: list[dict[str, Any]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC)
                         .strftime("%Y-%m-%dT%H:%M:%SZ"))
    host: dict[str, Any] = field(default_factory=lambda: host_info())

    def tables(self) -> list[str]:
        seen: list[str] = []
        for f in self.figures:
            if f.table not in seen:
                seen.append(f.table)
        return seen

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "part": self.part, "created": self.created,
                "host": self.host, "options": self.options, "builds": self.builds,
                "notes": self.notes, "figures": [f.to_json() for f in self.figures]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Run:
        if d.get("schema") != SCHEMA or "figures" not in d:
            raise ValueError("not an sdqtest bench result (schema 1)")
        return Run(d["part"], list(d["builds"]), [Figure.from_json(x) for x in d["figures"]],
                   list(d.get("notes", [])), dict(d.get("options", {})), str(d["created"]),
                   dict(d.get("host", {})))


def host_info() -> dict[str, Any]:
    """The machine: cores, memory, Python."""
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    return {"cores": os.cpu_count() or 0, "memory_gib": round(mem / (1 << 30), 1),
            "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}


def build_identity(build: Any) -> dict[str, Any]:
    """Name, version string, package, path and sha256 of a QemuBuild."""
    return {"name": build.name, "version": build.version, "package": build.profile.package,
            "binary": str(build.binary), "sha256": build.digest(),
            "erase_blocks_as_zero": bool(build.has_erase_blocks_as_zero)}


# -- JSON ---------------------------------------------------------------------------


def default_json_path(out_dir: Path, part: str) -> Path:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return out_dir / f"{part}-{stamp}.json"


def write_json(run: Run, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run.to_json(), indent=1) + "\n")
    return path


def read_json(path: Path) -> Run:
    return Run.from_json(json.loads(Path(path).read_text()))


# -- tables -----------------------------------------------------------------------


def print_table(head: Sequence[str], rows: Sequence[Sequence[str]],
                file: TextIO | None = None, right: Iterable[int] = ()) -> None:
    """Columns padded to width; columns in ``right`` right-aligned."""
    out = file or sys.stdout
    r_cols = set(right)
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for n, r in enumerate([head, ["-" * w for w in widths], *rows]):
        cells = [str(c).rjust(w) if i in r_cols and n != 0 else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        print("  ".join(cells).rstrip(), file=out)


def fmt_value(v: float) -> str:
    """A figure with three significant digits-ish, thousands separated."""
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_summary(f: Figure) -> str:
    """The median and its spread, or, from fewer than
    :data:`~harness.bench.stats.MIN_SPREAD_SAMPLES` samples, the median and
    how many samples it is (one sample has no spread)."""
    s = f.summary
    if s is None:
        return f.status
    if s.spread is None:
        return f"{fmt_value(s.median)} ({samples_text(s.n)})"
    return f"{fmt_value(s.median)} ±{s.spread:.0f}%"


def quick(run: Run) -> bool:
    """Whether ``run`` was measured with ``--quick`` (fewer, smaller samples)."""
    return bool(run.options.get("quick"))


def sample_counts(run: Run) -> str:
    """How many samples its figures have ("1 sample", "3 samples", "1-3 samples")."""
    ns = sorted({len(f.samples) for f in run.figures if f.samples})
    if not ns:
        return "no samples"
    return samples_text(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]} samples"


def marks(run: Run) -> str:
    """What the run's figures must be read with: " (quick, 1 sample)", "" for
    a full run whose every figure has a spread."""
    few = any(0 < len(f.samples) < MIN_SPREAD_SAMPLES for f in run.figures)
    parts = (["quick"] if quick(run) else []) + ([sample_counts(run)] if few else [])
    return f" ({', '.join(parts)})" if parts else ""


def print_run(run: Run, file: TextIO | None = None) -> None:
    """Every table of ``run``: one row per figure, labels as columns."""
    out = file or sys.stdout
    for table in run.tables():
        figs = [f for f in run.figures if f.table == table]
        label_names: list[str] = []
        extra_names: list[str] = []
        for f in figs:
            for k in f.labels:
                if k not in label_names:
                    label_names.append(k)
            for k in f.columns if f.columns is not None else list(f.extra):
                if not isinstance(f.extra.get(k), list | dict) and k not in extra_names:
                    extra_names.append(k)
        head = ["build", *label_names, "median ±spread", "unit", *extra_names]
        rows = []
        for f in figs:
            rows.append([f.build, *(str(f.labels.get(k, "")) for k in label_names),
                         fmt_summary(f), f.unit if f.samples else "",
                         *(_cell(f.extra.get(k, "")) for k in extra_names)])
        print(f"\n== {table}{marks(run)} ==", file=out)
        print_table(head, rows, out, right=[len(label_names) + 1])
    for n in run.notes:
        print(f"note: {n}", file=out)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return fmt_value(v)
    return str(v)


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


# -- compare ----------------------------------------------------------------------


def compare(a: Run, b: Run | None, builds: Sequence[str] = (),
            file: TextIO | None = None) -> int:
    """Print B/A ratios of matching figures; returns how many were compared.

    With two runs, figures match on table, labels and build (or, when the
    runs share no build name, on table and labels with builds paired in
    order).  With one run and two ``builds``, the second build is compared
    with the first."""
    out = file or sys.stdout
    pairs: list[tuple[str, Figure, Figure]] = []
    if b is None:
        if len(builds) != 2:
            raise ValueError("comparing builds of one run needs exactly two build names")
        x, y = builds
        ys = {f.key(): f for f in a.figures if f.build == y}
        for f in a.figures:
            if f.build == x and f.key() in ys:
                pairs.append((f"{x} -> {y}", f, ys[f.key()]))
        title = f"{a.part} run {a.created}: build {y} relative to {x}"
    else:
        a_builds = [d["name"] for d in a.builds] or sorted({f.build for f in a.figures})
        b_builds = [d["name"] for d in b.builds] or sorted({f.build for f in b.figures})
        if builds:
            a_builds = [n for n in a_builds if n in builds]
            b_builds = [n for n in b_builds if n in builds]
        common = [n for n in a_builds if n in b_builds]
        mapping = [(n, n) for n in common] or list(zip(a_builds, b_builds, strict=False))
        for an, bn in mapping:
            bs = {f.key(): f for f in b.figures if f.build == bn}
            for f in a.figures:
                if f.build == an and f.key() in bs:
                    pairs.append((an if an == bn else f"{an} -> {bn}", f, bs[f.key()]))
        title = f"run B ({b.part}, {b.created}) relative to run A ({a.part}, {a.created})"
    print(title, file=out)
    rows = []
    for who, fa, fb in pairs:
        sa, sb = fa.summary, fb.summary
        labels = " ".join(f"{v}" for v in fa.labels.values())
        if sa is None or sb is None or sa.median == 0:
            ratio, verdict = "-", fb.status if sb is None else fa.status
        else:
            r = sb.median / sa.median
            ratio = f"{r:.2f}x"
            better = r > 1 if fa.higher_is_better else r < 1
            verdict = "same" if abs(r - 1) < 0.05 else ("better" if better else "worse")
        rows.append([fa.table, who, labels,
                     f"{fmt_value(sa.median)} {fa.unit}" if sa else fa.status,
                     f"{fmt_value(sb.median)} {fb.unit}" if sb else fb.status, ratio, verdict])
    if rows:
        print_table(["table", "build", "what", "A", "B", "B/A", ""], rows, out, right=[3, 4, 5])
    else:
        print("no figures in common", file=out)
    return len(rows)
