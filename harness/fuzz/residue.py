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
with it, app or not, whatever else came first: a superset).  An input that
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

_WRITE = re.compile(r"^write([bwlq]) (0x[0-9a-f]+) (0x[0-9a-f]+)$")
_SIZES = {"b": 1, "w": 2, "l": 4, "q": 8}
#: The byte of the Command register holding the command index (SDHC 2.2.6).
_INDEX_BYTE = H.CMDREG.offset + 1


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


def commands(trace: Iterable[str], bar0: int) -> set[int]:
    """The command indices the qtest lines ``trace`` wrote to the Command
    register of the controller at ``bar0`` (every write covering its index
    byte, whether or not the controller then sent it)."""
    at = bar0 + _INDEX_BYTE
    out = set()
    for line in trace:
        m = _WRITE.match(line)
        if m is None:
            continue
        addr = int(m.group(2), 16)
        if addr <= at < addr + _SIZES[m.group(1)]:
            out.add((int(m.group(3), 16) >> (8 * (at - addr))) & 0x3F)
    return out


def reads(carried: frozenset[str], trace: Iterable[str], bar0: int) -> frozenset[str]:
    """Which of ``carried`` (a process's residue when the input started) the
    input with qtest ``trace`` may have seen."""
    if not carried:
        return frozenset()
    if carried & NOT_REUSABLE:
        return carried & NOT_REUSABLE
    issued = commands(trace, bar0)
    return frozenset(r for r in carried if READERS.get(r) in issued)
