"""Fixtures for the harness-core tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget


@pytest.fixture
def card_image(tmp_path: Path) -> Path:
    """A 1 MiB raw image (a size QEMU accepts: a power of two)."""
    p = tmp_path / "card.img"
    with open(p, "wb") as f:
        f.truncate(1 << 20)
    return p


@pytest.fixture
def qemu_target(qemu_build: QemuBuild, card_image: Path) -> Iterator[QemuTarget]:
    with QemuTarget(qemu_build.binary, Machine(image=CardImage(card_image)),
                    name=qemu_build.name) as t:
        yield t
