"""Where QEMU's sdhci departs from the SD Host Controller Simplified Spec.

Section numbers refer to version 3.00 of that specification.  The
controller model follows QEMU by default and the rule in strict mode."""

from __future__ import annotations

from harness.ledger.entry import EVERY_VERSION, KnownDifference, Scope, Versions

SDHCI: tuple[KnownDifference, ...] = (
    KnownDifference(
        "sdhci.trnmod-inhibit-or", Scope.SPEC, "sdhci",
        "Writes to Transfer Mode are ignored while Command Inhibit (DAT) is 1.",
        "The written bits are ORed into Transfer Mode: bits can be set, not cleared.",
        EVERY_VERSION, spec="SDHC 3.00 2.2.5", toggle=True),
    KnownDifference(
        "sdhci.sdma-sysad-ignored-while-active", Scope.QEMU_BUG, "sdhci",
        "After an SDMA buffer boundary stop the driver writes the next address to SDMA "
        "System Address, which resumes the transfer.",
        "SDMA System Address writes are dropped while Read/Write Transfer Active is set, so "
        "a transfer stopped at a boundary never resumes.",
        Versions(None, None, ("7.2.22", "10.0.13", "11.1.3")),
        spec="SDHC 3.00 1.14.1, 2.2.1", toggle=True),
    KnownDifference(
        "sdhci.sdma-sysad-starts-transfer", Scope.SPEC, "sdhci",
        "Writing the top byte of SDMA System Address only restarts a stopped SDMA.",
        "Writing the top byte starts an SDMA transfer whenever Block Count and Block Size "
        "are non-zero and DMA Select is SDMA, with no command issued.",
        Versions(None, None, ("7.2.22",)), spec="SDHC 3.00 2.2.1", toggle=True),
    KnownDifference(
        "sdhci.sdma-unaligned-no-boundary", Scope.SPEC, "sdhci",
        "SDMA stops at every SDMA Buffer Boundary crossed.",
        "The boundary is ignored when the transfer starts at an address that is not "
        "boundary aligned.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.2", toggle=True),
    KnownDifference(
        "sdhci.sdma-infinite-unsupported", Scope.SPEC, "sdhci",
        "A multiple-block SDMA transfer with Block Count Enable 0 runs until stopped.",
        "Nothing is transferred and no interrupt is raised.",
        EVERY_VERSION, spec="SDHC 3.00 1.15, 2.2.5", toggle=True),
    KnownDifference(
        "sdhci.sdma-dmaint-at-end", Scope.SPEC, "sdhci",
        "DMA Interrupt is raised at an SDMA buffer boundary, not when the transfer "
        "completes (Transfer Complete covers that).",
        "QEMU 10.0 and later also raise DMA Interrupt at the end of every SDMA transfer "
        "(7.2 does not).",
        Versions("10.0", None, ("10.0.13", "11.1.3")), spec="SDHC 3.00 2.2.17", toggle=True),
    KnownDifference(
        "sdhci.sdma-single-blkcnt", Scope.SPEC, "sdhci",
        "Block Count is only decremented when Block Count Enable is 1 and a block remains "
        "to be counted.",
        "Single-block SDMA decrements Block Count unconditionally, wrapping 0 to 0xFFFF.",
        EVERY_VERSION, spec="SDHC 3.00 2.2.3", toggle=True),
    KnownDifference(
        "sdhci.swrst-single-bit", Scope.SPEC, "sdhci",
        "Each Software Reset bit written as 1 performs its reset; several may be set at "
        "once.",
        "A reset happens only when exactly one of the three bits is written as 1.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.16", toggle=True),
    KnownDifference(
        "sdhci.dat-reset-keeps-adma", Scope.QEMU_BUG, "sdhci",
        "Software Reset for DAT Line stops DMA.",
        "A pending ADMA continuation survives the DAT reset and resumes on the next "
        "register access or timer tick.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.16", toggle=True),
    KnownDifference(
        "sdhci.irq-not-reevaluated", Scope.SPEC, "sdhci",
        "The interrupt signal follows status, signal enables and wakeup enables at all "
        "times.",
        "The INTx line is re-evaluated only on some events: CMD/DAT resets clearing status "
        "bits and Wakeup Control writes leave it as it was.",
        Versions(None, None, ("7.2.22", "10.0.13")),
        spec="SDHC 3.00 2.2.19-2.2.21, 2.2.33", toggle=True),
    KnownDifference(
        "sdhci.acmd12errsts-writable", Scope.SPEC, "sdhci",
        "Auto CMD Error Status is read only.",
        "Guest writes change it.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.23", toggle=True),
    KnownDifference(
        "sdhci.admaerr-writable", Scope.SPEC, "sdhci",
        "ADMA Error Status is set by the controller only.",
        "Guest writes change it.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.30", toggle=True),
    KnownDifference(
        "sdhci.reserved-bits-writable", Scope.SPEC, "sdhci",
        "Reserved bits read 0 (Command bits 15:14 and 2, Power Control 7:4, Wakeup Control "
        "7:3, Timeout Control 7:4, Clock Control reserved bits, Host Control 2 bits 13:8, "
        "the interrupt enables' reserved bits: normal 15:13, error 11, and before 3.00 the "
        "tuning bits).",
        "Those bits keep and read back what the guest wrote.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2", toggle=True),
    KnownDifference(
        "sdhci.blkgap-rw-bits", Scope.SPEC, "sdhci",
        "Read Wait Control and Interrupt At Block Gap are read/write.",
        "Only Stop At Block Gap Request is kept; bits 3:1 read 0.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.12", toggle=True),
    KnownDifference(
        "sdhci.cmd-timeout-cmdcmpl", Scope.SPEC, "sdhci",
        "Command Complete is not set when a Command Timeout Error occurs.",
        "Command Complete (and Transfer Complete for R1b) are set even on timeout.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.17, 2.2.18", toggle=True),
    KnownDifference(
        "sdhci.errintsts-cleared-by-cmd", Scope.SPEC, "sdhci",
        "Error status bits are cleared only by writing 1 to them.",
        "Issuing a command clears Error Interrupt Status and Auto CMD Error Status (leaving "
        "Error Interrupt in Normal Interrupt Status as it was).",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.18, 2.2.23", toggle=True),
    KnownDifference(
        "sdhci.pio-read-not-ready", Scope.SPEC, "sdhci",
        "A read transfer with no data from the card ends in a Data Timeout Error.",
        "The controller switches to a write transfer and signals Buffer Write Ready.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 1.7, 2.2.18", toggle=True),
    KnownDifference(
        "sdhci.adma1-set-length-ignored", Scope.SPEC, "sdhci",
        "An ADMA1 Set descriptor gives the length of the following Tran descriptors.",
        "The Set length is ignored: every ADMA1 Tran moves 4 KiB.",
        Versions(None, None, ("7.2.22", "10.0.13", "11.1.3")),
        spec="SDHC 2.00 1.13.3", toggle=True),
    KnownDifference(
        "sdhci.adma-dma-error-continues", Scope.SPEC, "sdhci",
        "A system bus error during an ADMA data transfer stops ADMA in ST_TFR and records "
        "the state in ADMA Error Status.",
        "ADMA Error is raised but the state field is not updated and the descriptor loop "
        "goes on.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 1.13.5, 2.2.30", toggle=True),
    KnownDifference(
        "sdhci.adma-end-on-nop-mismatch", Scope.SPEC, "sdhci",
        "End on a Nop or Link descriptor terminates ADMA normally.",
        "It raises an ADMA length mismatch error (the descriptor's unused length counts as "
        "data not transferred).",
        EVERY_VERSION, spec="SDHC 3.00 1.13.4", toggle=True),
    KnownDifference(
        "sdhci.hostctl2-needs-uhs", Scope.SPEC, "sdhci",
        "Host Control 2 is read/write on a version 3.00 controller.",
        "Writes are dropped unless the device's uhs property enables UHS-I.",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="SDHC 3.00 2.2.24", toggle=True),
)
