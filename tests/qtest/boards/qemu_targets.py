"""One board's QEMU under qtest for the board tests: the machine as the check
starts it (:meth:`harness.machine.Machine.for_board`), a blank 16 MiB card,
and a skip naming the build when it has no such machine type."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.hwdefs.boards import Board
from harness.machine import CardImage, Machine
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget


def board_target(board: Board, build: QemuBuild, tmp_path: Path) -> QemuTarget:
    """``board`` on ``build`` with a blank card in ``tmp_path``."""
    if not build.offers(board.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {board.machine}")
    img = tmp_path / "card.img"
    with img.open("wb") as f:
        f.truncate(16 << 20)
    return QemuTarget(build.binary, Machine.for_board(board.name, image=CardImage(img)),
                      name=build.name)
