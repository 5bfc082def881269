"""ADMA2 descriptor tables (SD Host Controller Simplified Spec 3.00, 1.13).

A plan says where each descriptor table goes in guest memory and which data
segments the transfer descriptors point at; the controller code writes the
tables with ``mem_write`` and reads or fills the segments.  Only 32-bit ADMA2
(64-bit descriptors, 1.13.4) is built here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.hwdefs import sdhci as H

#: Largest length one ADMA2 descriptor carries; encoded as 0 (1.13.4).
ADMA2_MAX_LENGTH = 65536


@dataclass(frozen=True)
class Adma2Desc:
    """One 32-bit-address ADMA2 descriptor: ``attr`` holds Valid/End/Int and
    the Act bits (``H.ADMA_*``); ``length`` 65536 is written as 0."""

    addr: int
    length: int
    attr: int

    def encode(self) -> bytes:
        return H.adma2_desc32(self.addr, self.length & 0xFFFF, self.attr)

    @staticmethod
    def tran(addr: int, length: int, *, end: bool = False, intr: bool = False) -> Adma2Desc:
        a = H.ADMA_VALID | H.ADMA_ACT_TRAN
        a |= H.ADMA_END if end else 0
        a |= H.ADMA_INT if intr else 0
        return Adma2Desc(addr, length, a)

    @staticmethod
    def nop(*, end: bool = False, intr: bool = False, valid: bool = True) -> Adma2Desc:
        a = (H.ADMA_VALID if valid else 0) | H.ADMA_ACT_NOP
        a |= H.ADMA_END if end else 0
        a |= H.ADMA_INT if intr else 0
        return Adma2Desc(0, 0, a)

    @staticmethod
    def link(addr: int, *, intr: bool = False) -> Adma2Desc:
        return Adma2Desc(addr, 0, H.ADMA_VALID | H.ADMA_ACT_LINK | (H.ADMA_INT if intr else 0))


@dataclass
class AdmaOptions:
    """How to lay out an ADMA2 transfer.

    ``max_segment``: bytes per transfer descriptor (1..65536).
    ``segments``: explicit ``(addr, length)`` data segments; by default the
    buffer is cut into ``max_segment`` pieces laid out back to back.
    ``segment_gap``: bytes left between consecutive default segments (data
    then lands scattered rather than contiguous).
    ``nop_every``: put a Nop descriptor after every n transfer descriptors.
    ``link_every``: after every n descriptors, a Link descriptor jumps to a
    fresh table ``link_stride`` bytes further on.
    ``interrupt``: set Int on no descriptor, the last data one, or all.
    ``end``: where the End attribute goes: the last data descriptor, a
    trailing Nop, or nowhere (the block count ends the transfer).
    ``descriptors``: a raw table that replaces everything above (for error
    scenarios); ``segments`` then tells where the data is.
    """

    max_segment: int = ADMA2_MAX_LENGTH
    segments: list[tuple[int, int]] | None = None
    segment_gap: int = 0
    nop_every: int = 0
    link_every: int = 0
    link_stride: int = 0x1000
    interrupt: Literal["none", "last", "all"] = "none"
    end: Literal["last", "nop", "none"] = "last"
    descriptors: list[Adma2Desc] | None = None


@dataclass
class AdmaPlan:
    """Where the tables and the data go: ``tables`` are ``(addr, bytes)`` to
    write; ``segments`` are the data pieces in transfer order."""

    table_addr: int
    tables: list[tuple[int, bytes]] = field(default_factory=list)
    segments: list[tuple[int, int]] = field(default_factory=list)
    descriptors: list[tuple[int, Adma2Desc]] = field(default_factory=list)


def default_segments(buffer: int, length: int, opts: AdmaOptions) -> list[tuple[int, int]]:
    """Cut ``length`` bytes at ``buffer`` into segments of ``opts.max_segment``."""
    if not 1 <= opts.max_segment <= ADMA2_MAX_LENGTH:
        raise ValueError(f"max_segment {opts.max_segment} outside 1..65536")
    segs: list[tuple[int, int]] = []
    addr, left = buffer, length
    while left > 0:
        n = min(left, opts.max_segment)
        segs.append((addr, n))
        addr += n + opts.segment_gap
        left -= n
    return segs


def plan_adma2(table_addr: int, buffer: int, length: int, opts: AdmaOptions) -> AdmaPlan:
    """Build the descriptor tables for ``length`` bytes at ``buffer``."""
    segs = opts.segments if opts.segments is not None else default_segments(buffer, length, opts)
    if opts.descriptors is not None:
        blob = b"".join(d.encode() for d in opts.descriptors)
        pos = [(table_addr + 8 * i, d) for i, d in enumerate(opts.descriptors)]
        return AdmaPlan(table_addr, [(table_addr, blob)], list(segs), pos)

    # The logical list of descriptors, before links are placed.
    logical: list[Adma2Desc] = []
    for i, (addr, n) in enumerate(segs):
        last = i == len(segs) - 1
        intr = opts.interrupt == "all" or (opts.interrupt == "last" and last)
        logical.append(Adma2Desc.tran(addr, n, end=last and opts.end == "last", intr=intr))
        if opts.nop_every and (i + 1) % opts.nop_every == 0 and not last:
            logical.append(Adma2Desc.nop())
    if opts.end == "nop":
        logical.append(Adma2Desc.nop(end=True))

    plan = AdmaPlan(table_addr, segments=list(segs))
    cur = table_addr
    chunk: list[Adma2Desc] = []
    placed: list[tuple[int, Adma2Desc]] = []
    for i, d in enumerate(logical):
        chunk.append(d)
        more = i < len(logical) - 1
        if opts.link_every and more and len(chunk) == opts.link_every:
            nxt = cur + opts.link_stride
            if opts.link_stride < 8 * (len(chunk) + 1):
                raise ValueError("link_stride too small for link_every descriptors")
            chunk.append(Adma2Desc.link(nxt))
            plan.tables.append((cur, b"".join(c.encode() for c in chunk)))
            placed.extend((cur + 8 * k, c) for k, c in enumerate(chunk))
            cur, chunk = nxt, []
    if chunk:
        plan.tables.append((cur, b"".join(c.encode() for c in chunk)))
        placed.extend((cur + 8 * k, c) for k, c in enumerate(chunk))
    plan.descriptors = placed
    return plan
