"""``sdqtest bench report``: the figures page says what the result files hold."""

from __future__ import annotations

from pathlib import Path

from harness.bench import output, report
from harness.bench.output import Figure, Run


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
