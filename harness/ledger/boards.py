"""Where QEMU's board SD controllers depart from their vendors' manuals.

The controller models (:mod:`harness.model.sdhci_usdhc`, ``sdhci_s3c``,
``sdhci_npcm``) follow QEMU at each of these (no strict-mode switch: the
vendor's behaviour is not modelled); the board tests (``tests/qtest/boards``)
hold QEMU to each.  The new entries are ``spec`` (QEMU's deliberate
simplification against the manual) rather than ``qemu-bug``: the bug catalog
(``harness.bugs``) lists every ``qemu-bug`` with a reproducer.
"""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import KnownDifference, Scope, Versions

_ALL = ("7.2.22", "10.0.13", "11.1.3")
_EVERY = Versions(None, None, _ALL)
_FROM_10 = Versions(None, None, ("10.0.13", "11.1.3"))
_IMX = "i.MX 7Dual Applications Processor Reference Manual, uSDHC"
_EVIDENCE = "tests/qtest/boards/test_board_qemu.py, sdqtest check --board"

BOARDS: tuple[KnownDifference, ...] = (
    KnownDifference(
        "usdhc.vendor-spec-16bit", Scope.QEMU_BUG, "usdhc",
        "The Vendor Specific Register (0xC0) is 32 bits wide (CMD_BYTE_EN is bit 31).",
        "hw/sd/sdhci.c keeps it in a 16-bit field: the upper half of a write is dropped "
        "and reads back 0.",
        Versions(None, None, _ALL),
        spec="i.MX 6/7 Reference Manual, uSDHC VEND_SPEC",
        evidence="tests/qtest/boards/test_board_qemu.py (mcimx7d-sabre)"),
    KnownDifference(
        "usdhc.prot-ctrl-partial-readback", Scope.SPEC, "usdhc",
        "PROT_CTRL (0x28) reads back what was written: LCTL, D3CD, EMODE, CDTL, CDSS, "
        "DTW, DMASEL and the block gap and wakeup bits.",
        "QEMU maps a write onto the standard Host Control 1 (keeping LCTL, CDTL, CDSS, "
        "DTW, DMASEL; dropping D3CD and EMODE) and composes a read from DTW, DMASEL and "
        "the upper half only: LCTL, CDTL and CDSS read 0 even when set, and a byte "
        "access at 0x29 reaches the standard Power Control instead of PROT_CTRL[15:8].",
        _EVERY, spec=f"{_IMX} PROT_CTRL", evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.mix-ctrl-reads-0", Scope.SPEC, "usdhc",
        "MIX_CTRL (0x48) is read/write: it reads back the transfer mode and the tuning "
        "controls written.",
        "QEMU keeps the low 16 bits of a write as the transfer mode (used by the next "
        "command) and answers 0 to every read of 0x48.",
        _EVERY, spec=f"{_IMX} MIX_CTRL", evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.vendor-registers-read-0", Scope.SPEC, "usdhc",
        "WTMK_LVL, DLL_CTRL, CLK_TUNE_CTRL_STATUS and TUNING_CTRL are read/write "
        "registers with non-zero reset values.",
        "QEMU answers 0 at 0x44, 0x60, 0x68, 0x6C and 0xCC and drops their writes, "
        "without running a pending ADMA step first as other register accesses do; at "
        "0x44 a read of the upper half of the standard Capabilities gives 0 as well.",
        _EVERY, spec=f"{_IMX} WTMK_LVL, DLL_CTRL, CLK_TUNE_CTRL_STATUS, TUNING_CTRL",
        evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.blk-att-boundary-forced", Scope.SPEC, "usdhc",
        "BLK_ATT (0x04) bits 15:13 are reserved: the uSDHC has no programmable SDMA "
        "buffer boundary.",
        "QEMU sets the standard SDMA Buffer Boundary to 512 KiB on every write at 0x04 "
        "(a byte write too), so it reads back 7 in bits 14:12 and a DMA Interrupt comes "
        "only at a 512 KiB boundary.",
        _EVERY, spec=f"{_IMX} BLK_ATT", evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.standard-clock-control", Scope.SPEC, "usdhc",
        "SYS_CTRL (0x2C) holds the clock divisors DVS and SDCLKFS; the low nibble is "
        "reserved and the SD clock is gated by the hardware (VEND_SPEC FRC_SDCLK_ON).",
        "QEMU keeps the standard Clock Control there: a command is issued only with "
        "Internal Clock Enable and SD Clock Enable (bits 0 and 2) set, and PRES_STATE "
        "SDSTB mirrors Internal Clock Stable.",
        _EVERY, spec=f"{_IMX} SYS_CTRL, PRES_STATE", evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.no-busy-irq", Scope.SPEC, "usdhc",
        "SDHC 3.00 2.2.17: Transfer Complete is set when a command with busy (R1b) "
        "and no data ends its busy phase.",
        "QEMU's i.MX controllers (SDHCI_QUIRK_NO_BUSY_IRQ) never set it there, as Linux's "
        "esdhc-imx driver expects of the hardware; the driver waits on Command Inhibit "
        "(DAT) instead.",
        _EVERY, spec="SD Host Controller Simplified Specification 3.00, 2.2.17",
        evidence=_EVIDENCE),
    KnownDifference(
        "usdhc.spec-version-3", Scope.VERSION, "usdhc",
        "QEMU 7.2: imx-usdhc keeps the common sd-spec-version default 2 (HCVER 2.00).",
        "Later QEMU sets sd-spec-version 3 for imx-usdhc: HCVER 3.00 and the 3.00 "
        "register rules.",
        boundaries.USDHC_SPEC_3.versions(confirmed=("10.0.13", "11.1.3")),
        spec="hw/sd/sdhci.c imx_usdhc_init", boundary=boundaries.USDHC_SPEC_3.key,
        evidence=_EVIDENCE),
    KnownDifference(
        "s3c.control-registers-ignored", Scope.SPEC, "s3c",
        "CONTROL2 (0x80), CONTROL3 (0x84) and CONTROL4 (0x8C) are read/write clock, "
        "feedback-clock and drive-strength controls.",
        "QEMU's s3c-sdhci answers 0 at exactly those offsets and drops the writes, "
        "without running a pending ADMA step first as other register accesses do.",
        _FROM_10, spec="Exynos 4210 User's Manual, SDMMC CONTROL2/3/4",
        builds="7.2 cannot be driven (its qtest cannot watch the named IRQ output)",
        evidence=_EVIDENCE, toggle=True),
    KnownDifference(
        "npcm.prnsts-reset-no-card", Scope.SPEC, "npcm",
        "SDHC 3.00 2.2.9: Card Inserted, Card State Stable and Card Detect Pin Level "
        "reflect the card in the slot from power-on.",
        "npcm7xx-sdhci's reset overwrites Present State with 0x04a00000: after power-on "
        "it reports no card (and reserved bit 26 set) until a Software Reset For All "
        "samples the card again; Block Gap Control reads 0x80 (a reserved bit) until then.",
        _EVERY, spec="SD Host Controller Simplified Specification 3.00, 2.2.9",
        evidence=_EVIDENCE),
    KnownDifference(
        "npcm.version-3-rules-2", Scope.SPEC, "npcm",
        "A controller whose Host Controller Version says 3.00 (HCVER 0x1002) follows the "
        "3.00 register rules, and one whose Capabilities say a 2048-byte maximum block "
        "length has a buffer of that size (SDHC 3.00 2.2.26).",
        "The generic SDHCI inside npcm7xx-sdhci keeps sd-spec-version 2 and the buffer "
        "its default capabilities size (512 bytes); only the registers the wrapper's "
        "reset writes say 3.00 and 2048: a larger block size is cut to 512.",
        _EVERY, spec="SD Host Controller Simplified Specification 3.00, 2.2.26, 2.2.2",
        evidence=_EVIDENCE),
    KnownDifference(
        "aspeed.wp-inverted", Scope.VERSION, "aspeed",
        "QEMU 7.2: the AST2600 EVB's SD slots report Write Protect Switch Pin Level 1 "
        "for a writable card (SDHC 3.00 2.2.9).",
        "Later QEMU inverts the signal as the EVB wires it (sysbus SDHCI property "
        "wp-inverted): a writable card reads Write Protect Switch Pin Level 0.",
        boundaries.ASPEED_WP_INVERTED.versions(confirmed=("10.0.13", "11.1.3")),
        spec="SD Host Controller Simplified Specification 3.00, 2.2.9; hw/arm/aspeed.c",
        boundary=boundaries.ASPEED_WP_INVERTED.key, evidence=_EVIDENCE),
    KnownDifference(
        "aspeed.capareg-per-soc", Scope.VERSION, "aspeed",
        "QEMU 7.2: every Aspeed SoC's SD slots report Capabilities 0x01e80080 (no ADMA1).",
        "Later QEMU gives each SoC its own: the AST2600's slots report 0x0000000701f80080 "
        "(ADMA1, 1.8 V, SDR50/SDR104/DDR50).",
        boundaries.ASPEED_CAPAREG.versions(confirmed=("10.0.13", "11.1.3")),
        spec="hw/sd/aspeed_sdhci.c", boundary=boundaries.ASPEED_CAPAREG.key,
        evidence=_EVIDENCE),
    KnownDifference(
        "aspeed.capability-mirrors-halves", Scope.VERSION, "aspeed",
        "QEMU 7.2: a write to a slot's low capability mirror (wrapper 0x10, 0x20) replaces "
        "the slot's whole Capabilities with the 32 bits written, and the high mirrors "
        "(0x14, 0x24) are plain registers: Linux's aspeed_sdc_set_slot_capability, which "
        "sets SDR104 through the high mirror, leaves the slot without it.",
        "Later QEMU keeps each half on its own: the high mirror reads and sets the slot's "
        "Capabilities [63:32].",
        boundaries.ASPEED_CAPAREG.versions(confirmed=("10.0.13", "11.1.3")),
        spec="hw/sd/aspeed_sdhci.c; Linux drivers/mmc/host/sdhci-of-aspeed.c",
        boundary=boundaries.ASPEED_CAPAREG.key, evidence=_EVIDENCE),
)
