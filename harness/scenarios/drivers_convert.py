"""A recording boot's trace and card image, turned into the drivers group's data.

Per phase (:mod:`harness.scenarios.drivers_trace`) the controller accesses become
operations (the format is :mod:`harness.scenarios.drivers`'):

* a write stays a write, but an ARGUMENT write that addresses the card by the RCA
  it published (CMD7, 9, 10, 13, 15, 55) becomes ``a LOW``: the replay puts the RCA
  its own card published (random since QEMU 9.1) in the upper half;
* an ADMA System Address write becomes ``w4 0x58 @table`` preceded by an ``adma``
  object: the descriptors the controller fetched for that command, their buffers
  packed into the driver's DMA arena (each keeps its offset in its 4 KiB page), and
  for a write command the data it carried;
* reads of one register repeated with nothing in between, the value changing, are
  a polling loop: ``u`` (until the changing bits read as they did at the end);
  other reads stay reads, the recorded value in the comment;
* long phases are trimmed to their first requests of each kind (a request: the
  accesses from the end of one interrupt handler, NORINTSTS read as 0 with no
  multi-block transfer open, to the next).

Data of a write: DMA moves it from guest memory, which no trace event shows; it
is read from the card image after the boot at the command's card address.  That is
exactly the data the command wrote when no later command wrote the same blocks
with other data: every write phase of the recording guest writes a fixed pattern,
and the count of blocks written more than once is kept in the data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.layouts import Layout
from harness.hwdefs.layouts import layout as layout_named
from harness.scenarios.drivers_trace import (
    Event,
    TraceAccess,
    TraceCommand,
    TraceDescriptor,
    TraceError,
)

#: Commands whose argument carries the RCA in its upper half (PLS 4.7.4).
RCA_COMMANDS = S.commands(arg=S.Arg.RCA)
#: Multi-block commands: a transfer stays open until CMD12.
MULTI = frozenset(map(S.index, ("READ_MULTIPLE_BLOCK", "WRITE_MULTIPLE_BLOCK")))
STOP = S.index("STOP_TRANSMISSION")
_BLOCK_WRITES = frozenset(map(S.index, ("WRITE_BLOCK", "WRITE_MULTIPLE_BLOCK")))
_SEND_RELATIVE_ADDR = S.index("SEND_RELATIVE_ADDR")
_SD_SEND_OP_COND = S.index("SD_SEND_OP_COND", app=True)
_CMD_OFF = H.CMDREG.offset
_TRN_OFF = H.TRNMOD.offset
_ADMA_LO, _ADMA_HI = H.ADMASYSADDR.offset, H.ADMASYSADDR.offset + 4
_RSP0 = H.RSPREG0.offset
_NORINT = H.NORINTSTS.offset
#: Arena layout of rebuilt buffers: page-granular, each keeps its in-page offset.
PAGE = 0x1000


def reg_name(offset: int, size: int, layout: Layout | None = None) -> str:
    """``CLKCON``, ``NORINTSTS+ERRINTSTS``: the registers an access spans (in the
    board's ``layout``: a wrapper's registers below the SDHCI's, Aspeed's)."""
    regs = (layout.registers_in(offset, size) if layout is not None
            else H.registers_in(offset, size))
    return "+".join(r.name for r in regs) or "?"


def command_of(a: TraceAccess) -> int | None:
    """The command index an access issues (a CMDREG write, or a 4-byte write of
    TRNMOD and CMDREG together), else None."""
    if a.kind != "w":
        return None
    if a.offset == _CMD_OFF and a.size == 2:
        return (a.value >> 8) & 0x3F
    if a.offset == _TRN_OFF and a.size == 4:
        return (a.value >> 24) & 0x3F
    return None


@dataclass
class Request:
    """The events of one request (see the module docstring), with its commands."""

    events: list[Event] = field(default_factory=list)

    @property
    def commands(self) -> list[int]:
        return [e.index for e in self.events if isinstance(e, TraceCommand)]

    @property
    def kind(self) -> str:
        """The commands it sent, deduplicated in order: ``18,12``."""
        seen: list[int] = []
        for c in self.commands:
            if c not in seen:
                seen.append(c)
        return ",".join(map(str, seen))


def requests(events: Sequence[Event]) -> list[Request]:
    """``events`` cut after each NORINTSTS read of 0 with no multi-block transfer open
    (one is open from CMD18/CMD25 to CMD12, unless its Transfer Mode asked for Auto
    CMD12, SDHC 2.2.5: then the controller stops it and no CMD12 is traced)."""
    out = [Request()]
    open_multi = auto_stop = False
    for ev in events:
        out[-1].events.append(ev)
        if isinstance(ev, TraceCommand):
            open_multi = ((ev.index in MULTI and not auto_stop)
                          or (open_multi and ev.index != STOP))
        elif isinstance(ev, TraceAccess) and ev.kind == "w" and ev.offset == _TRN_OFF:
            auto_stop = (ev.value & H.TRNMOD.mask("ACMDEN")) >> 2 == 1
        elif (isinstance(ev, TraceAccess) and ev.kind == "r" and ev.offset == _NORINT
              and ev.value == 0 and not open_multi):
            out.append(Request())
    return [r for r in out if r.events]


def trim(reqs: list[Request], per_kind: int) -> tuple[list[Request], dict[str, int]]:
    """The first ``per_kind`` requests of each kind and the last request; the number
    dropped of each kind."""
    kept: list[Request] = []
    count: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for i, r in enumerate(reqs):
        n = count[r.kind] = count.get(r.kind, 0) + 1
        if n <= per_kind or i == len(reqs) - 1:
            kept.append(r)
        else:
            dropped[r.kind] = dropped.get(r.kind, 0) + 1
    return kept, dropped


@dataclass
class ConvertContext:
    """What conversion learns while it walks a recording, across phases."""

    base: int                 #: the controller's MMIO base in the recording (BAR 0)
    image: bytes              #: the card image after the boot
    recipe: images.Recipe     #: the card image before it
    fills: dict[str, bytes]   #: name -> pattern each write phase used
    rca: int = 0
    byte_addressed: bool = True
    last_cmd: int | None = None
    last_us: int = 0          #: time of the last access converted (µs, 0: none)
    #: A table's last fetched descriptor lacked End: the driver ends its tables
    #: with a descriptor of its own the controller did not fetch (Linux's nop-end).
    end_unseen: bool = False
    written: dict[int, int] = field(default_factory=dict)  #: block -> times written
    #: the check board's register layout (its wrapper's registers below the SDHCI's)
    layout: Layout = field(default_factory=lambda: layout_named("sdhci"))
    pio: bool = False         #: no DMA: every block moved through the Buffer Data Port


def window_start(layout: Layout) -> int:
    """The lowest offset of ``layout``'s Target window: 0, or below the SDHCI's
    registers where a board's wrapper has its own (Aspeed's, Cadence's HRS)."""
    return min(0, *(w.start for w in layout.windows))


