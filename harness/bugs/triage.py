"""Every ledger entry triaged by harm: what a guest loses through it.

The ledger says *what* differs from the specification; this table says
*how much it matters*, the way a maintainer decides whether a fix is worth
taking.  The classes, most harmful first, are :class:`Harm`; an entry in any
of the first five is a QEMU bug (it has a row in :mod:`harness.bugs.catalog`,
or names the row that carries it in ``bug``).  An entry of the last class
keeps its specification reference (the ledger's ``spec``) and says here why
no known driver notices it.

Evidence names what it rests on: a driver function (Linux
``drivers/mmc/host/``, ``drivers/mmc/core/``, U-Boot ``drivers/mmc/``, read
in their sources), a reproducer run on the installed builds (``sdqtest bugs
--qemu B``), or a QEMU source reading.  "Source-read" evidence about a
driver path was read, not yet recorded on a booting guest.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Harm(enum.StrEnum):
    """How bad an entry is for a guest, worst first."""

    DATA = "data lost or wrong"
    ABORT = "guest-triggerable abort or crash"
    ISOLATION = "isolation or memory safety"
    DRIVER = "a real driver stalls, errs or mis-detects"
    MIGRATION = "state lost in migration"
    HARMLESS = "spec difference no known driver notices"

    @property
    def is_bug(self) -> bool:
        """The first five classes: a fix upstream would take."""
        return self is not Harm.HARMLESS


@dataclass(frozen=True)
class Triage:
    """One entry's class and the evidence for it."""

    harm: Harm
    evidence: str
    #: For a bug-class entry without a catalog row of its own: the catalog
    #: key whose fix covers it (the same QEMU code path).
    bug: str = ""


D, A, ISO, V, M, H = (Harm.DATA, Harm.ABORT, Harm.ISOLATION, Harm.DRIVER, Harm.MIGRATION,
                      Harm.HARMLESS)
_LNX = "Linux drivers/mmc/"
_UB = "U-Boot drivers/mmc/"
_NO_WP = (f"no driver in {_LNX}core or {_UB} sends CMD28/CMD29/CMD30 or CMD27")

#: What the board controllers' spec entries rest on: a driver written after
#: the Linux driver's own path meets each on every build (the board's group).
_PL181 = ("harness/driver/pl181.py follows Linux mmci.c's PIO path (mmci_pio_read/write, "
          "mmci_cmd_irq, mmci_data_irq) and completes the mmci group with it on "
          "7.2/10.0/11.1; not yet met by a recorded driver")
_SUNXI = ("harness/driver/allwinner.py follows Linux sunxi-mmc.c (requests, IDMAC "
          "descriptors, manual stop) and U-Boot sunxi_mmc.c's PIO polling and completes "
          "the sunxi group with it; not yet met by a recorded driver")
_SDHOST = ("harness/driver/sdhost.py follows Linux bcm2835.c (PIO, its interrupt enables, "
           "SDEDM polling) and completes the sdhost group with it on 10.0/11.1; not yet "
           "met by a recorded driver")
_OMAP = ("harness/driver/omap_mmc.py follows Linux omap.c's PIO path (mmc_omap_start_command, "
         "mmc_omap_xfer_data) and completes the omap group with it on 7.2/10.0/11.1; not "
         "yet met by a recorded driver")

