"""The benchmarks measure what they say: bytes moved, erases done, results kept.

Runs are ``--quick``-sized on one build (the newest selected); no test
asserts a time.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from harness.bench import data, erase, output, plots
from harness.bench.output import Figure, Run
from harness.bench.progress import BenchProgress
from harness.pytest_plugin import selected_builds
from harness.qemu.builds import QemuBuild


@pytest.fixture(scope="module")
def build(request: pytest.FixtureRequest) -> QemuBuild:
    found = [b for b in selected_builds(request.config) if b.has_sdhci_pci]
    if not found:
        pytest.skip("no QEMU build with sdhci-pci: run 'sdqtest qemu install' or pass --sdq-qemu")
    if not found[-1].profile.has_qtest_accel:
        pytest.skip(f"QEMU {found[-1].name} has no qtest accelerator: virtual time cannot move")
    return found[-1]


def _qemu_children() -> set[int]:
    """QEMU processes whose parent is this (pytest worker) process."""
    mine = str(os.getpid())
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if "qemu-system" in stat and stat.rsplit(")", 1)[1].split()[1] == mine:
            found.add(int(pid))
    return found


@pytest.fixture
def qemu_before() -> set[int]:
    """QEMU children that were there before the test (a session-wide pool of
    reused processes in this worker, say): not the benchmark's."""
    return _qemu_children()


def _no_qemu_left(before: set[int]) -> None:
    """No QEMU child of this process started by a benchmark outlives it."""
    left = sorted(_qemu_children() - before)
    assert not left, f"QEMU processes left behind: {left}"


# -- data ---------------------------------------------------------------------------


def test_data_moves_the_bytes_it_requests(build: QemuBuild, tmp_path: Path,
                                          qemu_before: set[int]) -> None:
    res = data.run([build], sizes_kib=(4, 16), repeats=1, min_bytes=16 * 1024,
                   workdir=tmp_path)
    assert len(res.figures) == 3 * 3 * 2
    for f in res.figures:
        assert f.status == "ok", (f.labels, f.extra)
        assert f.extra["verified"] == "yes"
        assert f.extra["bytes_moved"] == f.extra["bytes_requested"] > 0
        assert f.extra["requests"] * int(f.labels["block_kib"]) * 1024 == f.extra["bytes_requested"]
        # both halves of the split are there, and they add up to the wall time
        assert f.extra["device_ms"] >= 0 and f.extra["harness_ms"] > 0
        total_ms = f.extra["device_ms"] + f.extra["harness_ms"]
        mib = int(f.labels["block_kib"]) / 1024
        assert f.samples[0] == pytest.approx(mib / (total_ms / 1000), rel=1e-3)
    assert build_row(res, build.name)["sha256"] == build.digest()
    _no_qemu_left(qemu_before)


def build_row(res: Run, name: str) -> dict[str, object]:
    (row,) = [b for b in res.builds if b["name"] == name]
    return row


def test_data_check_catches_wrong_data(build: QemuBuild, tmp_path: Path) -> None:
    """Reads compared with the wrong expected content count as mismatches."""
    image, content = data.make_image(tmp_path)
    cells = data.plan((4,), ("adma2",), ("read",), 128)
    bad = bytes(b ^ 0xFF for b in content)
    got = data.bench_build(build, image, bad, cells, 1, 4096)
    cell = got[("read", "adma2", 4)]
    assert cell.mismatches == cell.requests >= 1
    (fig,) = data.figures_of(build.name, {("read", "adma2", 4): cell})
    assert fig.status == "data mismatch" and fig.extra["verified"] == "NO"


