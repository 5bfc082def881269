"""Benchmark results: figures with their samples, tables, JSON, PNG plots, compare.

A run is a :class:`Run`: the part (``data``, ``erase``, ``harness``), when
and where it ran, each build's identity, every :class:`Figure` with all its
samples, and free-text notes.  ``write_json``/``read_json`` round-trip it;
``plot`` draws one PNG per table; ``compare`` prints ratios between two runs
or two builds of one run.
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

from harness.bench.stats import Summary, summarize

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
    s = f.summary
    if s is None:
        return f.status
    spread = (s.high - s.low) / s.median * 50 if s.median else 0.0
    return f"{fmt_value(s.median)} ±{spread:.0f}%"


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
        print(f"\n== {table} ==", file=out)
        print_table(head, rows, out, right=[len(label_names) + 1])
    for n in run.notes:
        print(f"note: {n}", file=out)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return fmt_value(v)
    return str(v)


# -- plots ------------------------------------------------------------------------


def plot(run: Run, out_dir: Path, stem: str) -> list[Path]:
    """One PNG per table of ``run`` in ``out_dir``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for table in run.tables():
        figs = [f for f in run.figures if f.table == table
                and (f.samples or "limit_s" in f.extra)]
        if not figs:
            continue
        x_label = _x_label(figs)
        if x_label is not None:
            panels = _panels(figs)
            fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5),
                                     sharey=True, squeeze=False)
            for ax, (title, group) in zip(axes[0], panels.items(), strict=True):
                _line_plot(ax, group, x_label)
                ax.set_title(title)
        else:
            fig, ax = plt.subplots(figsize=(9, 1.5 + 0.32 * len(figs)))
            _bar_plot(ax, figs)
        fig.suptitle(f"sdqtest bench {run.part}: {table} ({run.created})", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"{stem}-{_slug(table)}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def _x_label(figs: Sequence[Figure]) -> str | None:
    """The numeric label to put on the x axis (block size), if every figure has it."""
    for name in ("block_kib",):
        if all(isinstance(f.labels.get(name), int | float) for f in figs):
            return name
    return None


def _panels(figs: Sequence[Figure]) -> dict[str, list[Figure]]:
    """One panel per direction (when figures have one), else a single panel."""
    out: dict[str, list[Figure]] = {}
    for f in figs:
        out.setdefault(str(f.labels.get("direction", "")), []).append(f)
    return out


_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v")


def _line_plot(ax: Any, figs: Sequence[Figure], x_label: str) -> None:
    series: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for f in figs:
        s = f.summary
        assert s is not None
        rest = " ".join(str(v) for k, v in f.labels.items() if k not in (x_label, "direction"))
        series.setdefault((f.build, rest), []).append(
            (float(f.labels[x_label]), s.median, s.low, s.high))
    builds = sorted({b for b, _ in series})
    kinds = sorted({k for _, k in series})
    for (build, kind), pts in series.items():
        pts.sort()
        xs = [p[0] for p in pts]
        ki = kinds.index(kind)
        ax.errorbar(xs, [p[1] for p in pts],
                    yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                    color=f"C{builds.index(build)}", linestyle=_STYLES[ki % len(_STYLES)],
                    marker=_MARKERS[ki % len(_MARKERS)], capsize=2,
                    label=f"{build} {kind}".strip())
    ax.set_xscale("log", base=2)
    ticks = sorted({float(f.labels[x_label]) for f in figs})
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("block size (KiB per request)")
    ax.set_ylabel(figs[0].unit)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _bar_plot(ax: Any, figs: Sequence[Figure]) -> None:
    names = [f"{f.build}: " + " ".join(str(v) for v in f.labels.values()) for f in figs]
    meds = []
    errs: list[list[float]] = [[], []]
    over: list[int] = []
    for i, f in enumerate(figs):
        s = f.summary
        if s is None:  # stopped at the time limit: a hatched bar at the limit
            meds.append(float(f.extra["limit_s"]))
            errs[0].append(0.0)
            errs[1].append(0.0)
            over.append(i)
            continue
        meds.append(s.median)
        errs[0].append(s.median - s.low)
        errs[1].append(s.high - s.median)
    builds = sorted({f.build for f in figs})
    colors = [f"C{builds.index(f.build)}" for f in figs]
    bars = ax.barh(range(len(figs)), meds, xerr=errs, color=colors, capsize=2)
    for i in over:
        bars[i].set_hatch("//")
        bars[i].set_alpha(0.5)
        proj = figs[i].extra.get("projected_s")
        text = f"over budget (> {meds[i]:g} s)" + (f", projected {proj:g} s" if proj else "")
        ax.text(meds[i] * 0.98, i, text, va="center", ha="right", fontsize=7)
    ax.set_yticks(range(len(figs)), names, fontsize=7)
    ax.invert_yaxis()
    units = sorted({f.unit for f in figs})
    ax.set_xlabel(", ".join(units))
    positive = [m for m in meds if m > 0]
    if positive and max(positive) / min(positive) > 1000:
        ax.set_xscale("log")
    ax.grid(True, axis="x", alpha=0.3)


def _slug(text: str) -> str:
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
