"""Where QEMU's Allwinner SD/MMC host (``allwinner-sdhost``) departs from the datasheet.

The rules are the *Allwinner H3 Datasheet* (revision 1.2) section 5.3 "SD/MMC
Host Controller" (register list 5.3.7, the IDMAC 5.3.4) and what Linux's
``sunxi-mmc.c`` relies on; QEMU's behaviour is read from
``hw/sd/allwinner-sdhost.c`` (7.2.22, 10.0.13, 11.1.1) and held to in lockstep
by the ``sunxi`` group (``sdqtest check --board orangepi-pc``).  The model
(:mod:`harness.model.allwinner`) follows QEMU at each, without a strict-mode
switch.
"""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import KnownDifference, Scope, Versions

_ALL = ("7.2.22", "10.0.13", "11.1.3")
_EVERY = Versions(None, None, _ALL)
_H3 = "H3 Datasheet 1.2"
_EVIDENCE = "sdqtest check --board orangepi-pc; tests/qtest/boards/test_sunxi_qemu.py"
_DEV = "sunxi"

ALLWINNER: tuple[KnownDifference, ...] = (
    KnownDifference(
        "sunxi.no-fifo", Scope.SPEC, _DEV,
        "data passes through a 16-word FIFO: SD_STAR.FIFO_LEVEL counts its words, FIFO_FULL "
        "and the RX/TX watermark flags follow SD_FWLR, DRR/DTR (SD_RISR bits 5, 4) ask for "
        "service; SD_STAR resets to 0x00000006",
        "no FIFO: SD_FIFO moves one word to or from the card at the access; SD_STAR reads "
        "FIFO_LEVEL 1 while the card has data to send, else FIFO_EMPTY; no watermark, "
        "FIFO_FULL, DRR or DTR ever; SD_STAR resets to 0x100 (CARD_PRESENT, whether a "
        "medium is there or not) and a write clears the bits it has set",
        _EVERY, spec=f"{_H3} 5.3.7.16, 5.3.7.15", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.no-response-re-only", Scope.SPEC, _DEV,
        "a command the card does not answer ends with RTO (response timeout, bit 8) and "
        "CC; Linux waits for CC after RTO",
        "QEMU raises RE (bit 1) only, without CC, whenever the card's answer is not the "
        "length SD_CMDR asks for (none, or short for long and back); the response "
        "registers keep their old values", _EVERY, spec=f"{_H3} 5.3.7.15", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.reset-bits-noop", Scope.SPEC, _DEV,
        "SD_GCTL SOFT_RST, FIFO_RST and DMA_RST reset the controller, the FIFO and the DMA "
        "interface before they clear; SD_DMAC IDMAC_RST resets the IDMAC and clears itself",
        "the three SD_GCTL bits read 0 at once and reset nothing (a transfer in progress "
        "goes on); SD_DMAC keeps IDMAC_RST as written and nothing is reset",
        _EVERY, spec=f"{_H3} 5.3.7.1, 5.3.7.25", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.autostop-at-zero", Scope.SPEC, _DEV,
        "with STOP_CMD_FLAG the controller sends CMD12 once, after the data command's last "
        "block, with the SD_A12A argument",
        "QEMU sends CMD12 (argument 0) whenever its transfer counter is 0 at a command load "
        "or a SD_FIFO access of such a command: at once for a command loaded without "
        "SD_BYCR written since the counter ran out, and again at each access past the end; "
        "its answer replaces SD_RESP0 (with the data command's response flags) and ACD "
        "is raised each time", _EVERY, spec=f"{_H3} 5.3.7.7, 5.3.7.20", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.idmac-gctl-only", Scope.SPEC, _DEV,
        "the IDMAC runs while SD_DMAC.IDMAC_ENB is set, takes a descriptor only while its "
        "OWN bit is set (else DES_UNAVL_INT), follows DES3 only in chain mode (CH), stops "
        "at LD; it moves SD_BYCR bytes as the card sends them",
        "QEMU runs the chain at the command load whenever SD_GCTL.DMA_ENB is set and "
        "SD_BYCR and SD_BKSR are not 0 (a read only if the card has data at once), ignoring "
        "IDMAC_ENB, OWN, CH, ER and DIC; DES1 above the variant's largest buffer is cut to "
        "it; DTC is raised at the end even when LD came before SD_BYCR's bytes were moved",
        _EVERY, spec=f"{_H3} 5.3.4.2, 5.3.7.25", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.idmac-writeback", Scope.SPEC, _DEV,
        "after a descriptor's buffer is moved the IDMAC clears its OWN bit (DES0 bit 31)",
        "QEMU writes the whole descriptor back: OWN cleared, DES1 the size it used (0 "
        "becomes 0x10000 on sun5i, a size above the largest becomes the largest)",
        _EVERY, spec=f"{_H3} 5.3.4.2", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.idmac-status", Scope.SPEC, _DEV,
        "SD_IDST's RX_INT/TX_INT are set for a descriptor without DIC and, with "
        "NOR_INT_SUM, reach the interrupt line through SD_IDIE",
        "QEMU sets NOR_INT_SUM and RX_INT (read) or TX_INT (write) once at the end of "
        "every chain, DIC or not; SD_IDST and SD_IDIE never reach the line; the chain also "
        "raises SDIOI (SD_RISR bit 16, the card's SDIO interrupt)",
        _EVERY, spec=f"{_H3} 5.3.7.27, 5.3.7.28", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.bycr-counts-down", Scope.SPEC, _DEV,
        "SD_BYCR holds the byte count software wrote",
        "after an IDMAC chain SD_BYCR reads the bytes left (0 when all moved); PIO leaves "
        "it as written", _EVERY, spec=f"{_H3} 5.3.7.6", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.unimplemented-registers", Scope.SPEC, _DEV,
        "SD_CHDA and SD_CBDA hold the IDMAC's current descriptor and buffer addresses; "
        "0x48/0x4C count the bytes moved between card and FIFO and between FIFO and bus "
        "(sunxi-mmc.c SDXC_REG_CBCR, SDXC_REG_BBCR); SD_RES_CRC, SD_DATA7..0_CRC and "
        "SD_CRC_STA hold the CRCs of the last response and data",
        "QEMU has none of the four counters or addresses (reads 0, writes dropped); the "
        "CRC registers read 0 whatever was transferred", _EVERY,
        spec=f"{_H3} 5.3.7.29-5.3.7.30, 5.3.7.34-5.3.7.36", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.registers-keep-any-write", Scope.SPEC, _DEV,
        "SD_RESP0..3 and SD_MISR are read-only; reserved bits read 0",
        "QEMU keeps all 32 bits of any write to a register it stores (SD_RESP0..3 "
        "included: they read back what was written until the next response); a write "
        "to SD_MISR clears those bits of SD_RISR, as a write to SD_RISR does",
        _EVERY, spec=f"{_H3} 5.3.7.9-5.3.7.14", evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.sun4i-fifo-also-at-0x200", Scope.SPEC, _DEV,
        "the A10's (sun4i) data port is at 0x100 (U-Boot's struct sunxi_mmc: 0x100 before "
        "sun6i, 0x200 from it); 0x200 is not a register there",
        "QEMU's sun4i type answers the data port at 0x100 and at 0x200 alike (a read or "
        "write at 0x200 moves a word to or from the card)", _EVERY,
        spec="A10 SD/MMC register list; U-Boot arch/arm/include/asm/arch-sunxi/mmc.h",
        evidence="sdqtest check --board cubieboard"),
    KnownDifference(
        "sunxi.version.irq-level-value", Scope.VERSION, _DEV,
        "before 10.0 (seen on 7.2.22) allwinner-sdhost drives its line with the value "
        "SD_RISR & SD_IMKR: qtest reports a raise at every change of a non-zero value (DTC "
        "joining a pending CC raises again)",
        "from 10.0 the line is driven 0 or 1, as an interrupt line is a level: a raise "
        "when it goes from low to high only",
        boundaries.SUNXI_IRQ_LEVEL.versions(confirmed=("10.0.13", "11.1.3")),
        spec="7.2's line driven with the masked status value",
        boundary=boundaries.SUNXI_IRQ_LEVEL.key, evidence=_EVIDENCE),
    KnownDifference(
        "sunxi.reset-keeps-irq", Scope.SPEC, _DEV,
        "a reset of the controller (SD_GCTL INT_ENB 0, SD_IMKR and SD_RISR 0) leaves no "
        "interrupt pending: the line is low",
        "allwinner_sdhost_reset (7.2.22, 10.0.13, 10.2.2, 11.0.3, 11.1.1 alike) sets every "
        "register to its reset value but never drives the output: a line raised before "
        "system_reset stays raised until the next access that updates it (seen on 7.2-arm, "
        "10.0-arm, 11.1-arm, 10.2.2 and 11.1.1 built from source, orangepi-pc, cubieboard "
        "and bpim2u; so the pool closes a process handed back with its line raised "
        "instead of resetting it: harness.qemu.pool.LINE_ONLY)",
        Versions(None, None, (*_ALL, "10.2.2", "11.1.1")), spec=f"{_H3} 5.3.7.1, 5.3.7.9",
        evidence="harness.qemu.pool.reuse_key; tests/qtest/boards/test_sunxi_qemu.py"),
)
