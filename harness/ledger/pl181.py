"""Where QEMU's ARM PL181 MMCI departs from its Technical Reference Manual.

The rules are the *PrimeCell MultiMedia Card Interface (PL180) TRM* (ARM DDI
0172); QEMU's device is ``hw/sd/pl181.c``, the same in 7.2.22 and 11.1.1 but
for the SD bus call's signature (10.0.13 agrees with the model in every
scenario of the group).  The model
(:mod:`harness.model.pl181`) follows QEMU at each of these, without a
strict-mode switch; the ``mmci`` scenario group (``sdqtest check --board
vexpress-a9``) holds QEMU to them in lockstep, and
``tests/qtest/boards/test_pl181_model.py`` states each from the model.
"""

from __future__ import annotations

from harness.ledger.entry import KnownDifference, Scope, Versions

_EVERY = Versions(None, None, ("7.2.22", "10.0.13", "11.1.3"))
_EVIDENCE = "sdqtest check --board vexpress-a9; tests/qtest/boards/test_pl181_qemu.py"
_TRM = "PL180 TRM (DDI 0172)"

PL181: tuple[KnownDifference, ...] = (
    KnownDifference(
        "pl181.data-block-end-at-data-end", Scope.SPEC, "pl181",
        "DataBlockEnd sets after each block sent or received whose CRC checked, "
        "block by block of 2^BlockSize bytes",
        "QEMU keeps no block boundaries (BlockSize is ignored): DataBlockEnd sets only "
        "with DataEnd, when DataCnt reaches 0, once per transfer", _EVERY,
        spec=f"{_TRM} 3.3.11", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.data-end-without-data", Scope.SPEC, "pl181",
        "DataEnd sets when the data path's counter reaches 0 in a transfer the data "
        "control register started",
        "QEMU runs its data path after every command and sets DataEnd and DataBlockEnd "
        "whenever DataCnt is 0: every command leaves them set, data or not", _EVERY,
        spec=f"{_TRM} 3.3.11", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.respcmd-zero", Scope.SPEC, "pl181",
        "MCIRespCmd holds the command index field of the last response received",
        "QEMU never sets it: MCIRespCmd reads 0 after every response", _EVERY,
        spec=f"{_TRM} 3.3.5", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.command-completes-in-write", Scope.SPEC, "pl181",
        "the command path state machine sends the command and waits for the response: "
        "CmdActive is set meanwhile; MCICommand is an 11-bit register",
        "the command runs inside the MCICommand write: CmdActive never sets, Enable reads "
        "back 0 at once, and every other bit of the written value is kept (all 32)",
        _EVERY, spec=f"{_TRM} 3.3.4, 3.3.11", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.pending-and-interrupt-commands", Scope.SPEC, "pl181",
        "with Pending the command waits for the data path's CmdPend; with Interrupt it "
        "waits for an interrupt request with the command timer off",
        "a command with Pending is never sent (Enable cleared, no status); Interrupt is "
        "ignored and the command runs as any other", _EVERY,
        spec=f"{_TRM} 3.3.4", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.no-crc-or-data-errors", Scope.SPEC, "pl181",
        "CmdCrcFail, DataCrcFail, DataTimeOut (after MCIDataTimer), TxUnderrun, RxOverrun "
        "and StartBitErr report bus errors; CmdTimeOut a card that did not answer in 64 "
        "clocks",
        "QEMU checks no CRC and keeps no timers: none of those bits ever sets; a command "
        "the card refuses, or a 4-byte answer to a long-response command, is CmdTimeOut at "
        "once; a FIFO read when empty answers 0, a write without DataCnt is dropped",
        _EVERY, spec=f"{_TRM} 3.3.11", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.fifo-refill-after-status", Scope.SPEC, "pl181",
        "the data path refills the receive FIFO as the host drains it",
        "after a FIFO read QEMU moves no more data from the card until MCIStatus or "
        "MCIFifoCnt is read (a workaround for Linux 2.6.21's driver); that read answers "
        "the value from before the refill", _EVERY, spec=f"{_TRM} chapter 2, Data FIFO",
        evidence=_EVIDENCE),
    KnownDifference(
        "pl181.fifocnt-from-datacnt", Scope.SPEC, "pl181",
        "MCIFifoCnt counts the words still to be written to or read from the FIFO, "
        "loaded from MCIDataLength when the data path is enabled",
        "QEMU answers ceil(MCIDataCnt / 4): the bytes not yet moved between card and FIFO "
        "(so a read's FIFO content is DataLength - 4 x FifoCnt - what the host read, as "
        "Linux's mmci_pio_read counts it)", _EVERY, spec=f"{_TRM} 3.3.15",
        evidence=_EVIDENCE),
    KnownDifference(
        "pl181.clock-keeps-clkdiv-only", Scope.SPEC, "pl181",
        "MCIClock holds ClkDiv, Enable, PwrSave and Bypass (and WideBus on later "
        "revisions), read back as written",
        "QEMU keeps the low 8 bits: Enable, PwrSave, Bypass and WideBus read 0", _EVERY,
        spec=f"{_TRM} 3.3.2", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.mask-keeps-32-bits", Scope.SPEC, "pl181",
        "MCIMask0 and MCIMask1 are 22-bit registers (one bit per MCIStatus flag)",
        "QEMU keeps all 32 bits written and reads them back", _EVERY,
        spec=f"{_TRM} 3.3.13", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.select-unimplemented", Scope.SPEC, "pl181",
        "MCISelect (0x044) selects the card of a multimedia card stack, read back",
        "QEMU has no MCISelect: it reads 0 and drops writes", _EVERY,
        spec=f"{_TRM} 3.3.14", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.no-dma-no-stream", Scope.SPEC, "pl181",
        "with DMAEnable the data path asks for DMA bursts and single transfers "
        "(MCIDMASREQ, MCIDMABREQ ...); with Mode 1 it moves a stream, not blocks",
        "QEMU has no DMA interface and no stream mode: both bits are kept in MCIDataCtrl "
        "and ignored, the data moves through the FIFO by the host's reads and writes",
        _EVERY, spec=f"{_TRM} chapter 2 (DMA interface), 3.3.9", evidence=_EVIDENCE),
    KnownDifference(
        "pl181.reset-keeps-clock-and-fifo", Scope.SPEC, "pl181",
        "a reset (PRESETn) clears every register and empties the FIFO",
        "QEMU's reset (system_reset) leaves MCIClock and the FIFO's words and pointers as "
        "they were and does not drive the interrupt outputs; only a fresh machine starts "
        "empty (so the pool never reuses a PL181 board)", _EVERY, spec=f"{_TRM} 3.3",
        evidence="harness.qemu.pool.reuse_key"),
)
