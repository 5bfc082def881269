"""Where QEMU's sd-card departs from the SD Physical Layer Specification.

"PLS" is the SD Physical Layer Simplified Specification.  The card model
follows QEMU by default and the rule in strict mode (``toggle``)."""

from __future__ import annotations

from harness.ledger.entry import EVERY_VERSION, KnownDifference, Scope, Versions

SD: tuple[KnownDifference, ...] = (
    KnownDifference(
        "sd.out-of-range-as-address-error", Scope.SPEC, "sd",
        "an address beyond the card capacity sets OUT_OF_RANGE",
        "sets ADDRESS_ERROR (CMD17/18/24/25/28/29/30) and keeps the card in transfer",
        Versions(None, None, ("7.2.22", "10.0.13", "11.1.3")),
        spec="PLS 4.10.1 Table 4-42", toggle=True),
    KnownDifference(
        "sd.wp-write-proceeds", Scope.QEMU_BUG, "sd",
        "a write to a write-protected group (or a TMP/PERM protected card) is not done",
        "reports WP_VIOLATION in the R1 of CMD24 (and CMD25 for CSD protection), clears it "
        "on that read and then writes the data anyway",
        Versions(None, None, ("7.2.22", "10.0.13")),
        spec="PLS 4.3.4, 4.10.1 (WP_VIOLATION)", toggle=True),
    KnownDifference(
        "sd.sdhc-block-length", Scope.SPEC, "sd",
        "SDHC/SDXC read and write commands use a fixed 512-byte block whatever CMD16 set",
        "CMD17, CMD24 and CMD25 (and their range checks) use the CMD16 length on SDHC/SDXC",
        EVERY_VERSION, spec="PLS 4.3.2 (CMD16), 5.3.3", toggle=True),
    KnownDifference(
        "sd.cmd42-data-length", Scope.SPEC, "sd",
        "the lock/unlock data block has the length set by CMD16",
        "QEMU >= 9.1 waits for 512 bytes whatever CMD16 set",
        Versions("9.1", None, ("10.0.13",)), spec="PLS 4.3.7", toggle=True),
    KnownDifference(
        "sd.lock-pwd-len", Scope.QEMU_BUG, "sd",
        "lock, unlock and clear send the current password (PWD_LEN = its length); setting "
        "sends the old password followed by the new one",
        "every request needs PWD_LEN longer than the current password, so with a password "
        "set the card can be locked or unlocked only while setting a new one, never cleared",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="PLS 4.3.7.1-4.3.7.2", toggle=True),
    KnownDifference(
        "sd.lock-password-volatile", Scope.QEMU_BUG, "sd",
        "the password survives reset and power cycles; a card with a password is locked "
        "after power-up",
        "CMD0 and device reset forget the password and unlock the card",
        EVERY_VERSION, spec="PLS 4.3.7", toggle=True),
    KnownDifference(
        "sd.force-erase-keeps-data", Scope.QEMU_BUG, "sd",
        "a forced erase erases all user data along with the password",
        "only the password, the lock, TMP_WRITE_PROTECT and the group protection are "
        "cleared",
        EVERY_VERSION, spec="PLS 4.3.7.3 (forcing erase)", toggle=True),
    KnownDifference(
        "sd.erase-reset-never", Scope.SPEC, "sd",
        "a command other than CMD33/CMD38/CMD13 inside an erase sequence clears it and sets "
        "ERASE_RESET",
        "the erase start/end survive any other command; ERASE_RESET is never set",
        EVERY_VERSION, spec="PLS 4.3.5, 4.10.1 (ERASE_RESET)", toggle=True),
    KnownDifference(
        "sd.erase-range", Scope.SPEC, "sd",
        "SDSC erase addresses are aligned down to the block; an end address at or past the "
        "capacity is OUT_OF_RANGE",
        "SDSC erase runs 512-byte steps from the unaligned start; an end equal to the "
        "capacity passes the check and the last step is dropped silently",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="PLS 4.3.5", toggle=True),
    KnownDifference(
        "sd.wide-data-byte-order", Scope.QEMU_BUG, "sd",
        "the 32-bit write-protect bits and written-block count are sent MSB first",
        "sent in host byte order (little-endian on x86)",
        Versions(None, None, ("7.2.22", "10.0.13")),
        spec="PLS 4.3.4 (CMD30), 4.3.9 (ACMD22)", toggle=True),
    KnownDifference(
        "sd.cmd6-status-echoes-arg", Scope.SPEC, "sd",
        "the function selection field holds the function switched to, the current one for "
        "0xF, and 0xF for an unsupported request (then nothing switches)",
        "it echoes the argument's nibbles",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="PLS 4.3.10.4", toggle=True),
    KnownDifference(
        "sd.cmd8-vhs", Scope.SPEC, "sd",
        "only VHS 0001b (2.7-3.6 V) is answered; R7 echoes VHS and the check pattern",
        "any argument with exactly one bit set in 31:8 is answered and echoed whole",
        EVERY_VERSION, spec="PLS 4.3.13", toggle=True),
    KnownDifference(
        "sd.acmd41-hcs-ignored", Scope.SPEC, "sd",
        "an SDHC/SDXC card stays busy when the host does not set HCS",
        "HCS is ignored; the card powers up and reports CCS",
        EVERY_VERSION, spec="PLS 4.2.3.1", toggle=True),
    KnownDifference(
        "sd.acmd41-voltage-mismatch", Scope.SPEC, "sd",
        "a card whose voltage range does not match the host's goes to inactive state",
        "the card stays idle and answers R3",
        EVERY_VERSION, spec="PLS 4.2.3.1", toggle=True),
    KnownDifference(
        "sd.ocr-reserved-voltage-bits", Scope.SPEC, "sd",
        "OCR bits 14:8 are reserved (0); supported voltages are bits 23:15",
        "OCR sets bits 23:8",
        Versions(None, None, ("7.2.22", "10.0.13")), spec="PLS 5.1", toggle=True),
    KnownDifference(
        "sd.csd-copy-bit-on-write", Scope.SPEC, "sd",
        "COPY is a one-time-programmable bit written by the host with CMD27",
        "the card sets COPY after every write or erase, without updating the CSD CRC7",
        EVERY_VERSION, spec="PLS 5.3.2 (COPY)", toggle=True),
    KnownDifference(
        "sd.wp-group-size", Scope.QEMU_BUG, "sd",
        "a write-protect group is (WP_GRP_SIZE+1) * (SECTOR_SIZE+1) write blocks, as the "
        "CSD advertises (4 MiB for this CSD with 512-byte blocks)",
        "protects 2 MiB groups",
        Versions(None, None, ("7.2.22", "10.0.13")),
        spec="PLS 5.3.2 (SECTOR_SIZE, WP_GRP_SIZE)", toggle=True),
    KnownDifference(
        "sd.scr-cmd23-support", Scope.SPEC, "sd",
        "CMD_SUPPORT bit 1 is set when the card supports CMD23",
        "CMD23 works (spec_version 3) but the bit is clear",
        Versions(None, None, ("10.0.13",)), spec="PLS 5.6 (CMD_SUPPORT)", toggle=True),
    KnownDifference(
        "sd.scr-data-stat-after-erase", Scope.SPEC, "sd",
        "the bit is set when erased data reads as 1s",
        "before the erase series the bit is clear although erased blocks read 0xFF",
        Versions(None, None, ("7.2.22", "10.0.13")),
        spec="PLS 5.6 (DATA_STAT_AFTER_ERASE)", toggle=True),
    KnownDifference(
        "sd.command-during-transfer", Scope.QEMU_BUG, "sd",
        "CMD13 (and CMD55) during a data transfer answer the status and leave the transfer, "
        "its block count and its buffer alone",
        "QEMU >= 9.1 makes the last valid command the data source: a CMD13 during a write "
        "aborts QEMU (assertion), during CMD18 it switches to the generic buffer; a no- "
        "response answer rewinds the buffer; any command but CMD18/25 cancels the CMD23 "
        "count",
        Versions("9.1", None), spec="PLS 4.3.3, 4.3.4", toggle=True),
    KnownDifference(
        "sd.generic-read-past-size", Scope.QEMU_BUG, "sd",
        "a card sends the bytes of its data and no others: once a read has taken them "
        "all the card is back in the transfer state, and nothing it holds beyond them "
        "reaches the host",
        "11.1's sd_read_data hands a controller's chunk (sdbus_read_data: the SDHCI's "
        "block, the Allwinner host's word) to the generic reader whole; when a command "
        "during the transfer made the generic buffer the source (CMD13 during CMD18: "
        "sd.command-during-transfer) and the read stands at its stale length, no byte "
        "is sent and sdbus_read_data asserts (QEMU aborts); past it, the unsigned length "
        "left wraps and the whole chunk is copied from there, beyond SDState.data when "
        "it crosses the buffer's 512 bytes (10.x read byte by byte: one stale byte)",
        Versions("11.1", None, ("11.1.3", "11.1.1")), spec="PLS 4.3.3, Table 4-41",
        toggle=True, change="none yet (hw/sd/sd.c sd_generic_read_data)",
        evidence="sdqtest bugs 0027 on 11.1 and the 11.1.1 source build (sdhci-pci); "
                 "tests/qtest/boards/test_sunxi_qemu.py (orangepi-pc, 11.1-arm)"),
    KnownDifference(
        "sd.data-size-not-migrated", Scope.QEMU_BUG, "sd",
        "a card migrated inside its data goes on sending (or taking) the rest of its "
        "data block",
        "QEMU >= 9.1 keeps the data block's length in data_size, which sd-card's vmstate "
        "does not carry: the destination's is 0, so the card moves one more byte (or the "
        "controller's one more chunk) and goes to the transfer state; the rest reads 0",
        Versions("9.1", None, ("10.0.13", "11.1.3", "11.1.1")), spec="QEMU migration",
        toggle=True, change="none yet (hw/sd/sd.c sd_vmstate)",
        evidence="tests/qtest/crosscheck/test_migration_data_size.py (issue #43)"),
    KnownDifference(
        "sd.cmd56-stale-length", Scope.SPEC, "sd",
        "a GEN_CMD read sends one data block of the current block length",
        "QEMU >= 9.1 sends zeros with the length of the previous data command",
        Versions("9.1", None, ("10.0.13",)), spec="PLS 4.3.12", toggle=True),
    KnownDifference(
        "sd.data-command-any-state", Scope.SPEC, "sd",
        "ACMD13, ACMD22, ACMD51 and CMD19 are illegal outside transfer state",
        "QEMU 9.1-10.0 logs the wrong state and starts sending anyway",
        Versions("9.1", "10.1", ("10.0.13",)), spec="PLS 4.8 (Table 4-41)", toggle=True),
)
