"""The model's abstract state after an operation: what the search counts as new.

Issue #19 item 2: card state, the controller's transfer phase, pending
interrupts, error bits, the card's lock / erase / write-protect state (and
an eMMC's partition).  Values that only count (addresses, block numbers,
data) are left out, so the state space stays small enough to cover.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import sdhci as H
from harness.model.sd_data import INVALID_ADDRESS
from harness.model.target import ModelTarget

#: PRNSTS bits that tell the transfer phase (SDHC 2.2.9): inhibits, line
#: active, read/write transfer active, buffer enables.
_PHASE = sum(((1 << f.width) - 1) << f.lsb for f in H.PRNSTS.fields
             if f.name in ("CMDINHIBIT", "DATINHIBIT", "DATLINEACTIVE", "WRITE_ACTIVE",
                           "READ_ACTIVE", "BUFWRRDY", "BUFRDRDY", "CARDINSERTED"))
#: Card status bits that are errors or state flags (PLS 4.10.1, Table 4-42),
#: not the CURRENT_STATE field (the card's state is kept apart).
_CSR_FLAGS = 0xFFFF_E1FF & ~(0xF << 9)


def count_class(n: object) -> object:
    """A counter as the search tells its values apart: 0, 1, 2, many, and
    ``"?"`` for a value not known yet (the written-block count at start)."""
    if not isinstance(n, int):
        return "?"
    return n if n < 3 else "many"


def _erase_set(card: Any, name: str) -> bool:
    """An erase address set since the last erase or reset (the model keeps
    an unset one as the invalid address, as QEMU does)."""
    value = getattr(card, name, None)
    return isinstance(value, int) and value != INVALID_ADDRESS


def _block_len_class(n: int) -> object:
    return n if n in (1, 512) else "<512" if n < 512 else ">512"


def abstract(model: ModelTarget) -> tuple[Any, ...]:
    """A hashable summary of the model's state.

    Counters a guest can read or that decide what a later command does
    are classed (:func:`count_class`), not counted: the written-block
    count ACMD22 answers (PLS 4.3.14), the block count CMD23 preset (PLS
    4.3.11), the card's block length (CMD16), the password's length and
    the number of write-protected groups (PLS 4.3.7, 4.3.6), the erase
    start and end each set or not (PLS 4.3.5), and the controller's
    Block Count register (SDHC 2.2.3)."""
    s = model.sdhci
    c: Any = model.card
    part = getattr(c, "partition", None)
    return (
        str(getattr(c, "state", "")), bool(getattr(c, "inserted", True)),
        int(getattr(c, "card_status", 0)) & _CSR_FLAGS,
        count_class(len(getattr(c, "pwd", b""))), bool(getattr(c, "expecting_acmd", False)),
        _erase_set(c, "erase_start"), _erase_set(c, "erase_end"),
        count_class(len(getattr(c, "wp_groups", ()))),
        count_class(getattr(c, "blk_written", 0)), count_class(getattr(c, "multi_blk_cnt", 0)),
        _block_len_class(int(getattr(c, "blk_len", 512))),
        part if isinstance(part, int) else None,
        s.prnsts & _PHASE, s.norintsts, s.errintsts, count_class(s.blkcnt),
        getattr(s, "admaerr", 0) & 0x7, getattr(s, "acmd12errsts", 0),
        bool(s.irq_level()), s.hung is not None,
    )
