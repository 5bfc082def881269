"""Builds probed at once answer as those probed one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.qemu import builds
from harness.qemu.builds import QemuBuild

pytestmark = pytest.mark.qemu


def test_probed_at_once_as_one_by_one(qemu_build: QemuBuild) -> None:
    items: list[tuple[str | Path, str | None]] = [(qemu_build.binary, "a"),
                                                  (qemu_build.binary, None)]
    builds._memo.clear()
    got = builds.probe_all(items)
    assert [b.name for b in got] == ["a", str(qemu_build.binary)]
    builds._memo.clear()
    assert got[0].profile == builds.probe(qemu_build.binary, "a").profile


def test_a_binary_that_fails_raises_as_probe_does(qemu_build: QemuBuild,
                                                  tmp_path: Path) -> None:
    bad = tmp_path / "qemu-system-x86_64"
    bad.write_text("#!/bin/sh\nexit 1\n")
    bad.chmod(0o755)
    with pytest.raises(builds.BuildError, match="cannot probe"):
        builds.probe_all([(qemu_build.binary, None), (bad, None)])
