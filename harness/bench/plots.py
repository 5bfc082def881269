"""PNG plots of a bench run: one per table and unit.

Each axis carries one unit (:func:`harness.bench.units.axes`: a table's time
figures converted to one unit, any other unit on a plot of its own).  Error
bars span a figure's samples only when there are enough of them for a spread
(:data:`~harness.bench.stats.MIN_SPREAD_SAMPLES`), and the title says when
the figures are quick or too few for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.bench import units
from harness.bench.output import Figure, Run, marks, slug
from harness.bench.stats import MIN_SPREAD_SAMPLES


def plot(run: Run, out_dir: Path, stem: str) -> list[Path]:
    """One PNG per table of ``run`` and unit in ``out_dir`` (``STEM-TABLE.png``,
    ``STEM-TABLE-UNIT.png`` when the table has more than one); the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for table in run.tables():
        drawn = [f for f in run.figures if f.table == table
                 and (f.samples or "limit_s" in f.extra)]
        groups = units.axes(drawn)
        for unit, figs in groups:
            fig = _draw(plt, figs)
            fig.suptitle(f"sdqtest bench {run.part}: {table}{marks(run)} ({run.created})",
                         fontsize=10)
            fig.tight_layout()
            name = f"{stem}-{slug(table)}" + (f"-{slug(unit)}" if len(groups) > 1 else "")
            path = out_dir / f"{name}.png"
            fig.savefig(path, dpi=90)
            plt.close(fig)
            written.append(path)
    return written


def _draw(plt: Any, figs: Sequence[Figure]) -> Any:
    """A figure of lines over the block size (a panel per direction), or bars."""
    x_label = _x_label(figs)
    if x_label is None:
        fig, ax = plt.subplots(figsize=(9, 1.5 + 0.32 * len(figs)))
        _bar_plot(ax, figs)
        return fig
    panels = _panels(figs)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5),
                             sharey=True, squeeze=False)
    for ax, (title, group) in zip(axes[0], panels.items(), strict=True):
        _line_plot(ax, group, x_label)
        ax.set_title(title)
    return fig


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


def error_bar(f: Figure) -> tuple[float, float]:
    """How far below and above its median ``f``'s bar reaches: its lowest and
    highest sample, or nothing from too few samples for a spread."""
    s = f.summary
    if s is None or s.n < MIN_SPREAD_SAMPLES:
        return 0.0, 0.0
    return s.median - s.low, s.high - s.median


_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v")


def _line_plot(ax: Any, figs: Sequence[Figure], x_label: str) -> None:
    series: dict[tuple[str, str], list[tuple[float, float, tuple[float, float]]]] = {}
    for f in figs:
        s = f.summary
        assert s is not None
        rest = " ".join(str(v) for k, v in f.labels.items() if k not in (x_label, "direction"))
        series.setdefault((f.build, rest), []).append(
            (float(f.labels[x_label]), s.median, error_bar(f)))
    builds = sorted({b for b, _ in series})
    kinds = sorted({k for _, k in series})
    for (build, kind), pts in series.items():
        pts.sort()
        ki = kinds.index(kind)
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=[[p[2][0] for p in pts], [p[2][1] for p in pts]],
                    color=f"C{builds.index(build)}", linestyle=_STYLES[ki % len(_STYLES)],
                    marker=_MARKERS[ki % len(_MARKERS)], capsize=2,
                    label=f"{build} {kind}".strip())
    ax.set_xscale("log", base=2)
    ticks = sorted({float(f.labels[x_label]) for f in figs})
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("block size (KiB per request)")
    ax.set_ylabel(_one_unit(figs))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def _one_unit(figs: Sequence[Figure]) -> str:
    found = {f.unit for f in figs}
    assert len(found) == 1, f"one axis, several units: {sorted(found)}"
    return found.pop()


def _bar_plot(ax: Any, figs: Sequence[Figure]) -> None:
    unit = _one_unit(figs)
    names = [f"{f.build}: " + " ".join(str(v) for v in f.labels.values()) for f in figs]
    meds: list[float] = []
    errs: list[list[float]] = [[], []]
    over: list[int] = []
    for i, f in enumerate(figs):
        s = f.summary
        # stopped at the time limit: a hatched bar at the limit
        meds.append(units.in_unit(float(f.extra["limit_s"]), unit) if s is None else s.median)
        below, above = error_bar(f)
        errs[0].append(below)
        errs[1].append(above)
        if s is None:
            over.append(i)
    builds = sorted({f.build for f in figs})
    bars = ax.barh(range(len(figs)), meds, xerr=errs, capsize=2,
                   color=[f"C{builds.index(f.build)}" for f in figs])
    for i in over:
        bars[i].set_hatch("//")
        bars[i].set_alpha(0.5)
        proj = figs[i].extra.get("projected_s")
        text = f"over budget (> {meds[i]:g} {unit})" + (f", projected {proj:g} s" if proj else "")
        ax.text(meds[i] * 0.98, i, text, va="center", ha="right", fontsize=7)
    ax.set_yticks(range(len(figs)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    positive = [m for m in meds if m > 0]
    if positive and max(positive) / min(positive) > 1000:
        ax.set_xscale("log")
    ax.grid(True, axis="x", alpha=0.3)
