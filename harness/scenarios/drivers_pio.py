"""A recording of a controller that is no SDHCI, turned into the drivers group's data.

The PL181, the BCM2835 SDHOST and the Allwinner SMHC (:mod:`harness.scenarios.
drivers_hosts`) are converted here; SDHCI keeps :mod:`harness.scenarios.
drivers_convert`, whose line format and trimming this module shares.  Per phase:

* the accesses of the host's regions, rebased to the board's window (the one a
  check's Target sees), in the driver's order;
* a request starts with the first access the driver makes to start one (the
  host's :attr:`~harness.scenarios.drivers_hosts.HostTrace.starts`, from the
  driver's source) after the command that ended the previous one (a multi-block
  transfer, CMD18 or CMD25, ends with CMD12 or with the host's auto stop; an
  erase sequence, CMD32 to CMD38, is one request): long phases keep their first
  requests of each kind, as for SDHCI;
* reads of one register with nothing between, the value changing, are a polling
  loop (``u``); a run of reads of a data port is ``rN OFF *COUNT`` (each moves a
  word; the answers are compared, the recorded ones are not kept); a run of writes
  to a data port is one ``dN OFF V*n V ...`` (the values the driver wrote, in order,
  a repeated value as ``V*n``): the trace holds every word PIO moved;
* an argument write that addresses the card by the RCA it published becomes
  ``a LOW`` (the replay puts its own card's RCA in the upper half).

A block of lines repeated many times (a PIO loop that reads a status register
before each FIFO word) is folded into one ``repeat`` object.  The Allwinner's
internal DMA adds ``idma`` objects (:mod:`harness.scenarios.
drivers_idma`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.scenarios.drivers_convert import (
    MULTI,
    RCA_COMMANDS,
    STOP,
    ConvertContext,
    Request,
    data_op,
    trim,
    with_delay,
)
from harness.scenarios.drivers_hosts import HostTrace
from harness.scenarios.drivers_trace import Event, TraceAccess, TraceCommand, TraceError

#: ERASE_WR_BLK_START, ERASE_WR_BLK_END, ERASE (PLS 4.3.5): kept or dropped together.
ERASE_START = frozenset({32, 35})
ERASE = 38

#: Makes the operations of a write the host treats specially (the Allwinner's DMA
#: descriptor list address, a command that moves data by DMA), else None.
Special = Callable[[Sequence[Event], int, TraceAccess, ConvertContext], "list[Any] | None"]


def rebase(events: Sequence[Event], base: int, host: HostTrace) -> list[Event]:
    """The host's accesses at their window offsets (others dropped), each command
    issue followed by a :class:`TraceCommand` with the argument written before it."""
    out: list[Event] = []
    arg = 0
    for ev in events:
        if not isinstance(ev, TraceAccess):
            out.append(ev)
            continue
        off = ev.offset - base
        if not host.keep(ev.region, off):
            continue
        a = TraceAccess(ev.kind, off, ev.size, ev.value, ev.us, ev.region)
        out.append(a)
        if a.kind == "w" and off == host.arg_reg:
            arg = a.value
        cmd = host.command(off, a.size, a.value) if a.kind == "w" else None
        if cmd is not None:
            out.append(TraceCommand(cmd, arg))
    return out


def requests(events: Sequence[Event], host: HostTrace) -> list[Request]:
    """``events`` cut where the driver starts a request: at the first of the host's
    start accesses (:attr:`HostTrace.starts`) after the command that ended the
    previous request (no multi-block transfer open), else before the next command
    issued."""
    out = [Request()]
    open_multi = False
    armed = True
    for i, ev in enumerate(events):
        nxt = events[i + 1] if i + 1 < len(events) else None
        issue = isinstance(ev, TraceAccess) and isinstance(nxt, TraceCommand)
        start = isinstance(ev, TraceAccess) and host.starts_request(ev.kind, ev.offset, ev.value)
        if armed and (start or issue):
            if out[-1].events:
                out.append(Request())
            armed = False
        out[-1].events.append(ev)
        if isinstance(ev, TraceCommand):
            before = events[i - 1]
            auto = isinstance(before, TraceAccess) and before.value & host.autostop
            if ev.index in MULTI:
                open_multi = not auto
            elif ev.index in ERASE_START:
                open_multi = True  # an erase sequence is one request, ended by CMD38
            elif ev.index in (STOP, ERASE):
                open_multi = False
            armed = not open_multi
    return [r for r in out if r.events]


def _runs(events: Sequence[Event], host: HostTrace) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of accesses of one kind at one offset and size
    that is a poll candidate (reads of a register) or a data port run; any other
    event is a run of one."""
    i = 0
    while i < len(events):
        j = i + 1
        a = events[i]
        if isinstance(a, TraceAccess) and (a.kind == "r" or a.offset in host.data_ports):
            while j < len(events):
                b = events[j]
                if not (isinstance(b, TraceAccess) and (b.kind, b.offset, b.size)
                        == (a.kind, a.offset, a.size)):
                    break
                j += 1
        yield i, j
        i = j


def _read_op(run: Sequence[TraceAccess], host: HostTrace) -> str:
    first, last = run[0], run[-1]
    name = host.reg_name(first.offset, first.size)
    if first.offset in host.data_ports:
        return data_op(run, name, 6)
    if len(run) > 1 and first.value != last.value:
        mask = first.value ^ last.value
        return (f"u{first.size} {first.offset:#06x} {mask:#x} {last.value & mask:#x} "
                f"{len(run) + 16}  # {name}: polled {len(run)} times until {last.value:#x}")
    times = f" *{len(run)}" if len(run) > 1 else ""
    return f"r{first.size} {first.offset:#06x}{times}  # {name} ={first.value:#x}"


