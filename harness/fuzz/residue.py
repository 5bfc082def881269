"""What a reused QEMU's card keeps across ``system_reset``, and what reads it.

A pooled process is reset (:meth:`harness.qemu.target.QemuTarget.reuse`)
to be what a fresh launch is, but QEMU's card reset (``sd_reset``) leaves
some of the card's state as the last input left it, where a fresh launch
has zeros; the model keeps the same state across its resets
(``SDCard._init_runtime``), so it says what an input left:

* ``blk_written``: the count of blocks the last write command wrote, which
  ACMD22 sends (PLS 4.3.9; ledger ``sd.acmd22-count-survives-reset``, fix in
  ``bugs/0004``).  Only a write command (CMD24/25) clears it.
* ``data_size``: the length of the card's last data block (QEMU >= 9.1),
  which a CMD56 read keeps (ledger ``sd.cmd56-stale-length``).
* ``power-up timer``: ACMD41's power-up delay, still pending; the reset
  does not cancel it, so it would set the busy bit in the next input.

:func:`left` names what the model's card holds of these at the end of an
input; :func:`reads` names which of a process's residue an input may have
seen, from the commands its qtest trace issued (the commands that answer
with it, whatever came between: a superset).  An input that
may have seen a residue runs again on a fresh launch
(:func:`harness.fuzz.run.execute`), so its outcome is a fresh launch's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget

BLK_WRITTEN, DATA_SIZE, TIMER = "blk_written", "data_size", "power-up timer"
#: The model did not follow QEMU to the end of the input (a divergence, an
#: abandoned optimistic run): what the card holds is unknown.
UNKNOWN = "unknown"
#: The command index whose answer shows each residue.
READERS = {BLK_WRITTEN: 22, DATA_SIZE: 56}
#: Residue no reset clears and any input may see: the process is not reused.
NOT_REUSABLE = frozenset({TIMER, UNKNOWN})

_SIZES = {"b": 1, "w": 2, "l": 4, "q": 8}
#: The Argument register and the Command register's index byte (SDHC
#: 2.2.5, 2.2.6): a write of that byte issues the command.
_ARG, _INDEX_BYTE = H.ARGUMENT.offset, H.CMDREG.offset + 1


def left(model: ModelTarget) -> frozenset[str]:
    """The residue the model's card holds: what QEMU's holds too when the
    input ran in agreement to its end."""
    card = model.card
    out = set()
    if getattr(card, "blk_written", 0):
        out.add(BLK_WRITTEN)
    xfer = getattr(card, "xfer", None)
    if xfer is not None and xfer.size:
        out.add(DATA_SIZE)
    timer = getattr(card, "_timer", None)
    if timer is not None and timer.pending:
        out.add(TIMER)
    return frozenset(out)


def commands(trace: Iterable[str], bar0: int) -> list[tuple[int, int]]:
    """``(index, argument)`` of each command the qtest lines ``trace`` issued
    through the controller at ``bar0``, in order: every write covering the
    Command register's index byte, with the Argument register as written
    last (whether or not the controller then sent it)."""
    lo, hi = bar0 + _ARG, bar0 + _INDEX_BYTE
    text = "\n".join(trace)
    # Only writes into [lo, hi] matter, which start in the 16 bytes of the
    # register block holding them: those lines found in one pass.
    if bar0 & 0xF:
        raise ValueError(f"the controller's registers at {bar0:#x} are not 16-byte aligned")
    block = re.escape(f"{bar0 >> 4:#x}")
    regs = bytearray(hi - lo + 1)
    out = []
    for m in re.finditer(rf"write([bwlq]) {block}([0-9a-f]) (0x[0-9a-f]+)$", text, re.MULTILINE):
        addr, size, value = bar0 + int(m.group(2), 16), _SIZES[m.group(1)], int(m.group(3), 16)
        for i in range(size):
            if lo <= addr + i <= hi:
                regs[addr + i - lo] = (value >> (8 * i)) & 0xFF
        if addr <= hi < addr + size:
            out.append((regs[-1] & 0x3F, int.from_bytes(regs[:4], "little")))
    return out


def reads(carried: frozenset[str], trace: Iterable[str], bar0: int) -> frozenset[str]:
    """Which of ``carried`` (a process's residue when the input started) the
    input with qtest ``trace`` may have seen: the count through an ACMD22
    (a command 22 right after a CMD55), the length through a CMD56 read
    (argument bit 0 set)."""
    if not carried:
        return frozenset()
    if carried & NOT_REUSABLE:
        return carried & NOT_REUSABLE
    seen = set()
    last = -1
    for index, arg in commands(trace, bar0):
        if index == READERS[BLK_WRITTEN] and last == 55:
            seen.add(BLK_WRITTEN)
        elif index == READERS[DATA_SIZE] and arg & 1:
            seen.add(DATA_SIZE)
        last = index
    return frozenset(seen) & carried
