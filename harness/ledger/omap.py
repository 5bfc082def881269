"""Where QEMU's OMAP1 MMC/SD host departs from what the hardware documents.

The reference is the controller as TI documents it (SPRU765, cited by
QEMU) and as Linux's ``drivers/mmc/host/omap.c`` drives it (the status bits
it waits for, the FIFO levels it programs); QEMU's device is
``hw/sd/omap_mmc.c`` (7.2.22's with a legacy SD card, 10.0.13's and
11.1.1's a QOM device with an SD bus).  The model
(:mod:`harness.model.omap_mmc`) follows QEMU at each of these; the ``omap``
scenario group (``sdqtest check --board sx1``) holds QEMU to them in
lockstep, and ``tests/qtest/boards/test_omap_model.py`` states each from
the model.
"""

from __future__ import annotations

from harness.ledger import boundaries
from harness.ledger.entry import KnownDifference, Scope, Versions

_EVERY = Versions(None, None, ("7.2.22", "10.0.13", "11.1.3"))
_EVIDENCE = "sdqtest check --board sx1; tests/qtest/boards/test_omap_qemu.py"
_LINUX = "Linux drivers/mmc/host/omap.c"
_DEV = "omap"

OMAP: tuple[KnownDifference, ...] = (
    KnownDifference(
        "omap.command-completes-in-write", Scope.SPEC, _DEV,
        "the controller sends the command and waits CTO clocks for the response; data "
        "moves at the bus clock, DTO clocks bound it; CCRC, DCRC, DTO and EOFB report "
        "the bus (Linux waits for each)",
        "the command and its response run inside the MMC_CMD write: EOC (or CTO when the "
        "card does not answer) is set at once; MMC_CTO and MMC_DTO are kept and ignored; "
        "no CRC is checked, no timer runs: CCRC, DCRC, DTO, EOFB, CRW and CIRQ never set",
        _EVERY, spec=f"{_LINUX} mmc_omap_irq", evidence=_EVIDENCE),
    KnownDifference(
        "omap.command-clears-status", Scope.SPEC, _DEV,
        "MMC_STAT bits stay set until software writes 1 to them",
        "a command whose response shows no card error clears every MMC_STAT bit but OCRB, "
        "CIRQ and bit 15 before setting EOC; an R3 with the OCR's power-up bit clears "
        "OCRB too; CMD12 sets EOC with CB (card busy), and no EOFB follows", _EVERY,
        spec=f"{_LINUX} mmc_omap_irq (STAT written back)", evidence=_EVIDENCE),
    KnownDifference(
        "omap.response-words", Scope.QEMU_BUG, _DEV,
        "a 48-bit response fills RSP6 and RSP7 (Linux reads those only), a 136-bit one "
        "RSP0..RSP7",
        "QEMU copies 16 bytes of its response buffer whatever the answer's length: after a "
        "4-byte answer RSP0..RSP5 hold the buffer's bytes 4..15 (the card's, when it gave "
        "16 bytes to an R1 request); RSP types 4, 5 and 7 keep the answer as it came, "
        "without timeout; R2 given 4 bytes is CTO with RSP7/RSP6 filled", _EVERY,
        spec=f"{_LINUX} mmc_omap_cmd_done", evidence=_EVIDENCE),
    KnownDifference(
        "omap.fifo-underrun-repeats", Scope.SPEC, _DEV,
        "reading MMC_DATA with the FIFO empty, or writing it full, is a software error "
        "the FIFO does not act on",
        "a read of an empty FIFO answers the word at the ring's read position again (a "
        "word of an earlier transfer) and moves nothing; a write to a full FIFO is "
        "dropped; a write with no transfer is queued, and the next data command empties "
        "the FIFO", _EVERY, spec=f"{_LINUX} mmc_omap_xfer_data", evidence=_EVIDENCE),
    KnownDifference(
        "omap.con-pow-clear-keeps-line", Scope.QEMU_BUG, _DEV,
        "clearing MMC_CON.POW powers the module down: its status and interrupt go away",
        "QEMU zeroes MMC_STAT and empties the FIFO but does not update the interrupt "
        "line: a raised line stays raised until STAT, IE, BUF, DATA or a command is "
        "written; MMC_CMD is ignored while POW is clear", _EVERY,
        spec=f"{_LINUX} mmc_omap_set_power (OMAP2) and mmc_omap_set_ios", evidence=_EVIDENCE),
    KnownDifference(
        "omap.dma-request-left-raised", Scope.QEMU_BUG, _DEV,
        "with RXDE/TXDE the DMA request follows the FIFO level, and drops when the "
        "transfer has nothing left to move",
        "when a transfer ends with the FIFO empty QEMU clears AF/AE but leaves the DMA "
        "request lines as they were: a write's TX request stays raised after its last "
        "word until BUF or another data access moves it", _EVERY,
        spec=f"{_LINUX} mmc_omap_prepare_data (BUF 0x0F80/0x800F for DMA)",
        evidence="tests/qtest/boards/test_omap_qemu.py (the dma-rx/dma-tx lines, 10.0 on)"),
    KnownDifference(
        "omap.register-fields", Scope.SPEC, _DEV,
        "MMC_CON.CLKD is the clock divisor Linux computes (up to 250 on OMAP1); MMC_SDIO "
        "reads back as written",
        "revision 1 keeps CLKD's low 8 bits; MMC_SDIO keeps bits 5 and 13 and reads the "
        "card-detect enable (written at bit 2) back at bit 0 and the wake-up enable "
        "(written at bit 9) at bit 2; MMC_BLEN and MMC_NBLK read the counters left, not "
        "the values written", _EVERY, spec=f"{_LINUX} mmc_omap_calc_divisor, "
        "set_data_timeout", evidence=_EVIDENCE),
    KnownDifference(
        "omap.no-card-detect", Scope.SPEC, _DEV,
        "CD reports a card inserted or removed (the OMAP1 cover switch)",
        "QEMU wires no card-detect on OMAP1 (7.2's cover callback was OMAP2's): CD never "
        "sets; an ejected card shows only as commands timing out (CTO)", _EVERY,
        spec=f"{_LINUX} omap_mmc_notify_cover_event", evidence=_EVIDENCE),
    KnownDifference(
        "omap.reset-keeps-sdio-be-fifo", Scope.SPEC, _DEV,
        "a reset returns every register to its reset value and empties the FIFO",
        "QEMU's reset (system_reset, MMC_SYSC.SRTS) keeps MMC_SDIO, MMC_CON.BE, the ring's "
        "words and read position, and does not drive the interrupt line; only a fresh "
        "machine starts clean (so the pool never reuses an sx1)", _EVERY,
        spec="SPRU765 reset values", evidence="harness.qemu.pool.reuse_key"),
    KnownDifference(
        "omap.version.srts-card-kept", Scope.VERSION, _DEV,
        "before 10.0 (seen on 7.2.22) the controller's reset also resets its legacy SD "
        "card: after MMC_SYSC.SRTS the card is idle with RCA 0",
        "from 10.0 the card is on the controller's SD bus and SRTS resets the controller "
        "only: the card keeps its state and RCA",
        boundaries.OMAP_SRTS_CARD.versions(confirmed=("10.0.13", "11.1.3")),
        spec="7.2's omap_mmc_reset resets its card", boundary=boundaries.OMAP_SRTS_CARD.key,
        evidence=_EVIDENCE),
    KnownDifference(
        "omap.version.short-response-stack-bytes", Scope.VERSION, _DEV,
        "before 10.0 (seen on 7.2.22) RSP0..RSP5 after a 4-byte answer hold uninitialised "
        "stack bytes: the model cannot know them and adopts what QEMU reads",
        "from 10.0 QEMU is built with -ftrivial-auto-var-init=zero: they read 0",
        boundaries.OMAP_STACK_ZERO.versions(confirmed=("10.0.13", "11.1.3")),
        spec="7.2's stack bytes", boundary=boundaries.OMAP_STACK_ZERO.key,
        adopts="RSP0..RSP5 after a 4-byte answer (QEMU < 10.0)", evidence=_EVIDENCE),
    KnownDifference(
        "omap.version.badwidth-logged", Scope.VERSION, _DEV,
        "before 11.0 (seen on 7.2.22 and 10.0.13) a register access of another width than "
        "16 bits reads or writes guest memory at the register's offset (the boot flash "
        "ROM on sx1: reads 0, writes dropped)",
        "from 11.0 it is logged as a guest error: reads 0, writes dropped",
        boundaries.OMAP_BADWIDTH.versions(confirmed=("11.1.3",)),
        spec="omap_badwidth_read16/write16", boundary=boundaries.OMAP_BADWIDTH.key,
        evidence=_EVIDENCE),
)
