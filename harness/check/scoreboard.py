"""The scoreboard: every difference of a run, not only the first.

The lockstep compares each step; what no known difference explains comes
here.  With a limit of one (``--first-only``) the first difference ends the
run, as a check always did.  With a higher limit the scoreboard records the
difference, brings the reference side back in line for exactly what
differed (:meth:`Scoreboard.record` asks the reference's ``adopt``: the
model takes QEMU's register field, bytes of guest memory or of the card)
and the run goes on, until the limit of distinct differences is reached.

Every difference gets a :func:`signature`: what differed (the register
fields, the kind of memory zone, the card image, the interrupt line), the
SD command in progress and the card's state.  A difference that follows
from an earlier one of the same run is a *repeat*, counted on the earlier
one and never a new finding: the same signature again, or the same
``what`` with the same two values again (the CID that CMD2 returned, read
again through CMD10).  Across runs, machine types and builds,
:func:`findings` groups the differences by signature.

A run that went on past a difference never agrees: its verdict is the
divergence of its first difference, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.check.divergence import Divergence
from harness.check.step import MODEL_QEMU, Sides, Step
from harness.hwdefs.layouts import LAYOUTS, layout

#: Distinct differences a run records before it stops (``--max-differences``).
DEFAULT_MAX_DIFFERENCES = 16
#: Differences of any kind (repeats too) after which a run stops: a broken
#: data path repeats at every word of every block, and each repeat costs a
#: comparison and a signature.
REPEAT_LIMIT = 4096

_NUMBER = re.compile(r"0x[0-9a-fA-F]+|\b\d+\b")


def mask_numbers(text: str) -> str:
    """``text`` with every number as ``N``: addresses, values and counts
    stay out of a signature, so one bug reached many ways has one."""
    return _NUMBER.sub("N", text)

#: Harm classes, most harmful first (a review's order): data lost or wrong,
#: the device stopping, then interrupts and status, then identity.
DATA, CRASH, STATUS, IDENTITY, OTHER = "data", "crash", "status", "identity", "other"
HARM_ORDER = (DATA, CRASH, STATUS, IDENTITY, OTHER)
#: Every layout's data port, response registers and identity registers (the
#: controller's own: capabilities, version, peripheral ID), by name.
_DATA_PORTS = tuple(sorted({f"result:{lay.data_port}" for lay in LAYOUTS.values()
                            if lay.data_port}))
_RSP = {name for lay in LAYOUTS.values() for name in lay.responses}
_IDENTITY_REGS = {name for lay in LAYOUTS.values() for name in lay.identity}
#: Commands whose response or data is the card's identity and capabilities
#: (ACMD2: QEMU answers CMD2 after CMD55 as CMD2, with the CID).
_IDENTITY_COMMANDS = ("CMD2 ", "ACMD2 ", "CMD9 ", "CMD10 ", "ACMD51 ", "CMD8 ", "ACMD13 ",
                      "CMD6 ")


def what_differs(d: Divergence) -> str:
    """What differed, without addresses, values or step numbers:
    ``result:NORINTSTS.TRNSCMPL``, ``memory:the last transfer's buffer``,
    ``image``, ``irq:model=R/1,qemu=/0``; registers and fields as the step's
    layout names them (``result:MCIStatus.DataEnd`` on a PL181)."""
    s = d.step
    if d.kind == "result" and s.op == "read" and isinstance(s.model, int) \
            and isinstance(s.qemu, int):
        offset, size = int(s.args[0]), int(s.args[1])
        parts = []
        for reg in layout(s.layout).registers_in(offset, size):
            m, q = reg.part(offset, s.model), reg.part(offset, s.qemu)
            if m != q:
                names = [n for n, _, _ in reg.diff(m, q)] or ["?"]
                parts.append(f"{reg.name}.{'+'.join(sorted(names))}")
        return f"result:{','.join(parts) or 'outside-registers'}"
    if d.kind == "memory":
        zone = next((f.split(" in ", 1)[1] for f in d.fields if f.startswith("  in ")), "?")
        return f"memory:{mask_numbers(zone).strip()}"
    if d.kind == "irq":
        return (f"irq:model={''.join('RL'[not e] for e in s.irq_events_model)}"
                f"/{int(s.irq_model)},qemu={''.join('RL'[not e] for e in s.irq_events_qemu)}"
                f"/{int(s.irq_qemu)}")
    if d.kind == "result" and s.op == "image_read":
        return "image"
    return f"{d.kind}:{s.op}"


def signature(d: Divergence, command: str, card_state: str) -> str:
    """``what | command in progress | card state``: one finding's name."""
    return f"{what_differs(d)} | {command or 'no command'} | {card_state or '-'}"


def signature_text(sig: str, sides: Sides = MODEL_QEMU) -> str:
    """A signature as a reader reads it: an interrupt difference's sides
    named by ``sides`` (``irq:base=R/1,patched=/0``; the signature itself
    keeps ``model=``/``qemu=``, its names across runs and tools)."""
    what, bar, rest = sig.partition(" | ")
    if what.startswith("irq:model=") and ",qemu=" in what:
        m, q = what[len("irq:model="):].split(",qemu=", 1)
        what = f"irq:{sides.reference.lower()}={m},{sides.other.lower()}={q}"
    return what + bar + rest


