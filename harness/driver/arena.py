"""The DMA arena: the guest memory a transfer could touch.

The driver places its data buffers and ADMA2 descriptor tables in guest
memory.  The arena is every such zone with a guard of :data:`GUARD` bytes
before and after it, merged into as few regions as possible.  Memory joins
the arena when a zone first needs it and is then filled with a known
pattern, through the target, so both sides of a lockstep hold the same
bytes.  After each transfer the driver compares every region (one read per
region on each side): a DMA engine that writes a byte outside its buffer,
into a gap between ADMA2 segments or into a descriptor table, diverges.

Only a target that compares memory (:class:`harness.target.MemoryCompare`)
gets an arena; on a plain target the arena does nothing.
"""

from __future__ import annotations

from harness.target import MemoryCompare, Target

#: Bytes of guard before and after every zone: a page, enough for a DMA
#: engine that overruns by a block or runs one boundary too far.
GUARD = 0x1000
#: The fill pattern's period: prime, so it never lines up with blocks.
_PERIOD = 251
_TABLE = bytes((i * 0x9D + 0x3C) & 0xFF for i in range(_PERIOD)) * 2


def pattern(addr: int, length: int) -> bytes:
    """The arena's fill at guest address ``addr``: a function of the address."""
    out = bytearray()
    pos = addr
    while len(out) < length:
        k = pos % _PERIOD
        n = min(_PERIOD, length - len(out))
        out += _TABLE[k:k + n]
        pos += n
    return bytes(out)


Zone = tuple[int, int, str]


class DmaArena:
    """The regions of guest memory that buffers and descriptor tables use."""

    def __init__(self, target: Target) -> None:
        self.target = target
        #: Compared: the target is a lockstep of two sides.
        self.active = isinstance(target, MemoryCompare)
        #: Filled with :func:`pattern` as zones join (always where compared;
        #: the explore search asks for it on the model alone, so that its
        #: memory is what the check's replay of its inputs meets).
        self.fill = self.active
        #: Merged ``(start, end)`` regions, sorted, each filled when it joined.
        self.regions: list[tuple[int, int]] = []
        #: The zones of the transfer in progress (or the last one).
        self.zones: list[Zone] = []
        #: Every zone placed so far, for naming a byte outside the current ones.
        self.earlier: list[Zone] = []

    def place(self, addr: int, length: int, name: str) -> None:
        """A zone the next transfer uses; its memory and guards join the arena."""
        if not self.fill or length <= 0:
            return
        self.zones.append((addr, length, name))
        self._cover(max(0, addr - GUARD), addr + length + GUARD)

    def reserve(self, addr: int, length: int) -> None:
        """Memory the driver may use, with its guards, joins the arena."""
        if self.fill:
            self._cover(max(0, addr - GUARD), addr + length + GUARD)

    def begin(self) -> None:
        """A new transfer: its zones replace the previous transfer's."""
        self.earlier += [z for z in self.zones if z not in self.earlier]
        self.zones = []

    def _cover(self, start: int, end: int) -> None:
        """Fill the parts of ``[start, end)`` not yet in the arena, then merge."""
        pos = start
        for s, e in self.regions:
            if e <= pos or s >= end:
                continue
            if s > pos:
                self.target.mem_write(pos, pattern(pos, s - pos))
            pos = max(pos, e)
        if pos < end:
            self.target.mem_write(pos, pattern(pos, end - pos))
        merged: list[tuple[int, int]] = []
        for s, e in sorted([*self.regions, (start, end)]):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        self.regions = merged

    def compare(self) -> None:
        """Compare every region between the two sides of the target."""
        if not self.active:
            return
        assert isinstance(self.target, MemoryCompare)
        for s, e in self.regions:
            self.target.compare_memory(s, e - s, self.zone_of)

    def zone_of(self, addr: int) -> str:
        """The last transfer's zone ``addr`` lies in, or else the guard zone
        it lies in (placed by the nearest zone, and an earlier transfer's
        zone that holds it, if any)."""
        for a, n, name in self.zones:
            if a <= addr < a + n:
                return f"the last transfer's {name} [{a:#x}, {a + n:#x}) at +{addr - a:#x}"
        inside = next((f", inside an earlier {name} [{a:#x}, {a + n:#x})"
                       for a, n, name in reversed(self.earlier) if a <= addr < a + n), "")
        if not self.zones:
            return f"guard zone (the last transfer placed no buffer){inside}"

        def dist(z: Zone) -> int:
            return z[0] - addr if addr < z[0] else addr - (z[0] + z[1]) + 1

        a, n, name = min(self.zones, key=dist)
        if addr < a:
            side = f"{a - addr:#x} bytes before"
        else:
            side = f"byte +{addr - (a + n):#x} past the end of"
        return f"guard zone, {side} the last transfer's {name} [{a:#x}, {a + n:#x}){inside}"
