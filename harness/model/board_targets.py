"""Which model target stands for a board's controller.

An SDHCI board (any register layout in :data:`harness.model.target.CONTROLLERS`)
is a :class:`~harness.model.target.ModelTarget`; a board whose controller is
not an SDHCI has a target class of its own, bound to its ``Board.variant``
by ``@TARGETS.controller`` on its class (:mod:`harness.model.board_target`).
"""

from __future__ import annotations

from harness.hwdefs.boards import Board
from harness.model.allwinner_target import AwModelTarget
from harness.model.board_target import TARGETS
from harness.model.omap_target import OmapModelTarget
from harness.model.pl181_target import Pl181ModelTarget
from harness.model.sdhost_target import SdhostModelTarget
from harness.model.sifive_spi_target import SifiveSpiModelTarget
from harness.model.spi_target import SpiModelTarget
from harness.model.target import ModelTarget

__all__ = ["TARGETS", "model_target_for"]

#: The targets, each bound to its ``Board.variant`` by its class
#: (``@TARGETS.controller``); imported here so that all are bound.
_BOUND = (SpiModelTarget, Pl181ModelTarget, AwModelTarget, SdhostModelTarget, OmapModelTarget,
          SifiveSpiModelTarget)


def model_target_for(board: Board | None) -> type[ModelTarget]:
    """The model target class of ``board``'s controller (the PC's: ``None``)."""
    if board is None:
        return ModelTarget
    return TARGETS.get(board.variant, ModelTarget)