#: Ledger key -> triage.  Every ledger entry has one (tests/qtest/bugs/test_triage.py).
TRIAGE: dict[str, Triage] = {
    # -- SD card (hw/sd/sd.c) ---------------------------------------------------------
    "sd.out-of-range-as-address-error": Triage(H, f"{_LNX}core/block.c CMD_ERRORS treats "
        "R1_OUT_OF_RANGE and R1_ADDRESS_ERROR alike (the request fails either way), and "
        "mmc_blk never addresses past the CSD capacity; U-Boot's mmc_read_blocks checks "
        "the range before sending"),
    "sd.wp-write-proceeds": Triage(D, "reproducer 0014 on 7.2.22, 10.0.13, 11.1.3: after "
        "CMD28 protects block 0's group, CMD24 reports WP_VIOLATION and overwrites the "
        "block: data the guest protected is lost (" + _NO_WP + "; a guest using them, or "
        "MMC_IOC_CMD from user space, loses it)"),
    "sd.sdhc-block-length": Triage(H, f"{_LNX}core/core.c mmc_set_blocklen sends CMD16 only "
        "to byte-addressed cards (mmc_card_blockaddr) and always 512; U-Boot's "
        "mmc_set_blocklen sends 512 (read_bl_len of an SDHC card): the CMD16 length QEMU "
        "uses is the fixed one"),
    "sd.cmd42-data-length": Triage(H, f"no CMD42 in {_LNX}core or {_UB}; user space "
        "(MMC_IOC_CMD, core/block.c mmc_blk_ioctl_cmd) sends one 512-byte block, which "
        "QEMU takes"),
    "sd.lock-pwd-len": Triage(V, "reproducer 0001: CMD42 LOCK/UNLOCK/CLR_PWD with the "
        "current password always fail (LOCK_UNLOCK_FAILED); card locking through QNX's "
        "sdmmc driver (sdmmc_lock_unlock_devctl) or Linux's MMC_IOC_CMD from user space "
        "(core/block.c mmc_blk_ioctl_cmd) cannot work"),
    "sd.lock-password-volatile": Triage(ISO, "QEMU source (sd_reset clears pwd and "
        "CARD_IS_LOCKED): a CMD0 or a device reset unlocks a locked card, so the password "
        "protects nothing against the guest it is meant to keep out (PLS 4.3.7: locked "
        "after power-up)"),
    "sd.force-erase-keeps-data": Triage(ISO, "QEMU source (sd_lock_command, ERASE flag): a "
        "forced erase drops the password and leaves every block readable: whoever does not "
        "know the password reads the locked data (PLS 4.3.7.3: all user data erased)"),
    "sd.erase-reset-never": Triage(H, f"{_LNX}core/core.c mmc_do_erase and {_UB}"
        "mmc_write.c mmc_erase_t send CMD32, CMD33, CMD38 back to back: no command comes "
        "between them for ERASE_RESET to report"),
    "sd.erase-range": Triage(H, f"{_LNX}core/core.c mmc_do_erase passes block-aligned "
        "addresses (from << 9 on SDSC) and the last block as the end, never the capacity; "
        "U-Boot's mmc_erase_t likewise"),
    "sd.wide-data-byte-order": Triage(D, f"{_LNX}core/block.c mmc_sd_num_wr_blocks reads "
        "ACMD22 with ntohl (MSB first): after an SD write error mmc_blk_mq_rw_recovery "
        "completes that many blocks; QEMU's little-endian 1 reads 16777216, so the blocks "
        "of a failed write are reported written (reproducer 0002)"),
    "sd.cmd6-status-echoes-arg": Triage(H, f"{_LNX}core/sd.c sd_set_bus_speed_mode and "
        "U-Boot's sd_set_card_speed ask only for functions the card lists as supported, "
        "for which the echo is the function switched to"),
    "sd.cmd8-vhs": Triage(H, f"{_LNX}core/sd_ops.c mmc_send_if_cond and U-Boot's "
        "mmc_send_if_cond send VHS 0001b with pattern 0xAA, the one argument QEMU answers "
        "as the spec does"),
    "sd.acmd41-hcs-ignored": Triage(H, f"{_LNX}core/sd.c mmc_sd_get_ocr sets HCS whenever "
        "CMD8 was answered, U-Boot's sd_send_op_cond whenever it found an SD 2.0 card: QEMU "
        "always answers CMD8, so HCS is always set"),
    "sd.acmd41-voltage-mismatch": Triage(H, f"{_LNX}core/core.c mmc_select_voltage and "
        "U-Boot's sd_send_op_cond send a window inside the card's OCR"),
    "sd.ocr-reserved-voltage-bits": Triage(H, f"{_LNX}core/core.c mmc_select_voltage "
        "intersects the OCR with the host's ocr_avail (sdhci: 1.8, 3.0, 3.3 V bits), U-Boot "
        "with cfg->voltages: bits 14:8 are never used"),
    "sd.csd-copy-bit-on-write": Triage(H, f"{_LNX}core/sd.c mmc_decode_csd does not read "
        "COPY; sdhci strips the R2 CRC, so the stale CSD CRC7 is never seen; U-Boot does "
        "not read COPY"),
    "sd.wp-group-size": Triage(D, "QEMU protects 2 MiB groups where the CSD advertises "
        "4 MiB: the second half of a group a guest protects stays writable and is "
        "overwritten (" + _NO_WP + ")"),
    "sd.scr-cmd23-support": Triage(H, f"{_LNX}core/sd.c mmc_decode_scr reads it; without "
        "it mmc_blk uses open-ended transfers ended by CMD12, which QEMU supports: only "
        "CMD23 pre-defined counts are not used"),
    "sd.scr-data-stat-after-erase": Triage(H, f"{_LNX}core/sd.c mmc_decode_scr stores it "
        "as card->erased_byte; since Linux 4.12 (discard_zeroes_data gone) no block path "
        "promises the erased value; U-Boot does not read it"),
    "sd.command-during-transfer": Triage(A, "reproducer 0003: QEMU >= 9.1 aborts "
        "(g_assert_not_reached in sd_write_data) when CMD13 comes between CMD24 and its "
        "data; Linux's mmc_blk polls CMD13 (card_busy_detect) and U-Boot's "
        "mmc_send_status, though not inside a data phase"),
    "sd.generic-read-past-size": Triage(A, "reproducer 0027: QEMU 11.1 aborts (assertion "
        "in sdbus_read_data) when CMD13 comes between the blocks of a CMD18 read on "
        "sdhci-pci and between its words on the Allwinner host (sunxi-status-during-read, "
        "orangepi-pc); past the stale length the controller's chunk is copied from beyond "
        "SDState.data (host memory to the guest). Linux's mmc_blk polls CMD13 "
        "(card_busy_detect) and U-Boot's mmc_send_status, though not inside a data phase"),
    "sd.cmd56-stale-length": Triage(H, f"no CMD56 in {_LNX}core or {_UB} (vendor health "
        "tools send it through MMC_IOC_CMD after CMD16)"),
    "sd.data-command-any-state": Triage(H, "drivers send ACMD13, ACMD22, ACMD51 and CMD19 "
        f"in transfer state only ({_LNX}core/sd.c mmc_app_send_scr, mmc_app_sd_status; "
        "U-Boot sd_change_freq)"),
    # -- SD host controller (hw/sd/sdhci.c) --------------------------------------------
    "sdhci.trnmod-inhibit-or": Triage(H, f"{_LNX}host/sdhci.c sdhci_set_transfer_mode "
        "writes Transfer Mode while DAT is busy only for a no-data command, clearing the "
        "Auto CMD bits: both the spec and QEMU leave them as they were"),
    "sdhci.sdma-sysad-ignored-while-active": Triage(V, f"{_UB}sdhci.c sdhci_transfer_data: "
        "at each SDHCI_INT_DMA_END it writes the next 512 KiB boundary to "
        "SDHCI_DMA_ADDRESS; QEMU drops the write, the transfer never resumes and U-Boot "
        "prints 'Transfer data timeout' for any read over 512 KiB into an aligned buffer "
        f"(loading a kernel). {_LNX}host/sdhci.c sdhci_data_irq does the same (reproducer "
        "0013: 1 DMA interrupt, no Transfer Complete, on 7.2.22, 10.0.13, 11.1.3)"),
    "sdhci.sdma-sysad-starts-transfer": Triage(H, f"{_LNX}host/sdhci.c sdhci_prepare_data "
        "and U-Boot's sdhci_send_command write the SDMA address before Block Size and Count "
        "(Block Count is 0 after a completed transfer): the write starts nothing"),
    "sdhci.sdma-unaligned-no-boundary": Triage(H, "without the stop the transfer simply "
        "completes; Linux's sdhci_data_irq and U-Boot's sdhci_transfer_data only act on a "
        "DMA interrupt, the data are right"),
    "sdhci.sdma-infinite-unsupported": Triage(H, f"{_LNX}host/sdhci.c "
        "sdhci_set_transfer_mode sets Block Count Enable for every multi-block transfer, "
        "U-Boot's sdhci_send_command for every transfer"),
    "sdhci.sdma-dmaint-at-end": Triage(H, f"{_LNX}host/sdhci.c sdhci_data_irq handles the "
        "extra DMA interrupt by writing one more address, and sdhci_finish_data sets "
        "bytes_xfered from the block count; U-Boot writes one more address"),
    "sdhci.sdma-single-blkcnt": Triage(H, "neither Linux's sdhci nor U-Boot's reads Block "
        "Count after a transfer (only sdhci_dumpregs prints it)"),
    "sdhci.swrst-single-bit": Triage(H, f"{_LNX}host/sdhci.c sdhci_request_done resets CMD "
        "and DAT one after the other (a Ricoh quirk), U-Boot's sdhci_send_command "
        "likewise; the reset-all is a single bit"),
    "sdhci.dat-reset-keeps-adma": Triage(ISO, "reproducer 0015 on 7.2.22, 10.0.13, 11.1.3: "
        "after Software Reset for DAT Line the paused ADMA2 transfer resumes on the next "
        "register access and writes a buffer the driver has taken back. "
        f"{_LNX}host/sdhci.c sdhci_request_done resets DAT after a data error and the "
        "request's buffers are unmapped (dma_unmap_sg): DMA where it must not go"),
    "sdhci.irq-not-reevaluated": Triage(H, f"{_LNX}host/sdhci.c sdhci_irq clears status by "
        "writing 1s (which QEMU re-evaluates) before sdhci_request_done resets CMD and DAT; "
        "Wakeup Control is written only around suspend (sdhci_enable_irq_wakeups), with "
        "the interrupts quiet"),
    "sdhci.acmd12errsts-writable": Triage(H, "drivers only read it (Linux "
        "sdhci_cmd_irq/sdhci_dumpregs, U-Boot not at all)"),
    "sdhci.admaerr-writable": Triage(H, "drivers only read it (Linux "
        "sdhci_adma_show_error, sdhci_dumpregs)"),
    "sdhci.reserved-bits-writable": Triage(H, "drivers write 0 to reserved bits and mask "
        "what they read (Linux's sdhci read-modify-writes keep the 0s they wrote)"),
    "sdhci.blkgap-rw-bits": Triage(H, f"no Read Wait or Interrupt at Block Gap use in "
        f"{_LNX}host/sdhci.c or {_UB}sdhci.c"),
    "sdhci.cmd-timeout-cmdcmpl": Triage(H, f"{_LNX}host/sdhci.c sdhci_cmd_irq handles the "
        "timeout first and returns; U-Boot's sdhci_send_command breaks on "
        "SDHCI_INT_ERROR: Command Complete beside it is ignored"),
    "sdhci.errintsts-cleared-by-cmd": Triage(H, "Linux's sdhci_irq clears error status by "
        "writing 1s before the next command; U-Boot writes SDHCI_INT_ALL_MASK to "
        "SDHCI_INT_STATUS before every command"),
    "sdhci.pio-read-not-ready": Triage(H, "only when the card refuses a read; Linux ends "
        "that in sdhci_timeout_data_timer, U-Boot's sdhci_transfer_data in its own timeout, "
        "as with the spec's Data Timeout Error; QEMU's card answers every read they send"),
    "sdhci.adma1-set-length-ignored": Triage(H, f"{_LNX}host/sdhci.c and {_UB}sdhci_adma.c "
        "build ADMA2 tables only; ADMA1 is never selected"),
    "sdhci.adma-dma-error-continues": Triage(H, "each further descriptor access still goes "
        "through the DMA address space (an IOMMU keeps refusing); Linux and U-Boot treat "
        "SDHCI_INT_ADMA_ERROR as a failed request and reset DAT"),
    "sdhci.adma-end-on-nop-mismatch": Triage(H, f"{_LNX}host/sdhci.c sdhci_adma_table_pre "
        "ends a table with Nop+End after the data descriptors: QEMU ends the transfer when "
        "Block Count reaches 0, before that descriptor"),
    "sdhci.hostctl2-needs-uhs": Triage(H, "with uhs=0 the controller reports no UHS "
        f"capability, and {_LNX}host/sdhci.c writes Host Control 2 only for UHS timing, "
        "1.8 V signalling or preset values, which it then does not use"),
    # -- eMMC ----------------------------------------------------------------------------
    "emmc.version.absent-partition-refused": Triage(H, f"{_LNX}core/block.c "
        "mmc_blk_alloc_parts selects only the partitions EXT_CSD reports (BOOT_MULT, "
        "RPMB_SIZE_MULT): before 10.1 they never selected an absent one"),
    "emmc.switch-any-modes-byte": Triage(H, f"{_LNX}core/mmc_ops.c mmc_switch callers "
        "(mmc_select_bus_width, mmc_select_hs*, part_config) and U-Boot's mmc_switch write "
        "only writable EXT_CSD fields"),
    "emmc.switch-error-sticky": Triage(H, "Linux and U-Boot switch only to values the "
        "device reports (mmc_select_*, partitions EXT_CSD lists), so SWITCH_ERROR is never "
        "set on their paths"),
    "emmc.sleep-no-awake": Triage(A, "reproducer 0010: CMD0 to a device in Sleep (CMD5) "
        f"aborts QEMU >= 9.1; {_LNX}core/mmc.c mmc_sleep/_mmc_suspend puts eMMC to sleep "
        "on suspend and wakes it by a reset and CMD0 (mmc_init_card on resume)"),
    "emmc.partition-range": Triage(ISO, "reproducer 0005: a read past boot partition 1 "
        "returns boot partition 2's first block (no ADDRESS_ERROR): one partition's data "
        "read through another, across the write protection boot partitions can have"),
    "emmc.rpmb-address-unchecked": Triage(ISO, "reproducer 0006: an authenticated RPMB read "
        "past the partition returns the user area's data under a valid RPMB MAC: the "
        "replay-protected partition's bound does not hold"),
    "emmc.gp-partition-access": Triage(A, "reproducer 0011: PARTITION_ACCESS 4 on a device "
        "without general purpose partitions, then a read: QEMU aborts "
        "(g_assert_not_reached in sd_part_offset)"),
    "emmc.erased-content": Triage(H, f"{_LNX}core/mmc.c records ERASED_MEM_CONT "
        "(card->erased_byte) and no block path relies on it since 4.12; U-Boot does not "
        "read it"),
    # -- values QEMU draws, migration ---------------------------------------------------
    "sd.rca-random": Triage(H, f"every driver reads the RCA from R6 ({_LNX}core/sd_ops.c "
        "mmc_send_relative_addr, U-Boot's mmc_startup)"),
    "sdhci.rspreg3-after-auto-cmd12": Triage(ISO, "reproducer 0007 on 7.2.22: RSPREG3 gets an "
        "uninitialised stack buffer (host memory to the guest) after an Auto CMD12 the card "
        "does not answer"),
    "migration-loses-hostctl2": Triage(M, "reproducer 0008 (a migration on one build): "
        "Host Control 2 is not in vmstate_sdhci, the UHS mode and 1.8 V signalling are "
        "lost on the destination"),
    "sdhci-pci.pci-config-not-migrated": Triage(M, "reproducer 0009: BAR0 and COMMAND are "
        "not migrated: the destination's controller is unmapped, the guest's next "
        "register access goes nowhere"),
    "sd.acmd22-count-survives-reset": Triage(D, f"{_LNX}core/block.c mmc_sd_num_wr_blocks "
        "after a failed write that ended in a reset (mmc_blk_reset, CMD0) gets the "
        "pre-reset count (reproducer 0004): blocks never written are completed as written"),
    # -- behaviour that changed between releases ---------------------------------------
    "sd.version.rca": Triage(H, "drivers read the RCA from R6 (mmc_send_relative_addr)"),
    "sd.version.cmd6-state": Triage(H, "drivers send CMD6 in transfer state "
        "(Linux mmc_sd_switch after mmc_select_card)"),
    "sd.version.cmd17-length": Triage(H, "drivers read 512-byte blocks (see "
        "sd.sdhc-block-length)"),
    "sd.version.cmd26": Triage(H, f"no CMD26 in {_LNX}core or {_UB}"),
    "sd.version.cmd42-length": Triage(H, "see sd.cmd42-data-length"),
    "sd.version.cmd56": Triage(H, "see sd.cmd56-stale-length"),
    "sd.version.current-cmd": Triage(A, "the 9.1 rework: a data byte for a command that "
        "is not a write aborts QEMU", bug="sd.command-during-transfer"),
    "sd.version.inactive": Triage(H, "drivers do not talk to an inactive card "
        "(it answers nothing on either side)"),
    "sd.version.class-table": Triage(H, "only a locked card refuses commands; drivers "
        "do not lock cards"),
    "sd.version.sendingdata-state": Triage(H, "see sd.data-command-any-state"),
    "sd.version.spec-v1": Triage(H, "a user-set property, refused at start-up"),
    "sd.version.size-rule": Triage(H, "an image size check at start-up, not guest-visible"),
    "compat.sd-card.spec_version": Triage(H, "machine type compatibility, as intended"),
    "compat.sd-card.erase-blocks-as-zero": Triage(H, "machine type compatibility, as "
        "intended"),
    # -- board controllers (ARM) ------------------------------------------------------
    "usdhc.vendor-spec-16bit": Triage(V, f"{_LNX}host/sdhci-esdhc-imx.c "
        "esdhc_writel_le/readl_le use VEND_SPEC bits above 15 (FRC_SDCLK_ON, clock "
        "gating); tests/qtest/boards/test_board_qemu.py -k vendor"),
    "usdhc.prot-ctrl-partial-readback": Triage(H, f"{_LNX}host/sdhci-esdhc-imx.c "
        "esdhc_writeb_le composes PROT_CTRL from the width, DMA select and LED it tracks; "
        "LCTL, CDTL, CDSS, D3CD and EMODE are not read back (source-read)"),
    "usdhc.mix-ctrl-reads-0": Triage(H, "esdhc_writew_le keeps its own copy of the "
        "transfer mode (imx_data->scratchpad) and the tuning bits are used only on "
        "UHS-capable boards (source-read)"),
    "usdhc.vendor-registers-read-0": Triage(H, "WTMK_LVL, DLL and tuning control are "
        "written by esdhc_reset/tuning paths that QEMU's timing-free model does not need; "
        "a 0 read back changes no decision (source-read)"),
    "usdhc.blk-att-boundary-forced": Triage(H, "esdhc-imx uses ADMA2 (no SDMA boundary) "
        "on these SoCs (source-read)"),
    "usdhc.standard-clock-control": Triage(H, "esdhc_pltfm_set_clock writes the standard "
        "enable bits as well (source-read)"),
    "usdhc.no-busy-irq": Triage(H, "QEMU follows the hardware Linux's esdhc-imx expects "
        "(SDHCI_QUIRK_NO_BUSY_IRQ)"),
    "usdhc.spec-version-3": Triage(H, "a version change QEMU made on purpose"),
    "s3c.control-registers-ignored": Triage(H, "Linux's sdhci-s3c writes CONTROL2/3/4 "
        "for clock and drive strength that the emulation does not need (source-read)"),
    "npcm.prnsts-reset-no-card": Triage(H, "a driver's probe resets all "
        "(sdhci_init: SDHCI_RESET_ALL) before looking for a card, after which QEMU "
        "reports it"),
    "npcm.version-3-rules-2": Triage(H, "Linux's sdhci-npcm uses 512-byte blocks "
        "(mmc_blk), within the buffer QEMU has (source-read)"),
    "aspeed.wp-inverted": Triage(H, "a version change QEMU made on purpose (the board's "
        "wiring)"),
    "aspeed.capareg-per-soc": Triage(H, "a version change QEMU made on purpose"),
    # -- SPI mode (ssi-sd, pl022) -------------------------------------------------------
    "spi.crc-never-checked": Triage(H, f"{_LNX}host/mmc_spi.c sends correct CRCs "
        "(use_spi_crc); an emulated bus corrupts none"),
    "spi.illegal-r1-stale": Triage(ISO, "ssi-sd sends an uninitialised stack byte as R1 "
        "after an illegal command (host memory to the guest)"),
    "spi.r1-illegal-of-previous": Triage(V, f"source-read, not yet recorded on a boot: "
        f"{_LNX}host/mmc_spi.c maps an R1 with 'illegal command' to -ENOSYS, and "
        "core/core.c mmc_rescan_try_freq probes SDIO (CMD52, CMD5: illegal on an SD card) "
        "before SD; the flag then fails the next accepted command, CMD55 of ACMD41, and "
        "core/sd_ops.c mmc_wait_for_app_cmd gives up on it in SPI mode: the SD card is "
        "not attached as one"),
    "spi.r2-after-clear": Triage(H, f"{_LNX}host/mmc_spi.c reads the R2 second byte only "
        "for CMD13's status; R1 carries the same errors"),
    "spi.r1-parameter-is-block-len": Triage(H, "drivers set 512-byte blocks (CMD16 512): "
        "no BLOCK_LEN_ERROR"),
    "spi.version.r3-r7-idle": Triage(H, "mmc_spi reads R3/R7 payloads; the idle bit is "
        "checked only in ACMD41's R1"),
    "spi.version.acmd41-ready": Triage(H, f"{_LNX}core/sd.c mmc_sd_init_card and U-Boot's "
        "mmc_startup send CMD9 (CSD) after ACMD41, which moves the card to transfer"),
    "spi.version.cxd-standby": Triage(V, "QEMU 9.1-10.0 refuse CMD9/CMD10 in SPI mode: "
        f"{_LNX}core/sd.c mmc_sd_get_csd (mmc_send_csd, SPI: mmc_spi_send_cxd) fails and "
        "the card is not detected (fixed in 10.1)"),
    "spi.version.cmd13-r2-csd": Triage(V, "QEMU 9.1-10.0 answer CMD13 with R1 illegal in SPI "
        f"mode: {_LNX}core/block.c card_busy_detect/mmc_send_status after writes fails "
        "(fixed in 10.1)"),
    "ssi-sd.write-echo": Triage(H, "drivers ignore MISO while sending a data block "
        "(mmc_spi_writeblock reads only the data response token)"),
    "ssi-sd.data-response-always-accepted": Triage(H, "QEMU's card writes every block it "
        "is sent, so 'accepted' is true"),
    "ssi-sd.stop-tran-no-busy": Triage(H, "mmc_spi_writeblock/stop waits for busy to end; "
        "no busy is a finished wait"),
    "pl022.no-overrun-timeout": Triage(H, "Linux's spi-pl022 drains the receive FIFO as it "
        "sends (no overrun reached); the receive timeout is used only in interrupt mode "
        "for a FIFO left stale, which QEMU never leaves"),
    "pl022.reset-keeps-control": Triage(H, "drivers program CR0/CR1/CPSR at probe "
        "(pl022_setup) after any reset"),
    # -- SiFive's SPI controller (hw/ssi/sifive_spi.c) --------------------------------------
    "sifive-spi.reset-values": Triage(H, "source-read: Linux drivers/spi/spi-sifive.c "
        "sifive_spi_init writes delay0 and delay1, and sifive_spi_prep_transfer writes fmt "
        "(len: bits_per_word) before any transfer; the reset values are never used"),
    "sifive-spi.frame-format-ignored": Triage(H, "source-read: mmc_spi sends 8-bit words, "
        "MSB first, on one lane (Linux drivers/mmc/host/mmc_spi.c, no SPI_LSB_FIRST), the "
        "one frame QEMU moves; harness/driver/sifive_spi.py completes the spi group so"),
    "sifive-spi.cs-mode-level": Triage(H, "source-read: Linux drivers/spi/spi-sifive.c "
        "sifive_spi_set_cs asserts with HOLD and releases with AUTO, csid and csdef set "
        "per device: QEMU's levels for those two modes are the manual's (the spi group "
        "on sifive_u)"),
    # -- sd.c and migration (issue 43) ----------------------------------------------------
    "sd.data-size-not-migrated": Triage(M, "reproduced: a card migrated inside its block "
        "sends one more byte (10.0) or chunk (11.1), then zeros "
        "(tests/qtest/crosscheck/test_migration_data_size.py, mutant "
        "card-data-offset-not-migrated)"),
    # -- the Aspeed wrapper (hw/sd/aspeed_sdhci.c) ------------------------------------------
    "aspeed.capability-mirrors-halves": Triage(H, "7.2 only: Linux sdhci-of-aspeed.c "
        "aspeed_sdc_set_slot_capability sets SDR104 through the high mirror, which 7.2 "
        "drops; the slot then runs at a lower speed, the data is the same"),
    # -- the PL181 MMCI (hw/sd/pl181.c) -----------------------------------------------------
    **{k: Triage(H, _PL181) for k in (
        "pl181.data-block-end-at-data-end", "pl181.data-end-without-data",
        "pl181.respcmd-zero", "pl181.command-completes-in-write",
        "pl181.pending-and-interrupt-commands", "pl181.no-crc-or-data-errors",
        "pl181.fifo-refill-after-status", "pl181.fifocnt-from-datacnt",
        "pl181.clock-keeps-clkdiv-only", "pl181.mask-keeps-32-bits",
        "pl181.select-unimplemented", "pl181.no-dma-no-stream",
        "pl181.reset-keeps-clock-and-fifo")},
    # -- the Allwinner SD/MMC host (hw/sd/allwinner-sdhost.c) -------------------------------
    **{k: Triage(H, _SUNXI) for k in (
        "sunxi.no-fifo", "sunxi.no-response-re-only", "sunxi.reset-bits-noop",
        "sunxi.autostop-at-zero", "sunxi.idmac-gctl-only", "sunxi.idmac-writeback",
        "sunxi.idmac-status", "sunxi.bycr-counts-down", "sunxi.unimplemented-registers",
        "sunxi.registers-keep-any-write", "sunxi.sun4i-fifo-also-at-0x200",
        "sunxi.version.irq-level-value")},
    "sunxi.reset-keeps-irq": Triage(H, "the interrupt controller's own reset forgets the "
        "line's level, and Linux sunxi-mmc.c sunxi_mmc_init_host (probe, resume) writes "
        "SD_GCTL, whose update lowers the output: no interrupt reaches a guest after a "
        "system reset; only qtest's view of the line stays raised"),
    # -- the BCM2835 SDHOST (hw/sd/bcm2835_sdhost.c) and its pin routing ---------------------
    **{k: Triage(H, _SDHOST) for k in (
        "sdhost.busy-irpt-at-once", "sdhost.data-irpt-is-sdio-irpt",
        "sdhost.block-irpt-before-data", "sdhost.data-flag-sticky", "sdhost.edm-fsm-written",
        "sdhost.config-reads-0", "sdhost.reset-keeps-status", "sdhost.no-errors-no-dreq",
        "bcm2835-gpio.routing-input-and-alt0")},
    # -- the OMAP1 MMC/SD host (hw/sd/omap_mmc.c) -------------------------------------------
    **{k: Triage(H, _OMAP) for k in (
        "omap.command-completes-in-write", "omap.command-clears-status",
        "omap.fifo-underrun-repeats", "omap.register-fields", "omap.no-card-detect",
        "omap.reset-keeps-sdio-be-fifo", "omap.version.srts-card-kept",
        "omap.version.badwidth-logged")},
    "omap.version.short-response-stack-bytes": Triage(ISO, "7.2.22 reads host stack bytes "
        "in RSP0..RSP5 after a short response (tests/qtest/boards/test_omap_qemu.py); "
        "builds with -ftrivial-auto-var-init=zero read 0", bug="omap.response-words"),
    "omap.response-words": Triage(ISO, "the unused response words come from an "
        "uninitialised buffer: host stack bytes on 7.2.22, zeros only where the build "
        "zero-initialises (tests/qtest/boards/test_omap_qemu.py); Linux omap.c "
        "mmc_omap_cmd_done reads RSP6/RSP7 only, so no driver misreads them"),
    "omap.con-pow-clear-keeps-line": Triage(V, "source-read: Linux omap.c mmc_omap_irq "
        "finds MMC_STAT 0 after a power-down (mmc_omap_set_ios) while QEMU keeps the level "
        "line raised: the handler is entered again with nothing to clear"),
    "omap.dma-request-left-raised": Triage(V, "source-read: Linux omap.c "
        "mmc_omap_prepare_data arms a DMA request by BUF for each transfer; a request left "
        "raised after the last word asks the next channel for a word early"),
}


def triage(key: str) -> Triage:
    """The triage of ledger entry ``key``; a KeyError naming it when there is none."""
    try:
        return TRIAGE[key]
    except KeyError:
        raise KeyError(f"ledger entry {key!r} has no triage (harness/bugs/triage.py)") \
            from None
