"""Regressions of issue #43's kinds: CVE-class changes the check missed.

One edit of the 11.1.1 (or 10.2.2) tree per kind, each where the kind's
operations now go (:mod:`harness.explore.reach`, :mod:`harness.explore.restart`,
:mod:`harness.scenarios.restart`): ADMA data accesses no longer memory-only,
so a data segment in another device's MMIO moves bytes into or out of the
device (dma); Block Size changes that keep the buffer position, the data
pointer CVE-2021-3409's fix resets (restart; and the DAT line reset keeping
it, which only a restart without a command can tell); the card's position
inside its data block left out of the migration stream (migrate).  Same form
as :data:`harness.bisect.mutants.MUTANTS`.
"""

from __future__ import annotations

from harness.bisect.mutants import Mutant

_WHY = "a CVE-class regression the check missed before (#43 kind {})"

CVE: tuple[Mutant, ...] = (
    Mutant("adma-data-reaches-devices",
           _WHY.format("dma: other devices' MMIO"), "hw/sd/sdhci.c",
           "const MemTxAttrs attrs = { .memory = true };",
           "const MemTxAttrs attrs = { .memory = false };",
           ("--group", "explore"), "ERRINTSTS"),
    Mutant("blksize-change-keeps-data-count",
           _WHY.format("restart without a command"), "hw/sd/sdhci.c",
           "            if (blksize != s->blksize) {\n                s->data_count = 0;\n",
           "            if (0) {\n                s->data_count = 0;\n",
           ("--group", "restart"), "restart"),
    Mutant("dat-reset-keeps-data-count",
           _WHY.format("restart without a command"), "hw/sd/sdhci.c",
           "    case SDHC_RESET_DATA:\n        s->data_count = 0;\n",
           "    case SDHC_RESET_DATA:\n",
           ("--group", "restart"), "restart"),
    Mutant("card-data-offset-not-migrated",
           _WHY.format("migration inside a block"), "hw/sd/sd.c",
           "        VMSTATE_UINT32(data_offset, SDState),\n",
           "        VMSTATE_UNUSED(4),\n",
           ("--group", "migration"), "BDATA"),
)
