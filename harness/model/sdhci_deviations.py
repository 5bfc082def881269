"""Where QEMU's sdhci departs from the SD Host Controller Simplified Spec.

Section numbers refer to the SD Host Controller Simplified Specification
version 3.00.  ``SDHCI`` consults these through
:meth:`harness.model.deviations.Deviations.qemu`: by default it behaves as
QEMU, in strict mode as the specification says.
"""

from __future__ import annotations

from harness.model.deviations import Deviation, Deviations, Strictness

SDHCI_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "sdhci.trnmod-inhibit-or", "SDHC 3.00 2.2.5",
        "Writes to Transfer Mode are ignored while Command Inhibit (DAT) is 1.",
        "The written bits are ORed into Transfer Mode: bits can be set, not cleared.",
    ),
    Deviation(
        "sdhci.sdma-sysad-ignored-while-active", "SDHC 3.00 1.14.1, 2.2.1",
        "After an SDMA buffer boundary stop the driver writes the next address to "
        "SDMA System Address, which resumes the transfer.",
        "SDMA System Address writes are dropped while Read/Write Transfer Active is "
        "set, so a transfer stopped at a boundary never resumes.",
    ),
    Deviation(
        "sdhci.sdma-sysad-starts-transfer", "SDHC 3.00 2.2.1",
        "Writing the top byte of SDMA System Address only restarts a stopped SDMA.",
        "Writing the top byte starts an SDMA transfer whenever Block Count and Block "
        "Size are non-zero and DMA Select is SDMA, with no command issued.",
    ),
    Deviation(
        "sdhci.sdma-unaligned-no-boundary", "SDHC 3.00 2.2.2",
        "SDMA stops at every SDMA Buffer Boundary crossed.",
        "The boundary is ignored when the transfer starts at an address that is not "
        "boundary aligned.",
    ),
    Deviation(
        "sdhci.sdma-infinite-unsupported", "SDHC 3.00 1.15, 2.2.5",
        "A multiple-block SDMA transfer with Block Count Enable 0 runs until stopped.",
        "Nothing is transferred and no interrupt is raised.",
    ),
    Deviation(
        "sdhci.sdma-dmaint-at-end", "SDHC 3.00 2.2.17",
        "DMA Interrupt is raised at an SDMA buffer boundary, not when the transfer "
        "completes (Transfer Complete covers that).",
        "QEMU 10.0 and later also raise DMA Interrupt at the end of every SDMA "
        "transfer (7.2 does not).",
    ),
    Deviation(
        "sdhci.sdma-single-blkcnt", "SDHC 3.00 2.2.3",
        "Block Count is only decremented when Block Count Enable is 1 and a block "
        "remains to be counted.",
        "Single-block SDMA decrements Block Count unconditionally, wrapping 0 to 0xFFFF.",
    ),
    Deviation(
        "sdhci.swrst-single-bit", "SDHC 3.00 2.2.16",
        "Each Software Reset bit written as 1 performs its reset; several may be set "
        "at once.",
        "A reset happens only when exactly one of the three bits is written as 1.",
    ),
    Deviation(
        "sdhci.dat-reset-keeps-adma", "SDHC 3.00 2.2.16",
        "Software Reset for DAT Line stops DMA.",
        "A pending ADMA continuation survives the DAT reset and resumes on the next "
        "register access or timer tick.",
    ),
    Deviation(
        "sdhci.irq-not-reevaluated", "SDHC 3.00 2.2.19-2.2.21, 2.2.33",
        "The interrupt signal follows status, signal enables and wakeup enables at "
        "all times.",
        "The INTx line is re-evaluated only on some events: CMD/DAT resets clearing "
        "status bits and Wakeup Control writes leave it as it was.",
    ),
    Deviation(
        "sdhci.acmd12errsts-writable", "SDHC 3.00 2.2.23",
        "Auto CMD Error Status is read only.",
        "Guest writes change it.",
    ),
    Deviation(
        "sdhci.admaerr-writable", "SDHC 3.00 2.2.30",
        "ADMA Error Status is set by the controller only.",
        "Guest writes change it.",
    ),
    Deviation(
        "sdhci.reserved-bits-writable", "SDHC 3.00 2.2",
        "Reserved bits read 0 (Command bits 15:14 and 2, Power Control 7:4, Wakeup "
        "Control 7:3, Timeout Control 7:4, Clock Control reserved bits, Host Control "
        "2 bits 13:8, the interrupt enables' reserved bits: normal 15:13, error 11, and "
        "before 3.00 the tuning bits).",
        "Those bits keep and read back what the guest wrote.",
    ),
    Deviation(
        "sdhci.blkgap-rw-bits", "SDHC 3.00 2.2.12",
        "Read Wait Control and Interrupt At Block Gap are read/write.",
        "Only Stop At Block Gap Request is kept; bits 3:1 read 0.",
    ),
    Deviation(
        "sdhci.cmd-timeout-cmdcmpl", "SDHC 3.00 2.2.17, 2.2.18",
        "Command Complete is not set when a Command Timeout Error occurs.",
        "Command Complete (and Transfer Complete for R1b) are set even on timeout.",
    ),
    Deviation(
        "sdhci.errintsts-cleared-by-cmd", "SDHC 3.00 2.2.18, 2.2.23",
        "Error status bits are cleared only by writing 1 to them.",
        "Issuing a command clears Error Interrupt Status and Auto CMD Error Status "
        "(leaving Error Interrupt in Normal Interrupt Status as it was).",
    ),
    Deviation(
        "sdhci.pio-read-not-ready", "SDHC 3.00 1.7, 2.2.18",
        "A read transfer with no data from the card ends in a Data Timeout Error.",
        "The controller switches to a write transfer and signals Buffer Write Ready.",
    ),
    Deviation(
        "sdhci.adma1-set-length-ignored", "SDHC 2.00 1.13.3",
        "An ADMA1 Set descriptor gives the length of the following Tran descriptors.",
        "The Set length is ignored: every ADMA1 Tran moves 4 KiB.",
    ),
    Deviation(
        "sdhci.adma-dma-error-continues", "SDHC 3.00 1.13.5, 2.2.30",
        "A system bus error during an ADMA data transfer stops ADMA in ST_TFR and "
        "records the state in ADMA Error Status.",
        "ADMA Error is raised but the state field is not updated and the descriptor "
        "loop goes on.",
    ),
    Deviation(
        "sdhci.adma-end-on-nop-mismatch", "SDHC 3.00 1.13.4",
        "End on a Nop or Link descriptor terminates ADMA normally.",
        "It raises an ADMA length mismatch error (the descriptor's unused length "
        "counts as data not transferred).",
    ),
    Deviation(
        "sdhci.hostctl2-needs-uhs", "SDHC 3.00 2.2.24",
        "Host Control 2 is read/write on a version 3.00 controller.",
        "Writes are dropped unless the device's uhs property enables UHS-I.",
    ),
)


def sdhci_deviations(strict: Strictness = False) -> Deviations:
    """The sdhci deviation set in QEMU (default) or strict mode."""
    return Deviations(SDHCI_DEVIATIONS, strict)
