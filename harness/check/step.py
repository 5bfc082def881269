"""One lockstep step: an operation and what model and QEMU answered.

Shared by the lockstep target, which records steps, and the quirk table,
which matches them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.hwdefs import layouts
from harness.hwdefs.boards import ByVariant


@dataclass(frozen=True)
class Sides:
    """What a report calls the two sides of a lockstep: the reference (the
    model in a check, the base build in a review: it answers first and
    takes the other's value) and the other (QEMU; the patched build).
    ``key`` forms (``model=``, ``qemu=``) are the labels in lower case."""

    reference: str = "model"
    other: str = "QEMU"

    def value(self, label: str) -> str:
        """``label`` before a value, aligned with the other's (``QEMU  0x1``)."""
        return f"{label:<5} "


#: A check's sides.
MODEL_QEMU = Sides()


@dataclass(frozen=True)
class Step:
    """One operation and what each side answered."""

    index: int
    op: str
    args: tuple[Any, ...]
    model: Any
    qemu: Any
    irq_model: bool
    irq_qemu: bool
    #: What the step means, when the lockstep target can tell (the command
    #: a CMDREG write issues).
    note: str = ""
    #: The interrupt line's changes during the step (True: raised), when
    #: both targets report them (:class:`harness.target.IrqEvents`).
    irq_events_model: tuple[bool, ...] = ()
    irq_events_qemu: tuple[bool, ...] = ()
    #: The register layout of the board's controller (``Board.variant``,
    #: :data:`harness.hwdefs.layouts.LAYOUTS`) that names the register an
    #: access reaches in reports; the PC's sdhci-pci: ``sdhci``.
    layout: str = "sdhci"

    @property
    def irq_differs(self) -> bool:
        """The line's level after the step, or its changes during it, differ."""
        return (self.irq_model != self.irq_qemu
                or self.irq_events_model != self.irq_events_qemu)

    def key(self) -> tuple[Any, ...]:
        """What identifies the operation regardless of its answer: equal keys
        are repetitions of one operation (collapsed in reports)."""
        args = self.args if self.op != "mem_write" else (self.args[0], len(self.args[1]))
        return (self.op, args, self.note, self.irq_differs, self.irq_events_qemu)

    def describe(self, answers: bool = True, sides: Sides = MODEL_QEMU) -> str:
        """``write CMDREG@0x0e/2 <- 0x111a`` style, with both answers if they
        differ (the other side's first, the reference's named by ``sides``);
        ``answers=False`` puts ``...`` for what the operation returned."""
        ref, other = sides.reference.lower(), sides.other.lower()
        if self.op in ("read", "write"):
            offset, size = self.args[0], self.args[1]
            regs = layouts.layout(self.layout).registers_in(offset, size)
            names = "+".join(r.name for r in regs) or "(hole)"
            where = f"{names}@{offset:#04x}/{size}"
            if self.op == "write":
                text = f"write {where} <- {self.args[2]:#x}"
            else:
                text = f"read  {where} -> {_fmt(self.qemu) if answers else '...'}"
                if answers and self.model != self.qemu:
                    text += f" ({sides.reference} {_fmt(self.model)})"
        elif self.op in ("mem_read", "image_read"):
            text = f"{self.op} {self.args[0]:#x}+{self.args[1]:#x}"
            if self.model != self.qemu:
                text += " (contents differ)"
        elif self.op == "mem_write":
            text = f"mem_write {self.args[0]:#x}+{len(self.args[1]):#x}"
        else:
            answer = _fmt(self.qemu) if answers else "..."
            text = f"{self.op} {' '.join(_fmt(a) for a in self.args)} -> {answer}"
        irq = ""
        if self.irq_events_model != self.irq_events_qemu:
            irq = (f" [IRQ events {ref}={irq_events_text(self.irq_events_model)} "
                   f"{other}={irq_events_text(self.irq_events_qemu)}]")
        elif self.irq_model != self.irq_qemu:
            irq = f" [IRQ {ref}={int(self.irq_model)} {other}={int(self.irq_qemu)}]"
        elif self.irq_events_qemu:
            irq = f" [IRQ {irq_events_text(self.irq_events_qemu)}]"
        note = f"  ({self.note})" if self.note else ""
        return f"#{self.index:<5} {text}{irq}{note}"


def irq_events_text(events: tuple[bool, ...]) -> str:
    """``raise,lower`` (or ``none``): a step's interrupt line changes."""
    return ",".join("raise" if e else "lower" for e in events) or "none"


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return f"{v:#x}"
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    return repr(v)


class StepTracker(Protocol):
    """What the lockstep asks of the follower of a controller's commands:
    the SD command in progress and the data position, for reports
    (:class:`harness.check.transfer.CommandTracker` on an SDHCI,
    :class:`harness.check.spi_transfer.SpiTracker` in SPI mode)."""

    def before(self, op: str, args: tuple[Any, ...], index: int) -> str:
        """Note an access about to run; the command it issues, if any."""

    def after(self, step: Step) -> None:
        """Note a step that ran."""

    def after_op(self, op: str, args: tuple[Any, ...], answer: Any) -> None:
        """Note an access that ran, with the model's answer."""

    def follows(self, offset: int, size: int) -> bool:
        """Whether a read at ``offset`` changes what the tracker knows."""

    def after_reads(self, offset: int, size: int, answers: list[int]) -> None:
        """Note a run of reads of one register."""

    def context(self, step: Step, sides: Sides = MODEL_QEMU) -> list[str]:
        """Lines that place ``step`` in the command in progress (the sides
        named by ``sides``)."""


#: The command follower of each non-SDHCI controller (``Board.variant``),
#: bound with ``@TRACKERS.controller(variant)`` on its class; an SDHCI's is
#: :class:`harness.check.transfer.CommandTracker`.
TRACKERS: ByVariant[Callable[[], StepTracker]] = ByVariant("command tracker")
