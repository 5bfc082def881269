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
input; :func:`watch` follows the model card's commands during an input for
those that would show a process's residue.  An input that
may have seen a residue runs again on a fresh launch
(:func:`harness.fuzz.run.execute`), so its outcome is a fresh launch's.
"""

from __future__ import annotations

from harness.model.target import ModelTarget

BLK_WRITTEN, DATA_SIZE, TIMER = "blk_written", "data_size", "power-up timer"
#: The model did not follow QEMU to the end of the input (a divergence, an
#: abandoned optimistic run): what the card holds is unknown.
UNKNOWN = "unknown"
#: The command index whose answer shows each residue.
READERS = {BLK_WRITTEN: 22, DATA_SIZE: 56}
#: Residue no reset clears and any input may see: the process is not reused.
NOT_REUSABLE = frozenset({TIMER, UNKNOWN})


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


def watch(model: ModelTarget, carried: frozenset[str]) -> set[str]:
    """The set, filled as the input runs, of the ``carried`` residue (a
    process's when the input started) the input may see: the count by an
    ACMD22 (the card expecting an application command) while the model's
    card has counted no block of its own yet, the length by a
    CMD56 read (argument bit 0) while the model's card has set no block
    length of its own yet (a fresh card has none; QEMU's keeps the stale
    one until a command sets it, the same command as the model's).  The
    commands are followed where the model's host controller sends them to
    its card (``do_command``); a card without these fields, or a residue
    any input sees, counts as all of ``carried`` seen."""
    seen: set[str] = set()
    card = model.card
    if not carried:
        return seen
    if carried & NOT_REUSABLE or not hasattr(card, "xfer") \
            or not hasattr(card, "expecting_acmd"):
        seen.update(carried)
        return seen
    inner = card.do_command

    def do_command(cmd: int, arg: int) -> bytes:
        index = cmd & 0x3F
        if index == READERS[BLK_WRITTEN] and card.expecting_acmd \
                and not getattr(card, "blk_written", 0) and BLK_WRITTEN in carried:
            seen.add(BLK_WRITTEN)
        elif index == READERS[DATA_SIZE] and arg & 1 and not card.xfer.size \
                and DATA_SIZE in carried:
            seen.add(DATA_SIZE)
        return inner(cmd, arg)

    card.do_command = do_command  # type: ignore[method-assign]
    return seen
