"""The command tracker's shortcuts for a caller running ahead of QEMU:
``follows`` names every access ``after_op`` takes note of, and
``after_reads`` of a row of reads leaves what ``after_op`` of each would."""

from __future__ import annotations

import itertools

from harness.check.transfer import CommandTracker
from harness.hwdefs import sdhci as H


def _issued(index: int, app: bool = False) -> CommandTracker:
    t = CommandTracker()
    if app:
        t.before("write", (H.CMDREG.offset, 2, 55 << 8), 0)
    t.before("write", (H.CMDREG.offset, 2, index << 8), 1)
    return t


def _state(t: CommandTracker) -> tuple[object, ...]:
    c = t.command
    assert c is not None
    return (c.data_bytes, t.ccs)


def test_follows_every_access_after_op_takes_note_of() -> None:
    ocr = (1 << 31) | (1 << 30)  # power-up done, CCS (PLS 5.1)
    for offset, size in itertools.product(range(0, 0x60), (1, 2, 4, 8)):
        for index, app in ((41, True), (18, False)):
            t = _issued(index, app)
            before = _state(t)
            t.after_op("read", (offset, size), ocr << (8 * max(0, H.RSPREG0.offset - offset)))
            t.after_op("write", (offset, size, 0), None)
            if _state(t) != before:
                assert CommandTracker.follows(offset, size), (offset, size, index)


def test_after_reads_is_after_op_of_each() -> None:
    answers = [0x1234_5678, 0xC0FF_8000, 0]
    for offset, size in ((H.BDATA.offset, 4), (H.BDATA.offset + 2, 2), (H.RSPREG0.offset, 4),
                         (H.BDATA.offset - 2, 4), (H.NORINTSTS.offset, 4)):
        for index, app in ((41, True), (18, False)):
            one, row = _issued(index, app), _issued(index, app)
            for a in answers:
                one.after_op("read", (offset, size), a)
            row.after_reads(offset, size, answers)
            assert _state(one) == _state(row), (offset, size, index)
