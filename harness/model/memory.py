"""Sparse guest physical memory for the model, as a PCI device's DMA sees it.

Pages are allocated on first write; unwritten RAM reads as zeros.  Outside
RAM the model does what QEMU's memory core does for an address nothing is
mapped at (``unassigned_mem_ops``): a read yields zeros, a write is dropped,
and the transaction reports a decode error, which ``dma_memory_read`` /
``dma_memory_write`` pass back to the device (sdhci's ADMA checks it, its
SDMA ignores it).  A range that is partly RAM moves the RAM part and still
fails.

Layout: RAM is ``[0, ram_size)`` unless it would reach into the 32-bit PCI
hole, in which case the part beyond the machine's low-memory limit is placed
at 4 GiB as QEMU's PC machines do (q35: 2 GiB low when RAM >= 2.75 GiB; pc:
3 GiB low when RAM >= 3.5 GiB).  Modelling choice, stated once: the legacy
0xA0000-0xFFFFF window (VGA/SMRAM, BIOS shadow) and the MMIO/BIOS regions
above RAM are not modelled device by device; the window reads as RAM and
everything above RAM as unassigned.  Drivers keep DMA buffers in ordinary
RAM above 1 MiB, where model and QEMU agree.
"""

from __future__ import annotations

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
_ADDR_MASK = (1 << 64) - 1


def ram_ranges(ram_size: int, machine: str | None = None) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` RAM ranges of a PC machine with ``ram_size`` bytes."""
    if machine is not None and machine.startswith("pc") and "q35" not in machine:
        limit, low = 0xE0000000, 0xC0000000      # gigabyte-aligned split
    else:
        limit, low = 0xB0000000, 0x80000000
    if ram_size < limit:
        return ((0, ram_size),)
    return ((0, low), (1 << 32, (1 << 32) + ram_size - low))


class GuestMemory:
    """Guest physical memory: sparse RAM plus unassigned space around it."""

    def __init__(self, ram_size: int = 128 << 20, machine: str | None = None, *,
                 ram_base: int | None = None,
                 other_ram: tuple[tuple[int, int], ...] = (),
                 aliases: tuple[tuple[int, int, int], ...] = ()) -> None:
        """``ram_base``: a board's RAM, ``[ram_base, ram_base + ram_size)`` in one
        range, and ``other_ram`` the board's on-chip memories as ``(base,
        size)`` (:mod:`harness.hwdefs.boards`); None: a PC's layout.
        ``aliases``: ``(base, size, target)`` windows that show the RAM at
        ``target`` again (QEMU alias regions); they win over ``ranges``."""
        if ram_size <= 0:
            raise ValueError("ram_size must be positive")
        self.ram_size = ram_size
        self.ranges = (ram_ranges(ram_size, machine) if ram_base is None
                       else ((ram_base, ram_base + ram_size),
                             *((b, b + n) for b, n in other_ram)))
        self.ranges += tuple((b, b + n) for b, n, _t in aliases)
        #: ``(first page, end page, page delta)`` of each alias.
        self._alias_pages = tuple((b >> PAGE_SHIFT, (b + n) >> PAGE_SHIFT, (b - t) >> PAGE_SHIFT)
                                  for b, n, t in aliases)
        self._pages: dict[int, bytearray] = {}

    def _pno(self, addr: int) -> int:
        """The page that holds ``addr``'s byte (an alias's target page)."""
        pno = addr >> PAGE_SHIFT
        for first, end, delta in self._alias_pages:
            if first <= pno < end:
                return pno - delta
        return pno

    def is_ram(self, addr: int) -> bool:
        return any(s <= addr < e for s, e in self.ranges)

    def _ram_span(self, addr: int, end: int) -> tuple[int, bool]:
        """End of the run of ``[addr, end)`` that is uniformly RAM or not."""
        for s, e in self.ranges:
            if s <= addr < e:
                return min(end, e), True
        nxt = end
        for s, _e in self.ranges:
            if addr < s < nxt:
                nxt = s
        return nxt, False

    def _place(self, addr: int, end: int) -> bool | None:
        """``[addr, end)`` (not empty) is all RAM (True), all outside RAM
        (False), or both (None)."""
        inside = False
        for s, e in self.ranges:
            if s <= addr and end <= e:
                return True
            inside = inside or (addr < e and s < end)
        return None if inside else False

    def read(self, addr: int, length: int) -> tuple[bytes, bool]:
        """Read ``length`` bytes; returns ``(data, ok)`` where ``ok`` is False
        when any byte fell outside RAM (those bytes read as 0).  A read
        inside one page of RAM, or wholly outside RAM (a DMA descriptor, a
        block), is answered at once; :meth:`read_spans` does the rest."""
        addr &= _ADDR_MASK
        if length > 0:
            end = addr + length
            where = self._place(addr, end)
            if where is False:
                return bytes(length), False
            off = addr & (PAGE_SIZE - 1)
            if where and off + length <= PAGE_SIZE:
                page = self._pages.get(self._pno(addr))
                return (bytes(length) if page is None else bytes(page[off:off + length])), True
        return self.read_spans(addr, length)

    def read_spans(self, addr: int, length: int) -> tuple[bytes, bool]:
        """:meth:`read` span by span and page by page (any range)."""
        addr &= _ADDR_MASK
        out = bytearray()
        ok = True
        end = addr + length
        while addr < end:
            stop, ram = self._ram_span(addr, end)
            if not ram:
                out += bytes(stop - addr)
                ok = False
                addr = stop
                continue
            while addr < stop:
                page = self._pages.get(self._pno(addr))
                off = addr & (PAGE_SIZE - 1)
                n = min(stop - addr, PAGE_SIZE - off)
                out += page[off:off + n] if page is not None else bytes(n)
                addr += n
        return bytes(out), ok

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> bool:
        """Write ``data`` (any bytes-like object); returns False when any byte
        fell outside RAM (those bytes are dropped).  A write inside one page
        of RAM, or wholly outside RAM, is done at once; :meth:`write_spans`
        does the rest."""
        addr &= _ADDR_MASK
        n = len(data)
        if n > 0:
            where = self._place(addr, addr + n)
            if where is False:
                return False
            off = addr & (PAGE_SIZE - 1)
            if where and off + n <= PAGE_SIZE:
                pno = self._pno(addr)
                page = self._pages.get(pno)
                if page is None:
                    if not any(data):
                        return True
                    page = self._pages[pno] = bytearray(PAGE_SIZE)
                page[off:off + n] = data
                return True
        return self.write_spans(addr, data)

    def write_spans(self, addr: int, data: bytes | bytearray | memoryview) -> bool:
        """:meth:`write` span by span and page by page (any range)."""
        addr &= _ADDR_MASK
        ok = True
        pos = 0
        end = addr + len(data)
        while addr < end:
            stop, ram = self._ram_span(addr, end)
            if not ram:
                ok = False
                pos += stop - addr
                addr = stop
                continue
            while addr < stop:
                pno = self._pno(addr)
                off = addr & (PAGE_SIZE - 1)
                n = min(stop - addr, PAGE_SIZE - off)
                chunk = data[pos:pos + n]
                page = self._pages.get(pno)
                if page is None:
                    if not any(chunk):
                        addr += n
                        pos += n
                        continue
                    page = self._pages[pno] = bytearray(PAGE_SIZE)
                page[off:off + n] = chunk
                addr += n
                pos += n
        return ok

    @property
    def pages_allocated(self) -> int:
        return len(self._pages)
