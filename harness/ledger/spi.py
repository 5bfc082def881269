"""Where QEMU's SD card in SPI mode, ``ssi-sd``, the PL022 and SiFive's SPI depart from specs.

The card rules are PLS chapter 7 ("SPI Mode"); the SSP's the PL022 TRM
(ARM DDI 0194); SiFive's SPI controller's the FU540-C000 Manual
(:mod:`harness.model.sifive_spi`, ``sdqtest check --board sifive_u``).  The
models (:mod:`harness.model.sdcard_spi`, :mod:`harness.model.ssi_sd`,
:mod:`harness.model.pl022`, :mod:`harness.model.sifive_spi`) follow QEMU at each
of these, without a strict-mode switch (strict mode does not model SPI
mode); the ``spi`` scenario group (``sdqtest check --board lm3s6965evb``)
holds QEMU to them in lockstep.  Entries that look like bugs are ``spec`` or
``version`` rather than ``qemu-bug`` until the bug catalog (``harness.bugs``)
has a reproducer for them.
"""

from __future__ import annotations

from harness.ledger.boundaries import SD_PROTOCOL_REWORK as _PROTO
from harness.ledger.boundaries import SD_STATE_AND_SIZE_RULES as _RULES
from harness.ledger.entry import KnownDifference, Scope, Versions

_ALL = ("7.2.22", "10.0.13", "11.1.3")
_EVERY = Versions(None, None, _ALL)
_FROM_10_1 = _RULES.versions(confirmed=("11.1.3",))
_PROTO_TO_10_1 = _PROTO.versions(until=_RULES, confirmed=("10.0.13",))
_EVIDENCE = "sdqtest check --board lm3s6965evb; tests/qtest/boards/test_spi_qemu.py"
_SSP = "ARM PrimeCell SSP (PL022) TRM, DDI 0194"
_SIFIVE = "SiFive FU540-C000 Manual, Serial Peripheral Interface"
_SIFIVE_EVIDENCE = "sdqtest check --board sifive_u; tests/qtest/boards/test_sifive_spi_qemu.py"

