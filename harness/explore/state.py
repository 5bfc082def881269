"""The model's abstract state after an operation: what the search counts as new.

Issue #19 item 2: card state, the controller's transfer phase, pending
interrupts, error bits, the card's lock / erase / write-protect state (and
an eMMC's partition).  Values that only count (addresses, block numbers,
data) are left out, so the state space stays small enough to cover.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget

#: PRNSTS bits that tell the transfer phase (SDHC 2.2.9): inhibits, line
#: active, read/write transfer active, buffer enables.
_PHASE = sum(((1 << f.width) - 1) << f.lsb for f in H.PRNSTS.fields
             if f.name in ("CMDINHIBIT", "DATINHIBIT", "DATLINEACTIVE", "WRITE_ACTIVE",
                           "READ_ACTIVE", "BUFWRRDY", "BUFRDRDY", "CARDINSERTED"))
#: Card status bits that are errors or state flags (PLS 4.10.1, Table 4-42),
#: not the CURRENT_STATE field (the card's state is kept apart).
_CSR_FLAGS = 0xFFFF_E1FF & ~(0xF << 9)


def abstract(model: ModelTarget) -> tuple[Any, ...]:
    """A hashable summary of the model's state."""
    s = model.sdhci
    c: Any = model.card
    part = getattr(c, "partition", None)
    return (
        str(getattr(c, "state", "")), bool(getattr(c, "inserted", True)),
        int(getattr(c, "card_status", 0)) & _CSR_FLAGS,
        bool(getattr(c, "pwd", b"")), bool(getattr(c, "expecting_acmd", False)),
        getattr(c, "erase_start", None) is not None, bool(getattr(c, "wp_groups", ())),
        part if isinstance(part, int) else None,
        s.prnsts & _PHASE, s.norintsts, s.errintsts,
        getattr(s, "admaerr", 0) & 0x7, getattr(s, "acmd12errsts", 0),
        bool(s.irq_level()), s.hung is not None,
    )
