"""The end-of-scenario image comparison covers the whole card: every extent
the model touched and every extent where QEMU's image holds data, beyond
64 MiB and inside containers too; a limit, if reached, is stated."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check import report, runner
from harness.check.lockstep import Divergence, LockstepTarget
from harness.machine import CardImage, Machine
from harness.model.target import ModelTarget
from tests.qtest.fakes import FakeTarget

MiB = 1 << 20
CARD = 128 * MiB
FAR = 100 * MiB  # beyond the 64 MiB the comparison used to stop at


def _card(path: Path, data_mib: int) -> Path:
    """A sparse card of CARD bytes whose first ``data_mib`` MiB hold data."""
    with open(path, "wb") as f:
        f.write(b"\xa5" * (data_mib * MiB))
        f.truncate(CARD)
    return path


def _copy(source: Path) -> Path:
    """QEMU's private copy, sparse as the real target makes it."""
    copy = source.with_name("qemu.img")
    subprocess.run(["cp", "--sparse=always", str(source), str(copy)], check=True)
    return copy


def _compare(source: Path, qemu: FakeTarget, model: ModelTarget | None = None,
             limit: int = runner.IMAGE_COMPARE_LIMIT) -> str:
    model = model or ModelTarget(Machine(), image=source)
    t = LockstepTarget(model, qemu)
    return runner.compare_images(t, runner.image_spans(model, source, qemu), limit)  # type: ignore[arg-type]


def test_a_qemu_write_beyond_64_mib_after_65_mib_of_data_diverges(tmp_path: Path) -> None:
    source = _card(tmp_path / "card.img", 65)
    copy = _copy(source)
    with open(copy, "r+b") as f:
        f.seek(FAR)
        f.write(b"\x5a" * 512)
    with pytest.raises(Divergence) as ei:
        _compare(source, FakeTarget("qemu", image=copy))
    assert ei.value.step.op == "image_read" and ei.value.step.args[0] <= FAR


def test_a_model_write_where_qemu_has_a_hole_diverges(tmp_path: Path) -> None:
    source = _card(tmp_path / "card.img", 1)
    copy = _copy(source)
    model = ModelTarget(Machine(), image=source)
    assert model.card.store is not None  # type: ignore[attr-defined]
    model.card.store.write(FAR + 4096, b"\x11" * 512)  # type: ignore[attr-defined]
    with pytest.raises(Divergence):
        _compare(source, FakeTarget("qemu", image=copy), model)


@pytest.mark.skipif(shutil.which("qemu-img") is None or shutil.which("qemu-io") is None,
                    reason="needs qemu-img and qemu-io (Debian's qemu-utils)")
def test_a_qcow2_write_beyond_64_mib_diverges(tmp_path: Path) -> None:
    source = _card(tmp_path / "card.raw.img", 1)
    qcow2 = tmp_path / "card.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(source), str(qcow2)],
                   check=True)
    subprocess.run(["qemu-io", "-f", "qcow2", "-c", f"write -P 0x5a {FAR} 512", str(qcow2)],
                   check=True, capture_output=True)
    with pytest.raises(Divergence):
        _compare(source, FakeTarget("qemu", image=qcow2, image_format="qcow2"))


def test_equal_cards_agree_and_everything_is_compared(tmp_path: Path) -> None:
    source = _card(tmp_path / "card.img", 2)
    copy = _copy(source)
    assert _compare(source, FakeTarget("qemu", image=copy)) == ""


def test_what_a_limit_left_out_is_stated_in_the_result_and_report(tmp_path: Path) -> None:
    source = _card(tmp_path / "card.img", 3)
    copy = _copy(source)
    note = _compare(source, FakeTarget("qemu", image=copy), limit=1 * MiB)
    assert note and f"{2 * MiB} bytes" in note and "0x100000" in note
    res = runner.Result("b", "s", "g", "q35", runner.AGREE, not_compared=note)
    buf = io.StringIO()
    report.print_report([res], buf)
    assert note in buf.getvalue()
    assert res.to_json()["not_compared"] == note


def test_a_span_is_cut_at_the_model_s_extents() -> None:
    pieces = runner._cut([(0, 100), (200, 50)], [(10, 5), (40, 20), (90, 130)])
    assert pieces == [((0, 10), False), ((10, 5), True), ((15, 25), False), ((40, 20), True),
                      ((60, 30), False), ((90, 10), True), ((200, 20), True),
                      ((220, 30), False)]
    assert runner._cut([(0, 8)], []) == [((0, 8), False)]


def _sides(tmp_path: Path) -> tuple[Path, Path, object]:
    """A 4 MiB source filled with data, QEMU's copy of it, and a QEMU side
    naming both (no live QEMU: compared whole, as a recording is)."""
    src = tmp_path / "src.img"
    src.write_bytes(bytes(range(256)) * (4 * MiB // 256))
    copy = tmp_path / "copy.img"
    shutil.copy(src, copy)
    qemu = FakeTarget("qemu", image=copy)
    qemu.machine = Machine(image=CardImage(src))  # type: ignore[attr-defined]
    return src, copy, qemu


def test_only_what_the_model_touched_goes_through_the_lockstep(tmp_path: Path) -> None:
    """The model wrote 4 KiB inside one 4 MiB data span that QEMU's copy
    holds unchanged elsewhere: only those 4 KiB are left to compare through
    both targets (before: the whole span, 4 MiB through the model's store)."""
    src, _, qemu = _sides(tmp_path)
    got = runner.unwritten_equal([(0, 4 * MiB)], [(MiB, 4096)], src, qemu)  # type: ignore[arg-type]
    assert got == [(MiB, 4096)]


def test_a_qemu_write_beside_the_model_s_extent_is_still_compared(tmp_path: Path) -> None:
    """QEMU's copy differs at 3 MiB, where the model wrote nothing: that
    piece still goes through the lockstep (where it diverges)."""
    src, copy, qemu = _sides(tmp_path)
    with open(copy, "r+b") as f:
        f.seek(3 * MiB + 7)
        f.write(b"\xff")
    got = runner.unwritten_equal([(0, 4 * MiB)], [(MiB, 4096)], src, qemu)  # type: ignore[arg-type]
    assert got == [(MiB, 4096), (MiB + 4096, 3 * MiB - 4096)]
