"""Where QEMU's sd-card departs from the SD Physical Layer Specification.

The card model follows QEMU by default; with ``strict=True`` it follows the
rule stated here instead.  "PLS" is the SD Physical Layer Simplified
Specification.
"""

from __future__ import annotations

from harness.model.deviations import Deviation

sd_deviations: tuple[Deviation, ...] = (
    Deviation(
        "sd.out-of-range-as-address-error", "PLS 4.10.1 Table 4-42",
        "an address beyond the card capacity sets OUT_OF_RANGE",
        "sets ADDRESS_ERROR (CMD17/18/24/25/28/29/30) and keeps the card in transfer"),
    Deviation(
        "sd.wp-write-proceeds", "PLS 4.3.4, 4.10.1 (WP_VIOLATION)",
        "a write to a write-protected group (or a TMP/PERM protected card) is not done",
        "reports WP_VIOLATION in the R1 of CMD24 (and CMD25 for CSD protection), clears it "
        "on that read and then writes the data anyway"),
    Deviation(
        "sd.sdhc-block-length", "PLS 4.3.2 (CMD16), 5.3.3",
        "SDHC/SDXC read and write commands use a fixed 512-byte block whatever CMD16 set",
        "CMD17, CMD24 and CMD25 (and their range checks) use the CMD16 length on SDHC/SDXC"),
    Deviation(
        "sd.cmd42-data-length", "PLS 4.3.7",
        "the lock/unlock data block has the length set by CMD16",
        "QEMU >= 9.1 waits for 512 bytes whatever CMD16 set"),
    Deviation(
        "sd.lock-pwd-len", "PLS 4.3.7.1-4.3.7.2",
        "lock, unlock and clear send the current password (PWD_LEN = its length); setting "
        "sends the old password followed by the new one",
        "every request needs PWD_LEN longer than the current password, so with a password set "
        "the card can be locked or unlocked only while setting a new one, never cleared"),
    Deviation(
        "sd.lock-password-volatile", "PLS 4.3.7",
        "the password survives reset and power cycles; a card with a password is locked "
        "after power-up",
        "CMD0 and device reset forget the password and unlock the card"),
    Deviation(
        "sd.force-erase-keeps-data", "PLS 4.3.7.3 (forcing erase)",
        "a forced erase erases all user data along with the password",
        "only the password, the lock, TMP_WRITE_PROTECT and the group protection are cleared"),
    Deviation(
        "sd.erase-reset-never", "PLS 4.3.5, 4.10.1 (ERASE_RESET)",
        "a command other than CMD33/CMD38/CMD13 inside an erase sequence clears it and sets "
        "ERASE_RESET",
        "the erase start/end survive any other command; ERASE_RESET is never set"),
    Deviation(
        "sd.erase-range", "PLS 4.3.5",
        "SDSC erase addresses are aligned down to the block; an end address at or past the "
        "capacity is OUT_OF_RANGE",
        "SDSC erase runs 512-byte steps from the unaligned start; an end equal to the capacity "
        "passes the check and the last step is dropped silently"),
    Deviation(
        "sd.wide-data-byte-order", "PLS 4.3.4 (CMD30), 4.3.9 (ACMD22)",
        "the 32-bit write-protect bits and written-block count are sent MSB first",
        "sent in host byte order (little-endian on x86)"),
    Deviation(
        "sd.cmd6-status-echoes-arg", "PLS 4.3.10.4",
        "the function selection field holds the function switched to, the current one for "
        "0xF, and 0xF for an unsupported request (then nothing switches)",
        "it echoes the argument's nibbles"),
    Deviation(
        "sd.cmd8-vhs", "PLS 4.3.13",
        "only VHS 0001b (2.7-3.6 V) is answered; R7 echoes VHS and the check pattern",
        "any argument with exactly one bit set in 31:8 is answered and echoed whole"),
    Deviation(
        "sd.acmd41-hcs-ignored", "PLS 4.2.3.1",
        "an SDHC/SDXC card stays busy when the host does not set HCS",
        "HCS is ignored; the card powers up and reports CCS"),
    Deviation(
        "sd.acmd41-voltage-mismatch", "PLS 4.2.3.1",
        "a card whose voltage range does not match the host's goes to inactive state",
        "the card stays idle and answers R3"),
    Deviation(
        "sd.ocr-reserved-voltage-bits", "PLS 5.1",
        "OCR bits 14:8 are reserved (0); supported voltages are bits 23:15",
        "OCR sets bits 23:8"),
    Deviation(
        "sd.csd-copy-bit-on-write", "PLS 5.3.2 (COPY)",
        "COPY is a one-time-programmable bit written by the host with CMD27",
        "the card sets COPY after every write or erase, without updating the CSD CRC7"),
    Deviation(
        "sd.wp-group-size", "PLS 5.3.2 (SECTOR_SIZE, WP_GRP_SIZE)",
        "a write-protect group is (WP_GRP_SIZE+1) * (SECTOR_SIZE+1) write blocks, as the CSD "
        "advertises (4 MiB for this CSD with 512-byte blocks)",
        "protects 2 MiB groups"),
    Deviation(
        "sd.scr-cmd23-support", "PLS 5.6 (CMD_SUPPORT)",
        "CMD_SUPPORT bit 1 is set when the card supports CMD23",
        "CMD23 works (spec_version 3) but the bit is clear"),
    Deviation(
        "sd.scr-data-stat-after-erase", "PLS 5.6 (DATA_STAT_AFTER_ERASE)",
        "the bit is set when erased data reads as 1s",
        "before the erase series the bit is clear although erased blocks read 0xFF"),
    Deviation(
        "sd.command-during-transfer", "PLS 4.3.3, 4.3.4",
        "CMD13 (and CMD55) during a data transfer answer the status and leave the transfer, "
        "its block count and its buffer alone",
        "QEMU >= 9.1 makes the last valid command the data source: a CMD13 during a write "
        "aborts QEMU (assertion), during CMD18 it switches to the generic buffer; a no-response "
        "answer rewinds the buffer; any command but CMD18/25 cancels the CMD23 count"),
    Deviation(
        "sd.cmd56-stale-length", "PLS 4.3.12",
        "a GEN_CMD read sends one data block of the current block length",
        "QEMU >= 9.1 sends zeros with the length of the previous data command"),
    Deviation(
        "sd.data-command-any-state", "PLS 4.8 (Table 4-41)",
        "ACMD13, ACMD22, ACMD51 and CMD19 are illegal outside transfer state",
        "QEMU 9.1-10.0 logs the wrong state and starts sending anyway"),
)
