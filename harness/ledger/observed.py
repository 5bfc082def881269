"""Known differences the model does not switch: the check recognises them
in a step (a quirk), adopts QEMU's value (a random draw, an undefined
register), or meets them outside the lockstep (migration, a reused QEMU)."""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import EVERY_VERSION, KnownDifference, ReadMatch, Scope, Versions

#: Debian's three binaries, the builds the default check runs on.
DEBIAN = ("7.2.22", "10.0.13", "11.1.3")

OBSERVED: tuple[KnownDifference, ...] = (
    KnownDifference(
        "sd.rca-random", Scope.RANDOM, "sd",
        "the card publishes a new relative address in the R6 response to CMD3 (PLS 4.2.2 "
        "lets it pick any address but 0)",
        "the address is drawn with qemu_guest_getrandom, so no model predicts it",
        boundaries.SD_PROTOCOL_REWORK.versions(confirmed=DEBIAN[1:]), spec="PLS 4.2.2",
        adopts="RCA",
        boundary=boundaries.SD_PROTOCOL_REWORK.key,
        why="the model takes QEMU's RCA when only the RCA bits of RSPREG0 differ after CMD3 "
            "(ModelTarget.reconcile); an RCA of 0 or the previous one is not adopted"),
    KnownDifference(
        "sdhci.rspreg3-after-auto-cmd12", Scope.QEMU_BUG, "sdhci",
        "after an Auto CMD12 the card does not answer, Response Register 3 keeps what it "
        "held (SDHC 3.00 2.2.7: it holds the Auto CMD12 response, and there is none)",
        "sdhci_end_transfer copies its response buffer into RSPREG3 whatever the card "
        "answered: uninitialised stack reaches the guest",
        Versions(None, None, ("7.2.22",)), spec="SDHC 3.00 2.2.7, PLS 4.3.4", adopts="RSPREG3",
        why="the value cannot be predicted: the model marks RSPREG3 undefined and adopts "
            "QEMU's value (7.2 showed 0x300000e0, 10.0 and 11.1 happened to show 0)",
        evidence="tests/qtest/crosscheck/field_inputs/qemu-bug-rspreg3-auto-cmd12.sh"),
    KnownDifference(
        "migration-loses-hostctl2", Scope.QEMU_BUG, "migration",
        "a migrated controller reads as it did before the migration",
        "after a migration Host Control 2 (0x3E) reads 0: UHS mode, 1.8 V enable, driver "
        "strength, sampling clock select are gone",
        Versions(None, None, (*DEBIAN, "11.0.3", "11.1.1")), spec="QEMU migration",
        explains=ReadMatch(0x3E, size=2, qemu=0, scenarios=("migrate-uhs-tuned",)),
        builds="every build here (7.2 to 11.1; still so in the 10.2.2, 11.0.3 and 11.1.1 "
               "sources)",
        why="sdhci's vmstate has no field for hostctl2, so the destination keeps its "
            "reset value; a QEMU bug (docs/migration.md), not modelled",
        change="none yet (hw/sd/sdhci.c sdhci_vmstate)",
        evidence="sdqtest migrate --point uhs-tuned --keep-all"),
    KnownDifference(
        "sdhci-pci.pci-config-not-migrated", Scope.QEMU_BUG, "sdhci-pci",
        "a migrated PCI function keeps its configuration space (BAR0, COMMAND, "
        "INTERRUPT_LINE)",
        "sdhci-pci migrates the SDHCI registers only, with no PCI device section: on the "
        "destination BAR0 and COMMAND are 0 and every register reads 0 until the guest "
        "reprograms them",
        Versions(None, None, DEBIAN), spec="PCI Local Bus 3.0 6.2",
        why="the migration runs check BAR0, COMMAND and INTERRUPT_LINE after each load, name "
            "the lost ones and write them again (harness.check.migration)",
        evidence="sdqtest migrate --keep-all: replay.sh reads BAR0 as 0"),
    KnownDifference(
        "sd.acmd22-count-survives-reset", Scope.QEMU_BUG, "sd",
        "a card reset clears the written-block count ACMD22 reports (PLS 4.3.9: the count "
        "of the last write command)",
        "sd_reset leaves blk_written as it was: after a system reset ACMD22 before any write "
        "answers the previous run's count, a fresh launch 0",
        EVERY_VERSION, spec="PLS 4.3.9 (ACMD22)",
        why="the explore search drops inputs that read it (harness.explore.search."
            "ReuseDependent); no hand-written scenario issues ACMD22 before a write; a check "
            "run whose every difference on a reused process is at ACMD22 and that a fresh "
            "launch runs in agreement is this entry (harness.check.runner.RESET_RESIDUE: "
            "explore-057 on raspi3b, 10.0-arm: QEMU answered 2, a fresh launch 0)",
        evidence="tests/qtest/crosscheck/test_explore_qemu.py; "
                 "tests/qtest/core/test_reset_residue.py"),
)
