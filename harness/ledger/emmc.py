"""Where QEMU's ``emmc`` departs from the JEDEC eMMC standard (JESD84-B51).

The eMMC model follows QEMU by default and the rule in strict mode; the SD
card's entries apply too, for the paths the two devices share.  QEMU has
the emmc device from 9.1 (``emmc.device`` boundary)."""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import KnownDifference, Scope, Versions

#: QEMU has the emmc device from 9.1 (boundary ``emmc.device``).
_DEVICE = "9.1"

EMMC: tuple[KnownDifference, ...] = (
    KnownDifference(
        "emmc.version.absent-partition-refused", Scope.VERSION, "emmc",
        "before 10.1 PARTITION_ACCESS takes any value: a device without boot or RPMB "
        "partitions accepts their selection (against JESD84-B51 6.6.1, 7.4.69) and then "
        "reads and writes its user area",
        "from 10.1 selecting a boot or RPMB partition the device does not have sets "
        "SWITCH_ERROR and leaves PARTITION_CONFIG alone",
        Versions("10.1", None, ("10.2.2", "11.1.3")),
        spec="10.0.13's emmc_function_switch (no partition check)",
        boundary=boundaries.EMMC_RPMB.key,
        evidence="sdqtest check --board fuji-emmc --qemu 10.0-arm (emmc-boot-switch-absent)"),
    KnownDifference(
        "emmc.switch-any-modes-byte", Scope.SPEC, "emmc",
        "CMD6 WRITE_BYTE/SET_BITS/CLEAR_BITS change only fields the host may write; any "
        "other index sets SWITCH_ERROR and changes nothing",
        "any byte of the modes segment (0..191), reserved and read-only ones included, is "
        "written",
        Versions(_DEVICE, None, ("11.1.3",)),
        spec="JESD84-B51 6.6.1, 7.4 (EXT_CSD access types)", toggle=True),
    KnownDifference(
        "emmc.switch-error-sticky", Scope.SPEC, "emmc",
        "SWITCH_ERROR is reported once and cleared by the next valid command",
        "SWITCH_ERROR stays set in every later status until the device is reset",
        Versions(_DEVICE, None, ("11.1.3",)),
        spec="JESD84-B51 6.13 (SWITCH_ERROR, clear condition B)", toggle=True),
    KnownDifference(
        "emmc.sleep-no-awake", Scope.QEMU_BUG, "emmc",
        "CMD5 with the sleep bit clear brings a sleeping device back to stand-by; CMD0 "
        "resets it",
        "a sleeping device drops every command but CMD0 without a response (CMD5 cannot "
        "wake it), and CMD0, whatever its argument, aborts QEMU (an assertion on the device "
        "mode)",
        Versions(_DEVICE, None, ("11.1.3",)), spec="JESD84-B51 6.6.21 (Sleep, CMD5)", toggle=True),
    KnownDifference(
        "emmc.partition-range", Scope.QEMU_BUG, "emmc",
        "block addresses are checked against the size of the partition PARTITION_ACCESS "
        "selects: beyond its end the device reports ADDRESS_OUT_OF_RANGE",
        "every partition is checked against the user area's size, so an access past the end "
        "of a boot or RPMB partition reads and writes whatever follows it in the image file "
        "(the next partition)",
        Versions(_DEVICE, None, ("11.1.3",)),
        spec="JESD84-B51 6.2.5, 6.6.4 (partition access)", toggle=True),
    KnownDifference(
        "emmc.rpmb-address-unchecked", Scope.QEMU_BUG, "emmc",
        "an authenticated write or read of a half-sector beyond the RPMB partition fails "
        "with result 0x0004 (address failure) and programs nothing",
        "the address is not checked: the write lands (and the counter advances) wherever "
        "the address falls in the image after the RPMB partition's start",
        Versions("10.1", None, ("11.1.3",)),
        spec="JESD84-B51 6.6.22.4 (RPMB, Address failure)", toggle=True),
    KnownDifference(
        "emmc.gp-partition-access", Scope.QEMU_BUG, "emmc",
        "selecting a general purpose partition the device does not have is refused with "
        "SWITCH_ERROR",
        "PARTITION_ACCESS 4..7 is accepted and the next block access aborts QEMU (an "
        "assertion on the partition)",
        Versions(_DEVICE, None, ("11.1.3",)),
        spec="JESD84-B51 7.4.69 (PARTITION_CONFIG)", toggle=True),
    KnownDifference(
        "emmc.erased-content", Scope.SPEC, "emmc",
        "erased or trimmed blocks read as ERASED_MEM_CONT says: 0x00 for the 0 the device "
        "reports",
        "erased blocks read 0xFF; CMD38's trim and discard arguments erase the same way",
        Versions(_DEVICE, None, ("11.1.3",)),
        spec="JESD84-B51 7.4.59 (ERASED_MEM_CONT), 6.6.9", toggle=True),
)