def write_op(events: Sequence[Event], i: int, run: Sequence[TraceAccess], ctx: ConvertContext,
             host: HostTrace) -> list[Any]:
    """The operations of a write (or a run of writes to a data port) at ``i``."""
    a = run[0]
    name = host.reg_name(a.offset, a.size)
    if a.offset in host.data_ports:
        return [data_op(run, name, 6)]
    if a.offset == host.arg_reg and ctx.rca and a.value >> 16 == ctx.rca:
        cmd = next((e.index for e in events[i + 1:] if isinstance(e, TraceCommand)), None)
        if cmd in RCA_COMMANDS:
            return [f"a {a.value & 0xFFFF:#x}  # {name}: RCA << 16 | {a.value & 0xFFFF:#x} "
                    f"for CMD{cmd}"]
    cmd = host.command(a.offset, a.size, a.value)
    if cmd is not None:
        ctx.last_cmd = cmd
    note = f" CMD{cmd}" if cmd is not None else ""
    return [f"w{a.size} {a.offset:#06x} {a.value:#x}  # {name}{note}"]


def convert_phase(events: Sequence[Event], ctx: ConvertContext, host: HostTrace,
                  special: Special | None = None) -> list[Any]:
    """The operations of one phase (window offsets), each access with the time the
    guest let pass since the one before."""
    ops: list[Any] = []
    for start, end in _runs(events, host):
        ev = events[start]
        if not isinstance(ev, TraceAccess):
            continue
        delay = ev.us - ctx.last_us if ctx.last_us and ev.us else 0
        run = [e for e in events[start:end] if isinstance(e, TraceAccess)]
        ctx.last_us = run[-1].us
        if ev.kind == "r":
            ops.append(with_delay(_read_op(run, host), delay))
            if ev.offset == host.rsp0_reg and ctx.last_cmd == 3:
                ctx.rca = ev.value >> 16
            if ev.offset == host.rsp0_reg and ctx.last_cmd == 41:
                ctx.byte_addressed = not ev.value & (1 << 30)  # OCR CCS (PLS 5.1)
            continue
        made = special(events, start, ev, ctx) if special is not None else None
        if made is None:
            made = write_op(events, start, run, ctx, host)
        at = next(i for i, o in enumerate(made) if isinstance(o, str))
        made[at] = with_delay(made[at], delay)
        ops += made
    return ops


#: A block of lines repeated at least this many times (lines in all) is folded.
FOLD_MIN = 8


def _bare(op: str) -> str:
    """``op`` without its delay (``+US``)."""
    body, sep, comment = op.partition("  #")
    return " ".join(w for w in body.split() if not w.startswith("+")) + sep + comment


def _repeats(ops: Sequence[Any], i: int, k: int) -> int:
    """How many times the ``k`` lines at ``i`` repeat from ``i`` on (delays aside)."""
    block = ops[i:i + k]
    if len(block) < k or not all(isinstance(o, str) for o in block):
        return 0
    want = [_bare(o) for o in block]
    n = 1
    while all(isinstance(o, str) and _bare(o) == w
              for o, w in zip(ops[i + n * k:i + (n + 1) * k], want, strict=False)) and (
            len(ops[i + n * k:i + (n + 1) * k]) == k):
        n += 1
    return n


def fold(ops: list[Any], widest: int = 4) -> list[Any]:
    """Runs of one block of 1 to ``widest`` lines repeated (a PIO loop: U-Boot's sunxi_mmc reads
    SD_STAR before each FIFO word) as ``{"repeat": N, "ops": [...]}``, the lines
    without their delays (a few µs each: no QEMU controller's state depends on them)."""
    out: list[Any] = []
    i = 0
    while i < len(ops):
        best_k, best_n = 1, 1
        for k in range(1, widest + 1):
            n = _repeats(ops, i, k)
            if n * k > best_n * best_k and n > 1:
                best_k, best_n = k, n
        if best_n * best_k >= FOLD_MIN:
            out.append({"repeat": best_n, "ops": [_bare(o) for o in ops[i:i + best_k]]})
            i += best_n * best_k
        else:
            out.append(ops[i])
            i += 1
    return out


def convert(phases: dict[str, list[Event]], ctx: ConvertContext, per_kind: int, host: HostTrace,
            special: Special | None = None) -> list[dict[str, Any]]:
    """Every phase's trimmed operations, in the recording's order."""
    out: list[dict[str, Any]] = []
    for name, evs in phases.items():
        mine = rebase(evs, ctx.base, host)
        if not any(isinstance(e, TraceAccess) for e in mine):
            continue  # a phase that did nothing with the card
        reqs = requests(mine, host)
        kept, dropped = trim(reqs, per_kind if name != "probe" else len(reqs))
        flat = [e for r in kept for e in r.events]
        out.append({
            "name": name,
            "recorded": {"requests": len(reqs),
                         "accesses": sum(isinstance(e, TraceAccess) for e in mine),
                         "commands": sum(isinstance(e, TraceCommand) for e in mine)},
            "kept": {"requests": len(kept), "commands": [r.kind for r in kept]},
            "dropped": dropped, "ops": fold(convert_phase(flat, ctx, host, special))})
    if not out:
        raise TraceError(f"no {host.name} access between the phase marks")
    return out