def test_pio_driver_reads_what_the_plain_driver_reads(build: QemuBuild, tmp_path: Path) -> None:
    from harness.driver.host import HostDriver
    from harness.driver.results import Mode
    from harness.machine import CardImage, Machine
    from harness.qemu.target import QemuTarget

    image, content = data.make_image(tmp_path)
    with QemuTarget(build.binary, Machine(image=CardImage(image))) as t:
        fast = data.BenchDriver(t)
        fast.setup()
        fast.init_card()
        r1 = fast.read_blocks(3, 4, mode=Mode.PIO)
        plain = HostDriver(t)
        plain.card = fast.card
        r2 = plain.read_blocks(3, 4, mode=Mode.PIO)
        assert r1.ok and r2.ok
        assert r1.data == r2.data == content[3 * 512:7 * 512]
        w = fast.write_blocks((1 << 30) // 512, bytes(range(256)) * 8, mode=Mode.PIO)
        assert w.ok
        assert t.image_read(1 << 30, 2048) == bytes(range(256)) * 8


# -- erase --------------------------------------------------------------------------


def test_erase_really_erases(build: QemuBuild, tmp_path: Path, qemu_before: set[int]) -> None:
    res = erase.run([build], cases=erase.QUICK_CASES, repeats=1, limit=60, workdir=tmp_path)
    times = [f for f in res.figures if f.table == "erase time" and f.status == "ok"]
    assert {f.labels["format"] for f in times} >= {"raw"}
    for f in times:
        # both ends of the 16 MiB range read back erased, the data after it did not change
        assert f.extra["erased"] == "yes", f.extra
        if not build.has_erase_blocks_as_zero and f.labels["format"] == "raw":
            # 0xFF is data: the erased range is now allocated
            assert f.extra["alloc_after_mib"] >= f.extra["alloc_before_mib"] + 14
    if not build.has_erase_blocks_as_zero:
        on = [f for f in res.figures if f.labels.get(erase.PROPERTY) == "on"]
        assert on and all(f.status == "no property" and not f.samples for f in on)
    _no_qemu_left(qemu_before)


def test_erase_over_budget_is_stopped(build: QemuBuild, tmp_path: Path,
                                      qemu_before: set[int]) -> None:
    if build.has_erase_blocks_as_zero:
        pytest.skip("with erase-blocks-as-zero the erase is fast: nothing to stop")
    case = erase.Case("64 GiB", 64 << 30, 64 << 30)
    res = erase.run([build], cases=(case,), formats=("raw",), repeats=2, limit=1.0,
                    workdir=tmp_path)
    (f,) = [f for f in res.figures if f.table == "erase time" and f.samples == []
            and f.status.startswith("over budget")]
    assert f.extra["samples_s"] and len(f.extra["samples_s"]) == 1  # not repeated
    assert f.extra["alloc_after_mib"] >= f.extra["alloc_before_mib"]
    _no_qemu_left(qemu_before)


def test_allocated_counts_blocks(tmp_path: Path) -> None:
    p = tmp_path / "sparse"
    with open(p, "wb") as f:
        f.truncate(64 << 20)
    assert erase.allocated(p) < 1 << 20
    with open(p, "r+b") as f:
        f.write(b"\xff" * (4 << 20))
        f.flush()
        os.fsync(f.fileno())
    assert erase.allocated(p) >= 4 << 20


# -- JSON, compare, plots, progress ---------------------------------------------------


def _run(scale: float, builds: tuple[str, ...] = ("7.2", "11.1")) -> Run:
    r = Run("data", builds=[{"name": b, "version": b, "package": "", "binary": "/x",
                             "sha256": "0" * 64} for b in builds])
    for i, b in enumerate(builds):
        for kib in (4, 128):
            r.figures.append(Figure("throughput", b, {"direction": "read", "mode": "adma2",
                                                      "block_kib": kib}, "MiB/s",
                                    [scale * (i + 1) * kib, scale * (i + 1) * kib * 1.1]))
        r.figures.append(Figure("erase time", b, {"range": "2 GiB"}, "s", [], False,
                                {"limit_s": 60.0}, "over budget (>60 s)"))
    return r


def test_json_round_trips(tmp_path: Path) -> None:
    r = _run(1.0)
    p = output.write_json(r, tmp_path / "a.json")
    back = output.read_json(p)
    assert back.to_json() == r.to_json()
    d = json.loads(p.read_text())
    assert d["figures"][0]["samples"] == [4.0, 4.4]
    assert d["builds"][0]["sha256"] == "0" * 64 and d["host"]["cores"] >= 1
    with pytest.raises(ValueError):
        Run.from_json({"part": "x"})


def test_compare_reads_two_runs_and_two_builds(tmp_path: Path) -> None:
    a = output.write_json(_run(1.0), tmp_path / "a.json")
    b = output.write_json(_run(2.0), tmp_path / "b.json")
    buf = io.StringIO()
    n = output.compare(output.read_json(a), output.read_json(b), file=buf)
    text = buf.getvalue()
    assert n == 6 and "2.00x" in text and "better" in text
    buf = io.StringIO()
    n = output.compare(output.read_json(a), None, ["7.2", "11.1"], file=buf)
    assert n == 3 and "2.00x" in buf.getvalue()


def test_compare_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    a = output.write_json(_run(1.0), tmp_path / "a.json")
    b = output.write_json(_run(0.5), tmp_path / "b.json")
    assert main(["bench", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "0.50x" in out and "worse" in out
    assert main(["bench", "compare", str(a), "--build", "7.2", "--build", "11.1"]) == 0
    assert main(["bench", "compare", str(a)]) == 2
    (tmp_path / "bad.json").write_text("{}")
    assert main(["bench", "compare", str(tmp_path / "bad.json"), str(a)]) == 2


def test_plots_are_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    files = plots.plot(_run(1.0), tmp_path, "run")
    assert {p.name for p in files} == {"run-throughput.png", "run-erase-time.png"}
    for p in files:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_table_prints_every_figure() -> None:
    buf = io.StringIO()
    output.print_run(_run(1.0), buf)
    text = buf.getvalue()
    assert "== throughput (2 samples) ==" in text and "over budget (>60 s)" in text
    assert text.count("adma2") == 4


def test_progress_live_on_a_tty_plain_elsewhere() -> None:
    plain = io.StringIO()
    with BenchProgress("bench data", 2, stream=plain) as p:
        p.step("11.1", "read")
    assert plain.getvalue() == "sdqtest: bench data 11.1 [1/2] read\n"
    assert p.last == "bench data 11.1 [1/2] read"
    loud = io.StringIO()
    with BenchProgress("bench data", 2, stream=loud, force=True) as p:
        p.step("11.1", "read")
        p.step("11.1", "write")
    assert "\r\x1b[K" in loud.getvalue() and "[2/2] write" in loud.getvalue()
    assert loud.getvalue().endswith("\r\x1b[K")


# -- the command line -----------------------------------------------------------------


def test_bench_harness_cli_writes_json_and_plots(build: QemuBuild, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    out = tmp_path / "res"
    j = out / "h.json"
    rc = main(["bench", "harness", "--quick", "--qemu", str(build.binary), "--groups",
               "registers", "--out", str(out), "--json", str(j)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "qtest round trips" in text and "model speedup over QEMU" in text
    assert "without and with QEMU process reuse" in text
    r = output.read_json(j)
    tables = set(r.tables())
    assert {"qtest round trips", "model erase", "cross-check scenarios per second"} <= tables
    rates = [f for f in r.figures if f.table == "cross-check scenarios per second"]
    assert sorted(f.labels["qemu reuse"] for f in rates) == ["with", "without"]
    erased = [f for f in r.figures if f.table == "model erase"]
    assert {f.labels["range"] for f in erased} == {"2 MiB", "2 GiB", "64 GiB"}
    assert all(f.extra["erased"] == "yes" for f in erased)
    assert r.builds[0]["sha256"] == build.digest()
    pngs = list(out.glob("h-*.png"))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert pngs == [] and "plots skipped" in text
    else:
        assert len(pngs) == len(tables)
