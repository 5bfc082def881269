"""A recording of an SD card in SPI mode behind SiFive's SPI controller, turned into data.

SiFive's SPI controller (FU540-C000 Manual, "Serial Peripheral Interface") has
no command register: the driver moves every byte of the SD SPI protocol (PLS
chapter 7) through ``txdata``, one 32-bit write each (Linux's ``spi-sifive``
reads ``txdata`` first for its FULL bit), and takes the card's answer from
``rxdata`` (bit 31 EMPTY); per FIFO load (8 bytes at most) it sets ``rxmark``
and waits on ``ip`` (polled, or by the interrupt: ``ie`` set, the handler
clears it).  A message starts with a ``csdef`` write (``sifive_spi_prepare_message``)
and holds the chip select with ``csmode`` HOLD.  What this module adds to the
PIO conversion (:mod:`harness.scenarios.drivers_pio`):

* **commands** are decoded from the transmitted bytes (:class:`SpiDecoder`): a
  ``0x40 | index`` byte outside a data block, its 4 argument bytes and its CRC
  byte; a write's data block (token 0xFE or 0xFC, 512 bytes, 2 CRC bytes) is
  skipped, and 0xFD (Stop Tran, PLS 7.3.3.2) ends a CMD25;
* **a request** starts with the message (its ``csdef`` write) in which the
  driver sends a command, with no multi-block transfer open (CMD18 until CMD12,
  CMD25 until Stop Tran, an erase sequence until CMD38); the RCA does not exist
  in SPI mode (no CMD3), so nothing is learnt from a response;
* **a FIFO load** ``txdata`` read-then-write pairs is one line ``t4 0x0048 V*n ...``
  (the replay reads, then writes, each byte), a run of ``rxdata`` reads is
  ``r4 0x004c *n``, the answers in its comment (``=0xff*7 0x1``: the card's
  responses, for the fidelity test) but for a read data block's bytes; the
  lines of one FIFO load repeat over a block (0xFF sent while reading, a
  pattern while writing) and are folded into ``repeat`` objects (U-Boot's
  ``spi-sifive`` makes the same kind of traffic: it reads ``fmt`` before each
  transfer and sends a command's six bytes as one load);
* **long transfers** are cut short: a multi-block request keeps its first
  :data:`BLOCKS_KEPT` data blocks, then its end (CMD12 or Stop Tran): SPI
  moves each byte by three register accesses, so a 64 KiB transfer is some
  200,000 of them.  The card cannot tell (CMD18 and CMD25 are open-ended until
  stopped, PLS 7.2.3 and 7.2.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.hwdefs import sifive_spi as SP
from harness.scenarios.drivers_convert import ConvertContext, Request, trim, with_delay, words
from harness.scenarios.drivers_hosts import HostTrace
from harness.scenarios.drivers_pio import fold, rebase
from harness.scenarios.drivers_trace import Event, TraceAccess, TraceCommand, TraceError

TX, RX = SP.TXDATA.offset, SP.RXDATA.offset
#: Start Block tokens (PLS 7.3.3.2): single-block write / multi-block write; Stop Tran.
TOKEN_SINGLE, TOKEN_MULTI, STOP_TRAN = 0xFE, 0xFC, 0xFD
#: A data block in SPI mode: 512 bytes (the block length of an SDSC card left at
#: its default, and fixed for SDHC) and a 16-bit CRC.
BLOCK_BYTES = 512 + 2
#: Data blocks a multi-block request keeps (see the module docstring).
BLOCKS_KEPT = 2
#: The widest block of lines a FIFO load repeats (an interrupt-driven load is 8).
FOLD_WIDEST = 8
_READ_MULTI, _WRITE_MULTI, _STOP, _ERASE = 18, 25, 12, 38
_ERASE_START = frozenset({32, 35})


@dataclass
class SpiDecoder:
    """The SD commands in the bytes a host sends (PLS 7.3.1.1 command format)."""

    frame: list[int] = field(default_factory=list)
    skip: int = 0              #: data block bytes still to pass over
    writing: int | None = None  #: CMD24 or CMD25 issued: a data token may follow

    def byte(self, b: int) -> TraceCommand | str | None:
        """A command completed by byte ``b``, ``"stop"`` (Stop Tran), ``"block"``
        (a write's data block begins), else None."""
        if self.skip:
            self.skip -= 1
            return None
        if self.frame:
            self.frame.append(b)
            if len(self.frame) < 6:
                return None
            index = self.frame[0] & 0x3F
            arg = int.from_bytes(bytes(self.frame[1:5]), "big")
            self.frame = []
            self.writing = index if index in (24, _WRITE_MULTI) else None
            return TraceCommand(index, arg)
        if self.writing is not None and b in (TOKEN_SINGLE, TOKEN_MULTI):
            self.skip = BLOCK_BYTES
            if b == TOKEN_SINGLE:
                self.writing = None
            return "block"
        if self.writing == _WRITE_MULTI and b == STOP_TRAN:
            self.writing = None
            return "stop"
        if b & 0xC0 == 0x40:
            self.frame = [b]
        return None


@dataclass
class Decoded:
    """A phase's accesses with a :class:`TraceCommand` after the ``txdata`` write
    that completed each command; where each command's frame, data block and Stop
    Tran began (indices into :attr:`events`)."""

    events: list[Event]
    frames: dict[int, int]   #: TraceCommand index -> its first byte's txdata write
    blocks: list[int]        #: txdata writes that start a data block (read or write)
    stops: set[int]          #: txdata writes of Stop Tran
    data_reads: set[int] = field(default_factory=set)  #: rxdata reads of a block's bytes


def decode(events: Sequence[Event]) -> Decoded:
    """The commands, write data blocks and Stop Tran tokens in ``events``; a read's
    data block starts at the ``rxdata`` read of its Start Block token (0xFE)."""
    dec = SpiDecoder()
    out: list[Event] = []
    frames: dict[int, int] = {}
    blocks: list[int] = []
    stops: set[int] = set()
    data_reads: set[int] = set()
    first = -1
    reading = False
    left = 0  # bytes of a read's data block still to come
    for ev in events:
        out.append(ev)
        if not isinstance(ev, TraceAccess):
            continue
        if ev.kind == "r" and ev.offset == RX:
            if left:
                left -= 1
                data_reads.add(len(out) - 1)
            elif reading and ev.value & 0xFF == TOKEN_SINGLE:
                blocks.append(len(out) - 1)
                left = BLOCK_BYTES
        if ev.kind != "w" or ev.offset != TX:
            continue
        if not dec.frame and not dec.skip and ev.value & 0xC0 == 0x40:
            first = len(out) - 1
        got = dec.byte(ev.value & 0xFF)
        if isinstance(got, TraceCommand):
            frames[len(out)] = first
            out.append(got)
            reading = got.index in (17, _READ_MULTI)
        elif got == "block":
            blocks.append(len(out) - 1)
        elif got == "stop":
            stops.add(len(out) - 1)
    return Decoded(out, frames, blocks, stops, data_reads)


def _message_start(events: Sequence[Event], before: int, after: int) -> int:
    """The last ``csdef`` write (a message's start) in ``[after, before]``, else ``before``
    backed up over the ``txdata`` read that precedes it."""
    for i in range(before, after - 1, -1):
        ev = events[i]
        if isinstance(ev, TraceAccess) and ev.kind == "w" and ev.offset == SP.CSDEF.offset:
            return i
    prev = events[before - 1] if before > 0 else None
    if isinstance(prev, TraceAccess) and prev.kind == "r" and prev.offset == TX:
        return before - 1
    return before


def requests(d: Decoded) -> list[Request]:
    """The phase cut into requests (see the module docstring)."""
    cuts = [0]
    open_multi = False
    for i, ev in enumerate(d.events):
        if i in d.stops:
            open_multi = False
        if not isinstance(ev, TraceCommand):
            continue
        if not open_multi:
            cut = _message_start(d.events, d.frames[i], cuts[-1])
            if cut > cuts[-1]:
                cuts.append(cut)
        if ev.index in (_READ_MULTI, _WRITE_MULTI) or ev.index in _ERASE_START:
            open_multi = True
        elif ev.index in (_STOP, _ERASE):
            open_multi = False
    cuts.append(len(d.events))
    return [Request(list(d.events[a:b])) for a, b in zip(cuts, cuts[1:], strict=False)
            if b > a]


def shorten(req: Request, keep: int = BLOCKS_KEPT) -> tuple[Request, int]:
    """A multi-block request with its data blocks after the first ``keep`` left out;
    the number left out.  A read's cut runs from the end of block ``keep`` (its
    CRC's last byte) to the end of the last block, so the card is where it was
    when CMD12 came (ssi-sd's next block not begun); a write's from the exchange
    that ends block ``keep`` (its busy poll) to the one before Stop Tran."""
    cmds = req.commands
    if not cmds or cmds[0] not in (_READ_MULTI, _WRITE_MULTI):
        return req, 0
    d = decode([e for e in req.events if not isinstance(e, TraceCommand)])
    if len(d.blocks) <= keep:
        return req, 0
    if cmds[0] == _READ_MULTI:
        ends = sorted(d.data_reads)
        last = [i for k, i in enumerate(ends) if (k + 1) % BLOCK_BYTES == 0]
        if len(last) < len(d.blocks):
            return req, 0  # the last block read short: keep it whole
        start, end = last[keep - 1] + 1, last[-1] + 1
    elif d.stops:
        start = _after_last_rx(d.events, d.blocks[keep])
        end = _after_last_rx(d.events, min(d.stops))
    else:
        return req, 0
    if end <= start:
        return req, 0
    dropped = sum(1 for b in d.blocks if start <= b < end)
    return Request(d.events[:start] + d.events[end:]), dropped


def _after_last_rx(events: Sequence[Event], i: int) -> int:
    """Just after the last ``rxdata`` read before ``i`` (the end of an exchange)."""
    for j in range(i - 1, -1, -1):
        ev = events[j]
        if isinstance(ev, TraceAccess) and ev.kind == "r" and ev.offset == RX:
            return j + 1
    return i


def _line(run: Sequence[TraceAccess], host: HostTrace, data: bool, note: str) -> str:
    """The line of one run of accesses (see the module docstring)."""
    a = run[0]
    name = host.reg_name(a.offset, a.size)
    if a.offset == TX and a.kind == "r":  # read-then-write pairs
        vals = [x.value for x in run[1::2]]
        return (f"t{a.size} {a.offset:#06x} {words(vals)}  # {name}: {len(vals)} bytes, "
                f"read ={a.value:#x}{note}")
    if a.kind == "w":
        return f"w{a.size} {a.offset:#06x} {a.value:#x}  # {name}"
    if a.offset == RX:
        what = f": {len(run)} bytes" if data else f" ={words([x.value for x in run])}"
        return f"r{a.size} {a.offset:#06x} *{len(run)}  # {name}{what}"
    if len(run) > 1 and a.value != run[-1].value:
        mask = a.value ^ run[-1].value
        return (f"u{a.size} {a.offset:#06x} {mask:#x} {run[-1].value & mask:#x} "
                f"{len(run) + 16}  # {name}: polled {len(run)} times until {run[-1].value:#x}")
    times = f" *{len(run)}" if len(run) > 1 else ""
    return f"r{a.size} {a.offset:#06x}{times}  # {name} ={a.value:#x}"


def _run_end(evs: Sequence[Event], i: int) -> int:
    """The end of the run of accesses starting at ``i``: txdata read-then-write pairs,
    reads of one register, or one write (a :class:`TraceCommand` goes with its run)."""
    a = evs[i]
    assert isinstance(a, TraceAccess)
    step = 2 if (a.kind, a.offset) == ("r", TX) else 1
    if a.kind == "w" and step == 1:
        return i + 1
    j = i
    while True:
        k = j
        while k < len(evs) and isinstance(evs[k], TraceCommand):
            k += 1
        pair = evs[k:k + step]
        if len(pair) < step or not isinstance(pair[0], TraceAccess) or (
                (pair[0].kind, pair[0].offset, pair[0].size) != (a.kind, a.offset, a.size)):
            return j
        if step == 2 and pair[0].value != a.value:  # txdata's FULL bit: one read value a line
            return j
        if step == 2 and not (isinstance(pair[1], TraceAccess) and pair[1].kind == "w"
                              and pair[1].offset == TX):
            return j
        j = k + step


def convert_phase(d: Decoded, ctx: ConvertContext, host: HostTrace) -> list[Any]:
    """The lines of one phase's kept requests, each with the time the guest let pass."""
    ops: list[Any] = []
    evs = d.events
    i = 0
    while i < len(evs):
        ev = evs[i]
        if not isinstance(ev, TraceAccess):
            i += 1
            continue
        end = max(_run_end(evs, i), i + 1)
        while end < len(evs) and isinstance(evs[end], TraceCommand):
            end += 1  # a frame that ends the run: its command goes with it
        run = [e for e in evs[i:end] if isinstance(e, TraceAccess)]
        cmds = [e for e in evs[i:end] if isinstance(e, TraceCommand)]
        note = "".join(f"; CMD{c.index} {c.arg:#x}" for c in cmds)
        delay = ev.us - ctx.last_us if ctx.last_us and ev.us else 0
        ctx.last_us = run[-1].us
        data = any(k in d.data_reads for k in range(i, end))
        ops.append(with_delay(_line(run, host, data, note), delay))
        i = end
    return ops


def convert(phases: dict[str, list[Event]], ctx: ConvertContext, per_kind: int,
            host: HostTrace) -> list[dict[str, Any]]:
    """Every phase's trimmed operations, in the recording's order."""
    out: list[dict[str, Any]] = []
    for name, evs in phases.items():
        mine = decode(rebase(evs, ctx.base, host))
        if not any(isinstance(e, TraceAccess) for e in mine.events):
            continue
        reqs = requests(mine)
        kept, dropped = trim(reqs, per_kind if name != "probe" else len(reqs))
        short = [shorten(r) for r in kept]
        flat = decode([e for r, _n in short for e in r.events
                       if not isinstance(e, TraceCommand)])
        out.append({
            "name": name,
            "recorded": {"requests": len(reqs),
                         "accesses": sum(isinstance(e, TraceAccess) for e in mine.events),
                         "commands": sum(isinstance(e, TraceCommand) for e in mine.events)},
            "kept": {"requests": len(kept), "commands": [r.kind for r in kept],
                     "blocks_left_out": sum(n for _r, n in short)},
            "dropped": dropped,
            "ops": fold(convert_phase(flat, ctx, host), FOLD_WIDEST)})
    if not out:
        raise TraceError(f"no {host.name} access between the phase marks")
    return out
