"""``sdqtest bench report``: the figures page says what the result files hold."""

from __future__ import annotations

import io
from pathlib import Path
from unittest import mock

import pytest

from harness.bench import output, plots, report, units
from harness.bench.output import Figure, Run
from harness.bench.stats import summarize


def _run(part: str, created: str, value: float) -> Run:
    return Run(part, builds=[{"name": "11.1", "version": "11.1.3", "package": "Debian x"}],
               figures=[Figure("throughput", "11.1", {"mode": "pio"}, "MiB/s", [value])],
               created=created, host={"cores": 2, "memory_gib": 4.0, "platform": "P",
                                      "python": "3.11", "loadavg_at_start": [1.5, 2.0, 2.5]})


def test_the_newest_result_of_each_part_is_written_with_its_context(tmp_path: Path) -> None:
    res = tmp_path / "results"
    output.write_json(_run("data", "2026-01-01T00:00:00Z", 1.0), res / "data-old.json")
    output.write_json(_run("data", "2026-02-01T00:00:00Z", 7.25), res / "data-new.json")
    (res / "data-new-throughput.png").write_bytes(b"png")
    (res / "broken.json").write_text("{")
    page = report.write(res, tmp_path / "docs" / "figures.md")
    text = page.read_text()
    assert "2026-02-01T00:00:00Z" in text and "2026-01-01" not in text
    assert "load average at start 1.5, 2.0, 2.5" in text and "2 cores" in text
    assert "| 11.1 | 11.1.3 | Debian x |" in text and "| 11.1 | pio | 7.25" in text
    assert (tmp_path / "docs" / "figures" / "data-new-throughput.png").is_file()
    assert "figures/data-new-throughput.png" in text
    assert "## `sdqtest bench erase`" not in text


def test_no_results_says_so(tmp_path: Path) -> None:
    text = report.write(tmp_path, tmp_path / "f.md").read_text()
    assert "No bench results" in text


def _samples(n: int, quick: bool = False) -> Run:
    run = _run("harness", "2026-03-01T00:00:00Z", 1.0)
    run.figures = [Figure("throughput", "11.1", {"mode": m}, "MiB/s",
                          [2.0 + i / 10 for i in range(n)]) for m in ("pio", "adma2")]
    run.options = {"quick": quick, "repeats": n}
    return run


def test_one_sample_has_no_spread(tmp_path: Path) -> None:
    assert [output.fmt_summary(f) for f in _samples(1).figures] == ["2.00 (1 sample)"] * 2
    assert output.fmt_summary(_samples(2).figures[0]) == "2.05 (2 samples)"
    assert output.fmt_summary(_samples(3).figures[0]) == "2.10 ±5%"
    assert summarize([5.0]).fmt(" ms") == "5 ms (1 sample)"
    assert summarize([4.0, 5.0, 6.0]).fmt(" ms") == "5 ms ±20%"
    output.write_json(_samples(1), tmp_path / "harness-1.json")
    text = report.write(tmp_path, tmp_path / "f.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| 11.1 |")]
    assert len(rows) == 3 and not any("±" in r for r in rows)
    assert "| 11.1 | pio | 2.00 (1 sample) | MiB/s |" in rows


def test_quick_figures_are_marked_quick(tmp_path: Path) -> None:
    output.write_json(_samples(1, quick=True), tmp_path / "harness-1.json")
    text = report.write(tmp_path, tmp_path / "f.md").read_text()
    assert "## `sdqtest bench harness` (quick, 1 sample)" in text
    assert "### throughput (quick, 1 sample)" in text
    buf = io.StringIO()
    output.print_run(_samples(3, quick=True), buf)
    assert "== throughput (quick) ==" in buf.getvalue()
    output.write_json(_samples(3), tmp_path / "harness-1.json")
    text = report.write(tmp_path, tmp_path / "f.md").read_text()
    assert "## `sdqtest bench harness`\n" in text and "### throughput\n" in text


def _op(op: str, unit: str, value: float, table: str = "time per operation") -> Figure:
    return Figure(table, "11.1", {"op": op}, unit, [value], False)


def test_one_unit_per_axis() -> None:
    figs = [_op("CMD13", "us", 1541.0), _op("ADMA2 read 128 KiB", "ms", 52.6),
            _op("speedup", "x", 3.0)]
    groups = units.axes(figs)
    assert [(u, [f.labels["op"] for f in fs]) for u, fs in groups] == [
        ("ms", ["CMD13", "ADMA2 read 128 KiB"]), ("x", ["speedup"])]
    ax = mock.MagicMock()
    plots._bar_plot(ax, groups[0][1])
    lengths = ax.barh.call_args.args[1]
    assert lengths == pytest.approx([1.541, 52.6]) and lengths[1] > lengths[0]
    assert ax.barh.call_args.kwargs["xerr"] == [[0.0, 0.0], [0.0, 0.0]]  # 1 sample each
    ax.set_xlabel.assert_called_once_with("ms")
    with pytest.raises(AssertionError, match="several units"):
        plots._bar_plot(mock.MagicMock(), figs[:2])


def test_an_over_budget_bar_is_drawn_in_the_axis_unit() -> None:
    over = Figure("erase", "11.1", {"range": "2 GiB"}, "ms", [], False, {"limit_s": 60.0},
                  "over budget")
    ax = mock.MagicMock()
    plots._bar_plot(ax, [_op("16 MiB", "ms", 900.0, "erase"), over])
    assert ax.barh.call_args.args[1] == pytest.approx([900.0, 60000.0])


def test_a_table_in_two_units_is_two_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = _run("harness", "2026-03-01T00:00:00Z", 1.0)
    run.figures = [_op("CMD13", "us", 1541.0), _op("ADMA2", "ms", 52.6),
                   _op("speedup", "x", 3.0)]
    files = plots.plot(run, tmp_path, "r")
    assert [p.name for p in files] == ["r-time-per-operation-ms.png",
                                       "r-time-per-operation-x.png"]


def test_the_plots_of_earlier_results_are_removed(tmp_path: Path) -> None:
    res, figs = tmp_path / "results", tmp_path / "docs" / "figures"
    figs.mkdir(parents=True)
    for old in ("data-old-throughput.png", "erase-old-erase-time.png", "logo.png"):
        (figs / old).write_bytes(b"png")
    output.write_json(_run("data", "2026-02-01T00:00:00Z", 7.25), res / "data-new.json")
    (res / "data-new-throughput.png").write_bytes(b"png")
    report.write(res, tmp_path / "docs" / "figures.md")
    assert sorted(p.name for p in figs.iterdir()) == [
        "data-new-throughput.png", "erase-old-erase-time.png", "logo.png"]