def _rebase(ev: Event, base: int, low: int = 0) -> Event | None:
    """``ev`` with its offset in the controller's window (from ``low``, below 0 for
    a wrapper's registers); None for an access to another controller of the same
    kind (a board has several)."""
    if isinstance(ev, TraceAccess):
        off = ev.offset - base
        if not low <= off < H.REGISTER_WINDOW:
            return None
        return TraceAccess(ev.kind, off, ev.size, ev.value, ev.us)
    return ev


def mmio_base(events: Sequence[Event]) -> int:
    """BAR 0 of the controller: the lowest access, 256-byte aligned (the window)."""
    offs = [e.offset for e in events if isinstance(e, TraceAccess)]
    if not offs:
        raise TraceError("no controller access in the trace")
    return min(offs) & ~(H.REGISTER_WINDOW - 1)


def _accesses_until_command(events: Sequence[Event], i: int) -> int | None:
    """The command the next issuing write from ``i`` sends."""
    for ev in events[i:]:
        if isinstance(ev, TraceAccess):
            c = command_of(ev)
            if c is not None:
                return c
    return None


def _descriptors_after(events: Sequence[Event], i: int) -> tuple[list[TraceDescriptor], int]:
    """The descriptors fetched for the command issued after ``i`` (an ADMA System
    Address write): those until the next such write; and that command's index."""
    descs: list[TraceDescriptor] = []
    cmd = -1
    for ev in events[i + 1:]:
        if isinstance(ev, TraceAccess) and ev.kind == "w" and ev.offset == _ADMA_LO:
            break
        if isinstance(ev, TraceAccess) and cmd < 0 and command_of(ev) is not None:
            cmd = command_of(ev) or 0
        elif isinstance(ev, TraceDescriptor) and cmd >= 0:
            descs.append(ev)
    return descs, cmd


