"""A scenario replayed against QEMU's recorded run gives the lockstep
result the live run gives, strict or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.check import runner
from harness.check.recording import Recording
from harness.qemu.builds import QemuBuild
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu


def _verdict(r: runner.Result) -> tuple[object, ...]:
    d = r.divergence
    return (r.status, r.steps, sorted(r.consulted()), r.spec_misses,
            None if d is None else (d.kind, d.step.describe(), d.fields))


@pytest.mark.parametrize("name", ["card-registers", "access-sizes"])
def test_replay_equals_live(qemu_build: QemuBuild, tmp_path: Path, name: str) -> None:
    sc = all_scenarios()[name]
    rec = Recording()
    try:
        live = runner.run(qemu_build, sc, "q35",
                          runner.RunOptions(record=rec, report_dir=tmp_path / "live"))
        if live.status == runner.SKIP:
            pytest.skip(live.reason)
        again = runner.run(qemu_build, sc, "q35",
                           runner.RunOptions(replay=rec, report_dir=tmp_path / "replay"))
        assert _verdict(again) == _verdict(live)
        for strictness in (True, frozenset({"sd.ocr-reserved-voltage-bits"})):
            live_s = runner.run(qemu_build, sc, "q35", runner.RunOptions(
                strict=strictness, report_dir=tmp_path / "live-strict"))
            replay_s = runner.run(qemu_build, sc, "q35",
                                  runner.RunOptions(strict=strictness, replay=rec,
                                                    report_dir=tmp_path / "replay-strict"))
            assert _verdict(replay_s) == _verdict(live_s)
            if live_s.divergence is not None:
                assert replay_s.divergence is not None
                live_trace = Path(live_s.divergence.trace_file).with_suffix(".qtest")
                replay_trace = Path(replay_s.divergence.trace_file).with_suffix(".qtest")
                assert replay_trace.read_text() == live_trace.read_text()
    finally:
        rec.cleanup()


def test_a_recording_on_a_reused_qemu_equals_a_fresh_one(qemu_build: QemuBuild,
                                                         tmp_path: Path) -> None:
    """Strict checks record on pooled QEMUs: a recording made on a fresh
    process, on a pooled one and on that one reused replays to the same
    verdict, with the same final card image (answers themselves differ by
    the card's random RCA on 9.1 and later)."""
    from harness.qemu.pool import QemuPool

    sc = all_scenarios()["pio-write-1"]
    recs = [Recording() for _ in range(3)]
    try:
        fresh = runner.run(qemu_build, sc, "q35",
                           runner.RunOptions(record=recs[0], report_dir=tmp_path))
        if fresh.status == runner.SKIP:
            pytest.skip(fresh.reason)
        with QemuPool() as pool:
            for rec in recs[1:]:
                runner.run(qemu_build, sc, "q35",
                           runner.RunOptions(record=rec, report_dir=tmp_path, pool=pool))
            assert pool.stats.reused == 1
        verdicts = [_verdict(runner.run(qemu_build, sc, "q35",
                                        runner.RunOptions(replay=rec, report_dir=tmp_path)))
                    for rec in recs]
        assert verdicts == [_verdict(fresh)] * 3 and fresh.status == runner.AGREE
        assert len({len(rec.calls) for rec in recs}) == 1
        images = [rec.image.read_bytes() for rec in recs if rec.image is not None]
        assert len(images) == 3 and images[1] == images[0] and images[2] == images[0]
    finally:
        for rec in recs:
            rec.cleanup()
