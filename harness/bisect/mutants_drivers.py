"""Regressions in the paths real drivers use (issue #44): caught by their recordings.

Each is a one-line ``hw/sd`` change on a path the drivers group's recordings
(:mod:`harness.scenarios.drivers`) take, checked with that group alone, so that
its report names the real driver that would meet the regression.  Same form as
:data:`harness.bisect.mutants.MUTANTS` (anchor + replacement).
"""

from __future__ import annotations

from harness.bisect.mutants import Mutant

DRIVERS: tuple[Mutant, ...] = (
    # Linux's sdhci maps a request's pages one ADMA2 descriptor each: a 64 KiB
    # write is 16 descriptors, more than the 5 QEMU moves before it re-arms its
    # transfer timer to go on; here it ends the transfer there instead.
    Mutant("adma-ends-after-five-descriptors",
           "a path real drivers use: ADMA2 tables longer than 5 descriptors (#44)",
           "hw/sd/sdhci.c",
           "    timer_mod(s->transfer_timer,\n"
           "                   qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + SDHC_TRANSFER_DELAY);\n",
           "    sdhci_end_transfer(s);\n",
           ("--group", "drivers"), "a real driver meets this"),
)