def _arg_before(events: Sequence[Event], i: int) -> int:
    """The last ARGUMENT written before the command issued after ``i``."""
    arg = 0
    for ev in events[i:]:
        if isinstance(ev, TraceAccess) and ev.kind == "w":
            if ev.offset == H.ARGUMENT.offset and ev.size == 4:
                arg = ev.value
            if command_of(ev) is not None:
                break
    return arg


def encode_data(data: bytes, first_block: int, recipe: images.Recipe,
                fills: dict[str, bytes]) -> list[list[Any]]:
    """``data`` (whole blocks from card block ``first_block``) as runs:
    ``["i", block, n]`` the image recipe's blocks, ``["z", n]`` zeros, ``["f", hex, n]``
    a repeated pattern, ``["s", [[offset, hex], ...]]`` one block: zeros but these
    spans (each run of blocks of one kind is one item)."""
    out: list[list[Any]] = []
    patterns = [p for p in fills.values()]
    for k in range(len(data) // images.BLOCK):
        blk = data[k * images.BLOCK:(k + 1) * images.BLOCK]
        item = _classify(blk, first_block + k, recipe, patterns)
        last = out[-1] if out else None
        if last is not None and item[0] == last[0] and item[0] in "izf" and (
                item[0] != "f" or item[1] == last[1]) and (
                item[0] != "i" or last[1] + last[2] == item[1]):
            last[-1] += 1
        else:
            out.append(item)
    return out


def _classify(blk: bytes, block: int, recipe: images.Recipe,
              patterns: list[bytes]) -> list[Any]:
    if blk == bytes(len(blk)):
        return ["z", 1]
    if recipe.pattern == "all" and blk == images.pattern_block(block):
        return ["i", block, 1]
    for p in patterns:
        if blk == (p * (len(blk) // len(p) + 1))[:len(blk)]:
            return ["f", p.hex(), 1]
    spans: list[list[Any]] = []
    i = 0
    while i < len(blk):
        if blk[i] == 0:
            i += 1
            continue
        j = i
        while j < len(blk) and (blk[j] != 0 or blk[j:j + 8] != bytes(min(8, len(blk) - j))):
            j += 1
        spans.append([i, blk[i:j].hex()])
        i = j
    return ["s", spans]


def place(descs: list[TraceDescriptor]) -> list[list[int]]:
    """``[arena offset, length, attribute]`` of each descriptor: transfer buffers
    packed page by page from the data area's start, each at its in-page offset."""
    out: list[list[int]] = []
    cursor = 0
    for d in descs:
        act = d.attr & H.ADMA_ACT_MASK
        length = d.length or 0x10000
        if act != H.ADMA_ACT_TRAN:
            out.append([-1, d.length, d.attr])  # nop/link: no buffer
            continue
        off = cursor + (d.addr & (PAGE - 1))
        out.append([off, d.length, d.attr])
        cursor = (off + length + PAGE - 1) & ~(PAGE - 1)
    return out


def adma_op(events: Sequence[Event], i: int, ctx: ConvertContext) -> dict[str, Any]:
    """The ``adma`` object for the ADMA System Address write at ``i``."""
    descs, cmd = _descriptors_after(events, i)
    op: dict[str, Any] = {"adma": place(descs), "cmd": cmd}
    if descs and not descs[-1].attr & H.ADMA_END:
        ctx.end_unseen = True
    if cmd in _BLOCK_WRITES:
        arg = _arg_before(events, i)
        first = arg // images.BLOCK if ctx.byte_addressed else arg
        total = sum(d.length or 0x10000 for d in descs
                    if d.attr & H.ADMA_ACT_MASK == H.ADMA_ACT_TRAN)
        data = ctx.image[first * images.BLOCK:first * images.BLOCK + total]
        for b in range(first, first + total // images.BLOCK):
            ctx.written[b] = ctx.written.get(b, 0) + 1
        op["block"] = first
        op["data"] = encode_data(data, first, ctx.recipe, ctx.fills)
    return op


def _same_run(a: Event, b: Event) -> bool:
    """Reads of one register, or PIO accesses of Buffer Data Port one way (each
    moves a word: a data port run is never a poll), one size."""
    return (isinstance(a, TraceAccess) and isinstance(b, TraceAccess) and a.kind == b.kind
            and (a.offset, a.size) == (b.offset, b.size)
            and (a.kind == "r" or a.offset == H.BDATA.offset))


def _read_runs(events: Sequence[Event]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of reads of one register with nothing between,
    or of PIO accesses of the Buffer Data Port (SDHC 2.2.9) one way; any other
    event is a run of one."""
    i = 0
    while i < len(events):
        j = i + 1
        while j < len(events) and _same_run(events[i], events[j]):
            j += 1
        yield i, j
        i = j


def words(values: Sequence[int]) -> str:
    """``0x5d200512*16 0x1``: the values in order, a repeated one as ``V*n``."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        out.append(f"{values[i]:#x}" + (f"*{j - i}" if j - i > 1 else ""))
        i = j
    return " ".join(out)


def data_op(run: Sequence[TraceAccess], name: str, width: int = 4) -> str:
    """A run of PIO accesses of a data port (``name``; its offset written ``width``
    characters wide): ``r4 0x20 *128`` (the words read are not kept: the lockstep
    compares them) or ``d4 0x20 V*n ...`` (the words written)."""
    a = run[0]
    body = f"*{len(run)}" if a.kind == "r" else words([x.value for x in run])
    kind = "r" if a.kind == "r" else "d"
    return f"{kind}{a.size} {a.offset:#0{width}x} {body}  # {name}: {len(run)} words"


def _read_op(run: Sequence[TraceAccess], layout: Layout | None = None) -> str:
    first, last = run[0], run[-1]
    if first.offset == H.BDATA.offset:
        return data_op(run, H.BDATA.name)
    name = reg_name(first.offset, first.size, layout)
    if len(run) > 1 and first.value != last.value:
        mask = first.value ^ last.value
        return (f"u{first.size} {first.offset:#04x} {mask:#x} {last.value & mask:#x} "
                f"{len(run) + 16}  # {name}: polled {len(run)} times until {last.value:#x}")
    times = f" *{len(run)}" if len(run) > 1 else ""
    return f"r{first.size} {first.offset:#04x}{times}  # {name} ={first.value:#x}"


def _write_op(events: Sequence[Event], i: int, a: TraceAccess, ctx: ConvertContext) -> list[Any]:
    name = reg_name(a.offset, a.size, ctx.layout)
    if a.offset == _ADMA_LO and a.size == 4:
        return [adma_op(events, i, ctx), f"w4 {a.offset:#04x} @table  # {name}"]
    if a.offset == _ADMA_HI and a.size == 4:
        return [f"w4 {a.offset:#04x} @table-hi  # {name} (high half)"]
    if a.offset == H.SDMASYSAD.offset:
        raise TraceError("the recording uses SDMA: not converted yet (ADMA2 only)")
    if a.offset == H.ARGUMENT.offset and a.size == 4 and ctx.rca and a.value >> 16 == ctx.rca:
        cmd = _accesses_until_command(events, i + 1)
        if cmd in RCA_COMMANDS:
            return [f"a {a.value & 0xFFFF:#x}  # {name}: RCA << 16 | {a.value & 0xFFFF:#x} "
                    f"for CMD{cmd}"]
    cmd = command_of(a)
    note = f" CMD{cmd}" if cmd is not None else ""
    if cmd is not None:
        ctx.last_cmd = cmd
    return [f"w{a.size} {a.offset:#04x} {a.value:#x}  # {name}{note}"]


def with_delay(op: str, us: int) -> str:
    """``op`` with ``+US``: the guest let ``us`` µs pass before the access."""
    if us <= 0:
        return op
    body, sep, comment = op.partition("  #")
    return f"{body} +{us}{sep}{comment}"


def convert_phase(events: Sequence[Event], ctx: ConvertContext) -> list[Any]:
    """The operations of one phase (controller offsets already rebased), each
    access with the time the guest let pass since the one before."""
    ops: list[Any] = []
    for start, end in _read_runs(events):
        ev = events[start]
        if not isinstance(ev, TraceAccess):
            continue
        delay = ev.us - ctx.last_us if ctx.last_us and ev.us else 0
        run = [e for e in events[start:end] if isinstance(e, TraceAccess)]
        ctx.last_us = run[-1].us
        if ev.kind == "r":
            ops.append(with_delay(_read_op(run, ctx.layout), delay))
            if ev.offset == _RSP0 and ev.size == 4 and ctx.last_cmd == _SEND_RELATIVE_ADDR:
                ctx.rca = ev.value >> 16
            if ev.offset == _RSP0 and ev.size == 4 and ctx.last_cmd == _SD_SEND_OP_COND:
                ctx.byte_addressed = not ev.value & (1 << 30)  # OCR CCS (PLS 5.1)
        elif ev.offset == H.BDATA.offset:
            ops.append(with_delay(data_op(run, H.BDATA.name), delay))
        else:
            made = _write_op(events, start, ev, ctx)
            at = next(i for i, o in enumerate(made) if isinstance(o, str))
            made[at] = with_delay(made[at], delay)
            ops += made
    return ops


def convert(phases: dict[str, list[Event]], image: Path, recipe: images.Recipe,
            fills: dict[str, bytes], per_kind: int, base: int | None = None,
            layout: Layout | None = None) -> tuple[list[dict[str, Any]], ConvertContext]:
    """Every phase's trimmed operations, in the recording's order, and what was learnt;
    the controller at ``base`` (default: the only one the trace shows), its Target
    window the board's ``layout`` (default: the SDHCI's 256 bytes)."""
    every = [e for evs in phases.values() for e in evs]
    base = mmio_base(every) if base is None else base
    ctx = ConvertContext(base, image.read_bytes(), recipe, fills)
    if layout is not None:
        ctx.layout = layout
    low = window_start(ctx.layout)
    out: list[dict[str, Any]] = []
    for name, evs in phases.items():
        mine = [r for r in (_rebase(e, base, low) for e in evs) if r is not None]
        if not any(isinstance(e, TraceAccess) for e in mine):
            continue  # a phase that did nothing with the card (no fio in the guest)
        reqs = requests(mine)
        kept, dropped = trim(reqs, per_kind if name != "probe" else len(reqs))
        flat = [e for r in kept for e in r.events]
        ops = convert_phase(flat, ctx)
        out.append({
            "name": name,
            "recorded": {"requests": len(reqs), "accesses":
                         sum(isinstance(e, TraceAccess) for e in evs),
                         "commands": sum(isinstance(e, TraceCommand) for e in evs)},
            "kept": {"requests": len(kept), "commands": [r.kind for r in kept]},
            "dropped": dropped, "ops": ops})
    return out, ctx


def dump(rec: dict[str, Any]) -> str:
    """``rec`` as JSON for review in a diff: one operation per line, the rest indented."""
    phases = rec["phases"]
    head = {k: v for k, v in rec.items() if k != "phases"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "phases": [\n'
    parts = []
    for ph in phases:
        meta = {k: v for k, v in ph.items() if k != "ops"}
        body = ",\n".join("   " + json.dumps(op, separators=(",", ":")) for op in ph["ops"])
        parts.append("  " + json.dumps(meta)[:-1] + ', "ops": [\n' + body + "\n  ]}")
    return text + ",\n".join(parts) + "\n ]\n}\n"