SPI: tuple[KnownDifference, ...] = (
    KnownDifference(
        "spi.crc-never-checked", Scope.SPEC, "spi",
        "after CMD59 with bit 0 set, a command whose CRC7 is wrong is refused: R1 with "
        "'com crc error' (PLS 7.2.2, 7.3.2.1)",
        "ssi-sd drops the CRC byte and sd.c's CRC check is disabled: CRC on changes "
        "nothing, a bad CRC is executed", _EVERY, spec="PLS 7.2.2", evidence=_EVIDENCE),
    KnownDifference(
        "spi.illegal-r1-stale", Scope.RANDOM, "spi",
        "an illegal command is answered by R1 with 'illegal command' set (PLS 7.3.2.1)",
        "since 10.1 sd.c counts one response byte for an illegal command (or one without "
        "a response) but writes none: ssi-sd sends uninitialised stack (seen: the previous "
        "R1); the flag shows in the next command's R1", _FROM_10_1, spec="PLS 7.3.2.1",
        adopts="R1", boundary=_RULES.key,
        why="the byte cannot be predicted: the model marks it undefined and adopts QEMU's",
        evidence=_EVIDENCE),
    KnownDifference(
        "spi.r1-illegal-of-previous", Scope.QEMU_BUG, "spi",
        "R1 reports the errors of the command it answers (PLS 7.3.2.1)",
        "QEMU keeps SD mode's card status: the illegal-command flag of a refused command "
        "shows in the R1 of the next accepted one, which clears it", _EVERY,
        spec="PLS 7.3.2.1", evidence=_EVIDENCE),
    KnownDifference(
        "spi.r2-after-clear", Scope.SPEC, "spi",
        "CMD13's R2 reports the card status errors in its second byte (PLS 7.3.2.3)",
        "since 10.1 sd.c builds R1 first, which clears the clear-on-read bits, and the "
        "second byte from what is left: its error bits read 0", _FROM_10_1,
        spec="PLS 7.3.2.3", evidence=_EVIDENCE),
    KnownDifference(
        "spi.r1-parameter-is-block-len", Scope.SPEC, "spi",
        "R1 bit 6 is 'parameter error': a command argument out of range (PLS 7.3.2.1)",
        "sd.c sets it from BLOCK_LEN_ERROR (10.1 and later: CMD16 4096 answers 0x40); "
        "before 10.1 ssi-sd drops BLOCK_LEN_ERROR (CMD16 4096 answers 0x00) and sets the "
        "bit whenever R2's second byte is not 0", _EVERY, spec="PLS 7.3.2.1", evidence=_EVIDENCE),
    KnownDifference(
        "spi.version.r3-r7-idle", Scope.VERSION, "spi",
        "before 10.1 ssi-sd answers R1 0x01 (in idle state) to CMD8 and CMD58 in every "
        "state (PLS 7.3.2.4, 7.3.2.6: that R1 says whether the card is idle)",
        "since 10.1 the card frames R3 and R7 itself: R1 says the state after the command",
        _FROM_10_1, spec="PLS 7.3.2.4, 7.3.2.6", boundary=_RULES.key, evidence=_EVIDENCE),
    KnownDifference(
        "spi.version.acmd41-ready", Scope.VERSION, "spi",
        "before 10.1 ACMD41 (and CMD1) move the card to transfer state: once R1 is 0x00 "
        "it takes data commands (PLS 7.2.1)",
        "since 10.1 ACMD41 moves it to ready and a second ACMD41 is illegal: CMD13, CMD17, "
        "CMD24 ... are illegal until CMD9 or CMD10 (which move it to transfer) was sent",
        _FROM_10_1, spec="PLS 7.2.1", boundary=_RULES.key, evidence=_EVIDENCE),
    KnownDifference(
        "spi.version.cxd-standby", Scope.VERSION, "spi",
        "7.2 sends CMD9's CSD and CMD10's CID as data blocks from transfer state (PLS 7.2.6)",
        "9.1-10.0 accept them in stand-by state only, which SPI mode never reaches: both "
        "are illegal; 10.1 and later send them from any state, ending in transfer",
        _PROTO_TO_10_1, spec="PLS 7.2.6", boundary=_PROTO.key, evidence=_EVIDENCE),
    KnownDifference(
        "spi.version.cmd13-r2-csd", Scope.VERSION, "spi",
        "7.2 answers CMD13 with R2, R1 and a status byte (PLS 7.3.2.3), ssi-sd widening "
        "the card's status",
        "9.1-10.0 answer with the 16-byte CSD (SD mode's R2), which ssi-sd cannot frame: "
        "R1 0x04 (illegal command); 10.1 and later frame R2 in the card",
        _PROTO_TO_10_1, spec="PLS 7.3.2.3", boundary=_PROTO.key, evidence=_EVIDENCE),
    KnownDifference(
        "ssi-sd.write-echo", Scope.SPEC, "ssi-sd",
        "while the host sends a write block the card drives MISO high (0xFF)",
        "ssi-sd answers each data byte with the byte itself", _EVERY, spec="PLS 7.3.3",
        evidence=_EVIDENCE),
    KnownDifference(
        "ssi-sd.data-response-always-accepted", Scope.SPEC, "ssi-sd",
        "the data response token says whether the block was accepted, had a CRC error "
        "or a write error (PLS 7.3.3.1)",
        "ssi-sd answers 0x05 (accepted) to every block, whatever the card did with it, "
        "with no busy bytes after it", _EVERY, spec="PLS 7.3.3.1", evidence=_EVIDENCE),
    KnownDifference(
        "ssi-sd.stop-tran-no-busy", Scope.SPEC, "ssi-sd",
        "after the stop tran token the card holds the line busy while programming "
        "(PLS 7.3.3.2)",
        "ssi-sd sends CMD12 to the card and answers 0xFF at once", _EVERY,
        spec="PLS 7.3.3.2", evidence=_EVIDENCE),
    KnownDifference(
        "pl022.no-overrun-timeout", Scope.SPEC, "pl022",
        "a frame received into a full receive FIFO raises the overrun interrupt "
        "(SSPRIS.RORRIS); a stale receive FIFO the timeout (RTRIS)",
        "QEMU stops transmitting while the receive FIFO is full and never sets RORRIS or "
        "RTRIS; SSPICR has nothing to clear", _EVERY, spec=f"{_SSP} 3.3.7-3.3.10",
        evidence=_EVIDENCE),
    KnownDifference(
        "pl022.reset-keeps-control", Scope.SPEC, "pl022",
        "SSPCR0, SSPCR1 and SSPCPSR reset to 0",
        "QEMU's reset (system_reset) leaves them as they were, and the frame size with "
        "them; only a fresh machine starts at 0 (so the pool never reuses an SPI board)",
        _EVERY, spec=f"{_SSP} 3.2", evidence="harness.qemu.pool.reuse_key"),
    KnownDifference(
        "sifive-spi.reset-values", Scope.SPEC, "sifive-spi",
        "delay0 resets with cssck 1 and sckcs 1 (0x00010001), fmt with len 8 (8-bit frames)",
        "QEMU's reset sets delay0 to 0x1001 (sckcs 0, bit 12 set) and fmt to 0 (len 0); "
        "sckdiv 3, csdef 1 and delay1 1 are the manual's", _EVERY,
        spec=f"{_SIFIVE} (delay0, fmt)", evidence=_SIFIVE_EVIDENCE),
    KnownDifference(
        "sifive-spi.frame-format-ignored", Scope.SPEC, "sifive-spi",
        "fmt sets the frame: its length (len), bit order (endian) and lanes (proto)",
        "QEMU stores fmt but moves every frame as 8 bits, MSB first, on one lane; only "
        "fmt.dir (the receive FIFO not written) is obeyed", _EVERY,
        spec=f"{_SIFIVE} (fmt)", evidence=_SIFIVE_EVIDENCE),
    KnownDifference(
        "sifive-spi.cs-mode-level", Scope.SPEC, "sifive-spi",
        "AUTO mode asserts the chip select csid names for each frame, HOLD keeps it "
        "asserted after the first frame, OFF leaves the pin to software; csdef is its "
        "inactive level",
        "QEMU drives chip select 0 from csmode alone when csdef bit 0 is set, at a write of "
        "csmode or csid: high (inactive) in AUTO, low in HOLD, OFF and the reserved mode 1; "
        "with csdef bit 0 clear the line keeps its level; no frame asserts it, so bytes sent "
        "in AUTO mode reach no card (they come back 0)", _EVERY,
        spec=f"{_SIFIVE} (csmode, csdef)", evidence=_SIFIVE_EVIDENCE),
)
