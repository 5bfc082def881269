"""ModelTarget.irq_events: one event per change of the line, in order."""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget


@pytest.mark.parametrize("strict", [False, True])
def test_events_are_changes_that_end_at_the_level(strict: bool) -> None:
    t = ModelTarget(strict=strict)
    level = t.irq_level()
    writes = [(H.NORINTSTSEN.offset, 4, 0xFFFF_FFFF), (H.NORINTSIGEN.offset, 4, 0xFFFF_FFFF),
              (H.FEERR.offset, 2, H.EIS_CMDTOUT), (H.ERRINTSIGEN.offset, 2, 0),
              (H.ERRINTSIGEN.offset, 2, 0xFFFF), (H.NORINTSTSEN.offset, 8, 0xFFFF_FFFF),
              (H.ERRINTSTS.offset, 2, 0xFFFF), (H.ERRINTSTS.offset, 2, 0xFFFF)]
    seen = []
    for off, size, value in writes:
        t.write(off, size, value)
        events = t.irq_events()
        for e in events:
            assert e != level  # a change, never a repeat of the level
            level = e
        assert level == t.irq_level()
        seen.append(events)
    assert seen[:3] == [[], [], [True]]  # the forced error raises the line
    assert seen[-1] == []  # nothing to clear: no event
