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


#: Descriptor formats, each with its DMA Select value (SDHC 3.00 2.2.10, 1.13).
AdmaFormat = Literal["adma2-32", "adma2-64", "adma1"]
DMA_SELECT: dict[str, int] = {"adma2-32": H.HOSTCTL_DMA_ADMA2_32,
                              "adma2-64": H.HOSTCTL_DMA_ADMA2_64,
                              "adma1": H.HOSTCTL_DMA_ADMA1}


@dataclass(frozen=True)
class Adma2Desc:
    """One 32-bit-address ADMA2 descriptor: ``attr`` holds Valid/End/Int and
    the Act bits (``H.ADMA_*``); ``length`` 65536 is written as 0."""

    addr: int
    length: int
    attr: int

    def encode(self, fmt: AdmaFormat = "adma2-32") -> bytes:
        """The descriptor in ``fmt``: 8 bytes (ADMA2, 32-bit address), 12
        bytes (ADMA2, 64-bit address) or, for ADMA1, 4 bytes, a transfer
        being a Set Length descriptor followed by a Tran (1.13.3)."""
        if fmt == "adma2-64":
            return H.adma2_desc64(self.addr, self.length & 0xFFFF, self.attr)
        if fmt == "adma1":
            if self.attr & H.ADMA_ACT_MASK == H.ADMA_ACT_TRAN:
                return (H.adma1_desc(self.length, H.ADMA_VALID | H.ADMA_ACT_SET)
                        + H.adma1_desc(self.addr, self.attr))
            return H.adma1_desc(self.addr, self.attr)
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
    ``format``: the descriptor format and DMA Select: ADMA2 with 32-bit
    addresses (the default), with 64-bit addresses (needs the 64-bit
    system bus capability), or ADMA1 (4 KiB aligned segments).
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
    format: AdmaFormat = "adma2-32"


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
    fmt = opts.format

    def placed_at(start: int, descs: list[Adma2Desc]) -> list[tuple[int, Adma2Desc]]:
        out, at = [], start
        for d in descs:
            out.append((at, d))
            at += len(d.encode(fmt))
        return out

    if opts.descriptors is not None:
        blob = b"".join(d.encode(fmt) for d in opts.descriptors)
        return AdmaPlan(table_addr, [(table_addr, blob)], list(segs),
                        placed_at(table_addr, opts.descriptors))

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
            chunk.append(Adma2Desc.link(nxt))
            if opts.link_stride < sum(len(c.encode(fmt)) for c in chunk):
                raise ValueError("link_stride too small for link_every descriptors")
            plan.tables.append((cur, b"".join(c.encode(fmt) for c in chunk)))
            placed.extend(placed_at(cur, chunk))
            cur, chunk = nxt, []
    if chunk:
        plan.tables.append((cur, b"".join(c.encode(fmt) for c in chunk)))
        placed.extend(placed_at(cur, chunk))
    plan.descriptors = placed
    return plan
