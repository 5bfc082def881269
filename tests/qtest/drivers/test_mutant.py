"""The drivers mutant set: each mutant applies to the source releases at hand, is
checked by the drivers group, and expects the line that group's report prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bisect import mutants
from harness.bisect.mutants_drivers import DRIVERS
from harness.check.report import real_drivers
from harness.check.scoreboard import Finding
from harness.paths import cache_dir
from harness.scenarios import drivers


def test_each_mutant_is_checked_by_the_drivers_group() -> None:
    assert DRIVERS and len({m.name for m in DRIVERS}) == len(DRIVERS)
    for m in DRIVERS:
        assert m.check_args == ("--group", drivers.GROUP) and m.path.startswith("hw/sd/")
        assert m.replacement.count("\n") == 1  # one line


def test_the_expected_text_is_what_a_recordings_divergence_prints() -> None:
    name = drivers.recordings()[0]["name"]
    f = Finding(signature="x")
    f.runs.append((f"[11.1 q35] {name}", None))  # type: ignore[arg-type]
    lines = real_drivers(f)
    assert len(lines) == 1 and all(lines[0].startswith(m.expect) for m in DRIVERS)


def test_the_anchors_match_once_in_each_source_release_at_hand() -> None:
    trees = sorted((cache_dir() / "source").glob("*/src/hw/sd"))
    if not trees:
        pytest.skip("no QEMU source release unpacked (sdqtest qemu build VERSION --fetch-only)")
    for tree in trees:
        for m in DRIVERS:
            text = (Path(tree).parent.parent / m.path).read_text()
            assert mutants.applicable(m, text), (tree, m.name)
