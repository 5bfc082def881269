"""One lockstep step: an operation and what model and QEMU answered.

Shared by the lockstep target, which records steps, and the quirk table,
which matches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.hwdefs import sdhci


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

    def describe(self) -> str:
        """``write CMDREG@0x0e/2 <- 0x111a`` style, with both answers if they differ."""
        if self.op in ("read", "write"):
            offset, size = self.args[0], self.args[1]
            names = "+".join(r.name for r in sdhci.registers_in(offset, size)) or "(hole)"
            where = f"{names}@{offset:#04x}/{size}"
            if self.op == "write":
                text = f"write {where} <- {self.args[2]:#x}"
            else:
                text = f"read  {where} -> {_fmt(self.qemu)}"
                if self.model != self.qemu:
                    text += f" (model {_fmt(self.model)})"
        elif self.op in ("mem_read", "image_read"):
            text = f"{self.op} {self.args[0]:#x}+{self.args[1]:#x}"
            if self.model != self.qemu:
                text += " (contents differ)"
        elif self.op == "mem_write":
            text = f"mem_write {self.args[0]:#x}+{len(self.args[1]):#x}"
        else:
            text = f"{self.op} {' '.join(_fmt(a) for a in self.args)} -> {_fmt(self.qemu)}"
        irq = "" if self.irq_model == self.irq_qemu else (
            f" [IRQ model={int(self.irq_model)} qemu={int(self.irq_qemu)}]")
        note = f"  ({self.note})" if self.note else ""
        return f"#{self.index:<5} {text}{irq}{note}"


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return f"{v:#x}"
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    return repr(v)