def harm(sig: str) -> str:
    """The harm class of a finding signature (:data:`HARM_ORDER`)."""
    what, _, rest = sig.partition(" | ")
    command = rest.split(" | ", 1)[0]
    if what in ("image", "result:mem_read", "result:image_read") \
            or what.startswith(("memory:", *_DATA_PORTS, "crash", "hang")):
        return CRASH if what.startswith(("crash", "hang")) else DATA
    if what.startswith("result:"):
        regs = {p.split(".", 1)[0] for p in what[len("result:"):].split(",")}
        if (regs & _RSP and command.startswith(_IDENTITY_COMMANDS)) or regs <= _IDENTITY_REGS:
            return IDENTITY
        return STATUS
    if what.startswith("irq:"):
        return STATUS
    return OTHER


@dataclass
class Difference:
    """One recorded difference of a run: the decoded step, its signature,
    whether it was the run's first, how often it repeated, and what the
    reference side took from the other to go on."""

    divergence: Divergence
    signature: str
    first: bool
    repeats: int = 0
    adopted: list[str] = field(default_factory=list)
    #: QEMU's qtest trace length at this step (the reproducer's prefix).
    trace_len: int = 0
    #: Steps the whole run took (set when it ends: the shortest example).
    run_steps: int = 0

    @property
    def harm(self) -> str:
        """Its harm class (:data:`HARM_ORDER`)."""
        return harm(self.signature)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Difference, (self.divergence, self.signature, self.first, self.repeats,
                             self.adopted, self.trace_len, self.run_steps))

    def to_json(self) -> dict[str, Any]:
        return {"signature": self.signature, "first": self.first, "repeats": self.repeats,
                "adopted": self.adopted, "harm": harm(self.signature),
                "divergence": self.divergence.to_json()}


class Stopped(Exception):
    """The run reached its limit of differences (``args``: why)."""


#: ``adopt(kind, step) -> what was taken`` of the reference side
#: (:meth:`harness.model.target.ModelTarget.adopt`).
Adopt = Callable[[str, Step], list[str]]


class Scoreboard:
    """The differences of one run (see the module docstring), its sides
    named by ``sides``."""

    def __init__(self, limit: int = DEFAULT_MAX_DIFFERENCES,
                 adopt: Adopt | None = None, sides: Sides = MODEL_QEMU) -> None:
        if limit < 1:
            raise ValueError("the limit of differences is at least 1")
        self.limit = limit
        #: what the run's reports call its two sides (model and QEMU; a
        #: review's base and patched)
        self.sides = sides
        self.adopt = adopt
        self.differences: list[Difference] = []
        self.stopped = ""
        self._seen: dict[str, Difference] = {}
        self._values: dict[tuple[str, str, str], Difference] = {}
        self._count = 0

    @property
    def first_only(self) -> bool:
        return self.limit == 1

    def record(self, d: Divergence, trace_len: int) -> None:
        """Take one difference, its :attr:`Divergence.signature` set (the
        caller raises it instead when :attr:`first_only`): resynchronise
        and return, the run going on, or raise :class:`Stopped` at the limit."""
        self._count += 1
        sig = d.signature
        what = sig.split(" | ", 1)[0]
        vkey = (what, _value_text(d.step.model), _value_text(d.step.qemu))
        earlier = self._seen.get(sig) or self._values.get(vkey)
        adopted = self.adopt(d.kind, d.step) if self.adopt is not None else []
        if earlier is not None:
            earlier.repeats += 1
        else:
            diff = Difference(d, sig, not self.differences, adopted=adopted,
                              trace_len=trace_len)
            self.differences.append(diff)
            self._seen[sig] = diff
            self._values[vkey] = diff
        if len(self.differences) >= self.limit:
            self.stopped = (f"stopped after {len(self.differences)} distinct differences "
                            f"(--max-differences {self.limit})")
            raise Stopped(self.stopped)
        if self._count >= REPEAT_LIMIT:
            self.stopped = f"stopped after {self._count} differences, repeats included"
            raise Stopped(self.stopped)


def _value_text(v: Any) -> str:
    if isinstance(v, (bytes, bytearray)):
        return f"bytes:{hash(bytes(v))}"
    return repr(v)


@dataclass
class Finding:
    """One distinct difference across runs: its signature, every run that
    shows it (``(run name, difference)``), and in how many it came first."""

    signature: str
    runs: list[tuple[str, Difference]] = field(default_factory=list)

    @property
    def harm(self) -> str:
        return harm(self.signature)

    @property
    def first_in(self) -> int:
        return sum(d.first for _, d in self.runs)

    def example(self) -> tuple[str, Difference]:
        """The shortest run where it is the first difference, else the
        shortest where it comes after others (earlier ones adopted)."""
        firsts = [(n, d) for n, d in self.runs if d.first]
        pool = firsts or self.runs
        return min(pool, key=lambda nd: (nd[1].run_steps, nd[1].divergence.step.index, nd[0]))

    def to_json(self) -> dict[str, Any]:
        name, ex = self.example()
        return {"signature": self.signature, "harm": self.harm, "runs": len(self.runs),
                "first_in": self.first_in, "example": name,
                "example_step": ex.divergence.step.index,
                "example_trace": ex.divergence.trace_file}


def findings(runs: Iterable[tuple[str, Sequence[Difference]]]) -> list[Finding]:
    """The distinct findings of ``runs`` (``(run name, its differences)``),
    most harmful first, then by how many runs show them."""
    by: dict[str, Finding] = {}
    for name, diffs in runs:
        for d in diffs:
            by.setdefault(d.signature, Finding(d.signature)).runs.append((name, d))
    order = {h: i for i, h in enumerate(HARM_ORDER)}
    return sorted(by.values(), key=lambda f: (order[f.harm], -len(f.runs), f.signature))
