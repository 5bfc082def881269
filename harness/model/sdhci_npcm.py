"""The Nuvoton NPCM7xx SDHCI: a generic SDHCI behind a wrapper with its own
reset values and a small vendor window (:mod:`harness.hwdefs.npcm`).

As QEMU's ``npcm7xx-sdhci`` documents it (hw/sd/npcm7xx_sdhci.c, alike in
7.2, 10.0.13 and 11.1.1): the SDHCI inside keeps its type's defaults at
realize (``sd-spec-version`` 2, whose capabilities are the ones checked), and
the wrapper's device reset then overrides Present State, Block Gap,
Capabilities, Maximum Current and the version register.  So after power-on
the controller reports no card (PRNSTS 0x04a00000: Card Inserted clear with
a card plugged, ledger ``npcm.prnsts-reset-no-card``) and a Host Controller
Version of 3.00 while the SDHCI inside keeps the 2.00 rules
(``npcm.version-3-rules-2``).  A Software Reset For All resets the SDHCI
alone (SDHC 2.2.11): PRNSTS and BLKGAP return to the standard values, the
capabilities, MAXCURR and version stay the wrapper's.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import npcm as N
from harness.model.sdhci import CONTROLLERS, SDHCI
from harness.model.sdhci_state import U64

__all__ = ["NpcmSdhci"]

_PRSTVALS = {r.offset: i for i, r in enumerate(N.PRSTVALS)}


@CONTROLLERS.controller("npcm")
class NpcmSdhci(SDHCI):
    """``npcm7xx-sdhci`` as the model of the SDHCI inside plus the wrapper.

    ``capareg`` is the wrapper's, applied at its reset (not checked at
    realize: QEMU checks the default one); ``sd_spec_version`` stays the
    inner controller's."""

    def __init__(self, *args: Any, capareg: int | str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.boottoctrl = 0
        values = dict(N.RESET_VALUES)
        if capareg is not None:
            values["capareg"] = int(str(capareg), 0) & U64
        self.prnsts = values["prnsts"]
        self.blkgap = values["blkgap"]
        self.capareg = values["capareg"]
        self.maxcurr = values["maxcurr"]
        self.hcver = values["hcver"]

    def read(self, offset: int, size: int) -> int:
        lo, hi = N.WINDOW
        if not lo <= offset < hi:
            return super().read(offset, size)
        if offset in _PRSTVALS and size == 2:
            return N.PRSTVALS_RESET[_PRSTVALS[offset]]
        if offset == N.BOOTTOCTRL.offset and size == 4:
            return self.boottoctrl
        return 0  # refused by the wrapper's window: reads 0

    def write(self, offset: int, size: int, value: int) -> None:
        lo, hi = N.WINDOW
        if not lo <= offset < hi:
            super().write(offset, size, value)
        elif offset == N.BOOTTOCTRL.offset and size == 4:
            self.boottoctrl = value & 0xFFFF_FFFF
