"""Where QEMU's BCM2835 SDHOST and the GPIO routing depart from what the drivers expect.

There is no public manual for the SDHOST: the reference is what its drivers
rely on (Linux ``drivers/mmc/host/bcm2835.c``, U-Boot
``drivers/mmc/bcm2835_sdhost.c``), the pin functions those of the BCM2835
ARM Peripherals manual (6.2) as Linux's device tree uses them.  The models
(:mod:`harness.model.bcm2835_sdhost`, :mod:`harness.model.bcm2835_gpio`)
follow QEMU at each entry; the ``sdhost`` group (``sdqtest check --board
raspi2b``) holds QEMU to them in lockstep.  ``hw/sd/bcm2835_sdhost.c`` and
``hw/gpio/bcm2835_gpio.c`` do the same in 7.2.22, 10.0.13 and 11.1.1 (read);
7.2's qtest cannot watch the line, so the builds seen are 10.0 and 11.1.
"""

from __future__ import annotations

from harness.ledger.entry import KnownDifference, Scope, Versions

_EVERY = Versions(None, None, ("10.0.13", "11.1.3"))
_LINUX = "Linux drivers/mmc/host/bcm2835.c"
_EVIDENCE = "sdqtest check --board raspi2b; tests/qtest/boards/test_sdhost_qemu.py"

SDHOST: tuple[KnownDifference, ...] = (
    KnownDifference(
        "sdhost.busy-irpt-at-once", Scope.SPEC, "sdhost",
        "after a BUSYWAIT (R1b) command BUSY_IRPT comes when the card releases DAT0; a "
        "command that fails reports its error with BUSY_IRPT (bcm2835_busy_irq, "
        "bcm2835_check_cmd_error)",
        "the command completes within the SDCMD write: BUSY_IRPT at once when "
        "SDHCFG.BUSY_IRPT_EN is set; a BUSYWAIT command that fails sets none (a driver "
        "waiting for it waits for its own timeout)", _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.data-irpt-is-sdio-irpt", Scope.SPEC, "sdhost",
        "SDIO_IRPT reports an SDIO card's interrupt (SDHCFG.SDIO_IRPT_EN); the data "
        "interrupt is DATA_FLAG qualified by SDHCFG.DATA_IRPT_EN (bcm2835_irq: 'there is "
        "no true data interrupt status bit')",
        "each FIFO word moved while DATA_IRPT_EN is set sets SDIO_IRPT, which drives the "
        "line; DATA_FLAG alone never does", _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.block-irpt-before-data", Scope.SPEC, "sdhost",
        "BLOCK_IRPT at the end of each block written (bcm2835_block_irq sends the next)",
        "set whenever the data path runs during a write (an SDHCFG, SDHBLC, SDCMD or "
        "SDDATA access) while the remaining count is a multiple of SDHBCT: enabling "
        "BLOCK_IRPT_EN before the first word raises it at once; never during a read",
        _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.data-flag-sticky", Scope.SPEC, "sdhost",
        "DATA_FLAG says data (reading) or space (writing) is available in the FIFO",
        "set by each word moved and by each write run, cleared only by writing 1 to it",
        _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.edm-fsm-written", Scope.SPEC, "sdhost",
        "SDEDM's FSM and FIFO level report the controller's state (the driver polls "
        "them: READDATA, WRITEDATA, READWAIT ... during a transfer, IDENTMODE or DATAMODE "
        "when idle)",
        "the FSM is what was last written (0xf, power down, written as 0; 0xf after "
        "reset) until a transfer's count reaches 0, which sets DATAMODE; no other state "
        "ever shows; the FIFO level is what was written until the next data path run",
        _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.config-reads-0", Scope.SPEC, "sdhost",
        "SDARG, SDTOUT, SDCDIV and SDHCFG are R/W (the driver's register comments; "
        "bcm2835_dumpregs reads them back)",
        "reads of them answer 0; so does any offset that is not a register's own (a "
        "byte or halfword inside a register), where writes are dropped",
        _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "sdhost.reset-keeps-status", Scope.SPEC, "sdhost",
        "a reset returns the controller's registers to their reset values",
        "the device reset (system_reset) keeps SDHSTS, SDRSP0-3 and SDVDD (so the pool "
        "never reuses the board's process)", _EVERY, spec=_LINUX,
        evidence="harness.qemu.pool.reuse_key"),
    KnownDifference(
        "sdhost.no-errors-no-dreq", Scope.SPEC, "sdhost",
        "the controller reports CRC7, CRC16, FIFO and read/erase/write timeout errors, "
        "and paces its DMA channel (DREQ 13, Linux uses DMA for more than one block)",
        "none of those bits is ever set: a push into a full FIFO is dropped, a read "
        "of an empty one answers 0, a refused data command moves nothing; there is no "
        "DMA request line (the board's DMA engine is not paced by it: PIO only here)",
        _EVERY, spec=_LINUX, evidence=_EVIDENCE),
    KnownDifference(
        "bcm2835-gpio.routing-input-and-alt0", Scope.SPEC, "bcm2835-gpio",
        "pins 48-53 in ALT0 connect the card to the SDHOST, in ALT3 to the Arasan SDHCI "
        "(Linux device tree sdhost_gpio48, emmc_gpio48; BCM2835 ARM Peripherals 6.2)",
        "all six pins input (function 0) route the card to the SDHCI, all six ALT0 to "
        "the SDHOST; any other setting (ALT3 included) leaves the card where it was; "
        "the GPIO reset puts it on the SDHCI", _EVERY, spec="BCM2835 ARM Peripherals 6.2",
        evidence=_EVIDENCE),
)
