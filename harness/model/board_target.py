"""What every model target of a board controller that is not an SDHCI
shares: the Target's memory, clock and interrupt plumbing over the shared
card model.

A subclass sets ``machine``, ``profile``, ``strict``, ``clock``, ``memory``
and ``card`` up, implements :meth:`read` and :meth:`write` over its
controller, and names its interrupt line (:meth:`irq_level` and the list of
the line's changes, :meth:`_irq_changes`).  Every register read goes one by
one: each reaches a FIFO or a data path QEMU runs at the access.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.hwdefs.boards import Board, ByVariant
from harness.model.target import ModelTarget
from harness.target import check_clock_step, check_memory

__all__ = ["TARGETS", "BoardModelTarget"]

#: The model target of each non-SDHCI controller (``Board.variant``), bound
#: with ``@TARGETS.controller(variant)`` on the target's class.
TARGETS: ByVariant[type[ModelTarget]] = ByVariant("model target")


class BoardModelTarget(ModelTarget):
    """A board's own controller over the shared SD card (see the module docstring)."""

    def adopt(self, kind: str, step: Any) -> list[str]:
        """Nothing is taken from QEMU past a difference but the card image's
        bytes: the controller's registers are computed from its FIFOs and the
        card (a subclass may take more)."""
        store = getattr(self.card, "store", None)
        if kind != "irq" and step.op == "image_read" and isinstance(step.qemu, bytes) \
                and store is not None:
            store.write(int(step.args[0]), step.qemu)
            return [f"card image {int(step.args[0]):#x}+{len(step.qemu):#x}"]
        return []

    def mem_write(self, addr: int, data: bytes) -> None:
        check_memory(addr, len(data))
        self.memory.write(addr, bytes(data))

    def clock_step(self, ns: int | None = None) -> int:
        check_clock_step(ns)
        return self.clock.step(ns)

    @property
    def board(self) -> Board | None:
        return self.machine.board_def

    def irq_level(self) -> bool:
        raise NotImplementedError

    def _irq_changes(self) -> list[bool]:
        """The controller's list of its line's changes (drained by :meth:`irq_events`)."""
        raise NotImplementedError

    def irq_events(self) -> list[bool]:
        changes = self._irq_changes()
        out = list(changes)
        changes.clear()
        return out

    def irq_state(self) -> tuple[tuple[bool, ...], bool]:
        return tuple(self.irq_events()), self.irq_level()

    def reader(self, offset: int, size: int) -> Callable[[int, int], int]:
        return self.read

    def read_run(self, offset: int, size: int, count: int) -> list[int]:
        """No shortcut: a read of the data port moves data, each one by one."""
        return []

    def deviations_consulted(self) -> set[str]:
        return set(self.card.dev.consulted)

    @property
    def hung(self) -> str | None:
        return self.card.fatal

    @property
    def stop_key(self) -> str | None:
        """The ledger's QEMU bug behind :attr:`hung`."""
        return self.card.fatal_key
