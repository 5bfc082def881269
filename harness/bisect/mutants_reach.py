"""Regressions of issue #34's kinds: one per kind the explorer now reaches.

Each is a small ``hw/sd`` change where the explorer's operations could not
go before (:mod:`harness.explore.reach`): a password compared one byte
short (lock), the DAT line reset leaving a block gap stop in place (stop), an
ADMA data transfer into a hole no longer an ADMA error (dma), the block
gap's stopped state not migrated (migrate).  Same form as
:data:`harness.bisect.mutants.MUTANTS` (anchor + replacement, never the
tree's own text beyond the anchor); checked with the group that replays
the explorer's corpus.
"""

from __future__ import annotations

from harness.bisect.mutants import Mutant

_WHY = "a state class the explorer could not reach before (#34 kind {})"

REACH: tuple[Mutant, ...] = (
    Mutant("lock-compares-password-one-byte-short",
           _WHY.format("lock"), "hw/sd/sd.c",
           "memcmp(sd->pwd, sd->data + 2, sd->pwd_len)",
           "memcmp(sd->pwd, sd->data + 2, sd->pwd_len - 1)",
           ("--group", "explore"), "LOCK_UNLOCK_FAILED"),
    # (not "the DAT reset keeps data_count": every data command sets it to
    # 0 when it starts, and the port reads nothing in between: no guest can
    # tell, an equivalent mutant; measured, no corpus tells it either)
    Mutant("dat-reset-keeps-stopped-state",
           _WHY.format("stop"), "hw/sd/sdhci.c",
           "        s->blkgap &= ~(SDHC_STOP_AT_GAP_REQ | SDHC_CONTINUE_REQ);\n"
           "        s->stopped_state = sdhc_not_stopped;\n",
           "        s->blkgap &= ~(SDHC_STOP_AT_GAP_REQ | SDHC_CONTINUE_REQ);\n",
           ("--group", "explore"), "NORINTSTS"),
    Mutant("adma-data-bus-error-ignored",
           _WHY.format("dma"), "hw/sd/sdhci.c",
           "            if (res != MEMTX_OK) {\n                s->data_count = 0;\n",
           "            if (0) {\n                s->data_count = 0;\n",
           ("--group", "explore"), "ERRINTSTS"),
    Mutant("stopped-state-not-migrated",
           _WHY.format("migrate"), "hw/sd/sdhci.c",
           "        VMSTATE_UINT8(stopped_state, SDHCIState),\n",
           "        VMSTATE_UNUSED(1),\n",
           ("--group", "migration"), "BDATA"),
)
