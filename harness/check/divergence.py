"""A difference of one lockstep step: :class:`Divergence`, what both the
lockstep (which raises it) and the scoreboard (which records it) speak of,
and :func:`collapse`, the history lines it shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.check.step import MODEL_QEMU, Sides, Step, irq_events_text

#: Lines of (collapsed) history a divergence report shows.
HISTORY_LINES = 30


@dataclass
class Divergence(Exception):
    """The first step where model and QEMU disagree, with its context; its
    lines name the sides as ``sides`` does (a review: base and patched)."""

    step: Step
    kind: str                      #: "result", "irq", "image", "memory" or "path"
    history: list[Step]
    fields: list[str] = field(default_factory=list)
    scenario: str = ""
    trace_file: str = ""
    #: Where the step is in the SD protocol (command, transfer position).
    context: list[str] = field(default_factory=list)
    #: What differed, the command in progress, the card state
    #: (:func:`harness.check.scoreboard.signature`).
    signature: str = ""
    sides: Sides = MODEL_QEMU

    def __post_init__(self) -> None:
        super().__init__(self.summary())

    def __reduce__(self) -> tuple[Any, ...]:
        # An exception pickles its args (the summary): rebuild from fields,
        # so a divergence crosses from a ``check -j`` worker.
        return (Divergence, (self.step, self.kind, self.history, self.fields, self.scenario,
                             self.trace_file, self.context, self.signature, self.sides))

    def summary(self, word: str = "divergence", where: bool = True) -> str:
        """``divergence in SCENARIO at step N: OPERATION`` (``word``: what
        to call it, a review says difference; ``where``: name the scenario)."""
        where_ = f" in {self.scenario}" if self.scenario and where else ""
        what = self.step.describe(sides=self.sides).split(None, 1)[1]
        return f"{word}{where_} at step {self.step.index}: {what}"

    def render(self) -> str:
        lines = [self.summary()]
        s, ref, other = self.step, self.sides.reference, self.sides.other
        if self.kind == "irq":
            if s.irq_events_model != s.irq_events_qemu:
                lines.append(
                    f"  interrupt line during the step: {ref} "
                    f"{irq_events_text(s.irq_events_model)}, "
                    f"{other} {irq_events_text(s.irq_events_qemu)}"
                )
            lines.append(
                f"  interrupt line after the step: {ref} {int(s.irq_model)}, "
                f"{other} {int(s.irq_qemu)}"
            )
        lines += [f"  {f}" for f in self.context + self.fields]
        if self.history:
            lines.append("  operations leading to it:")
            lines += [f"    {h}" for h in collapse(self.history, self.sides)[-HISTORY_LINES:]]
        if self.trace_file:
            lines.append(f"  replay on QEMU: {self.trace_file}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "step": self.step.index,
            "kind": self.kind,
            "operation": self.step.describe(),
            "irq_events": {"model": list(self.step.irq_events_model),
                           "qemu": list(self.step.irq_events_qemu)},
            "context": self.context,
            "signature": self.signature,
            "fields": self.fields,
            "history": collapse(self.history),
            "trace": self.trace_file,
        }


def collapse(steps: list[Step], sides: Sides = MODEL_QEMU) -> list[str]:
    """Each step described, runs of one repeated operation as one line with
    a count (``#12-41 read  BDATA@0x20/4 -> ... x 30``); the answer is kept
    when every repetition gave the same."""
    out: list[str] = []
    i = 0
    while i < len(steps):
        j = i + 1
        while j < len(steps) and steps[j].key() == steps[i].key():
            j += 1
        if j - i == 1:
            out.append(steps[i].describe(sides=sides))
        else:
            run = steps[i:j]
            same = all(s.model == run[0].model and s.qemu == run[0].qemu for s in run)
            text = run[0].describe(answers=same, sides=sides).split(None, 1)[1]
            out.append(f"{f'#{run[0].index}-{run[-1].index}':<6} {text} x {j - i}")
        i = j
    return out
