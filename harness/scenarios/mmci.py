"""The SD card behind an ARM PL181 MMCI: the ``mmci`` group.

Run on a board with a PL181 (``sdqtest check --board vexpress-a9``); the
lockstep compares every MMCI and system register access with the model
(:mod:`harness.model.pl181_target`).  The driver is Linux's ``mmci.c`` PIO
path (:mod:`harness.driver.pl181`).  What the TRM or the SD spec promises
whatever QEMU does (a response's CRC-free fields, the data read back, the
ID registers) is noted with :meth:`Context.expect`; where QEMU departs from
the TRM the model says how (ledger ``pl181.*``).
"""

from __future__ import annotations

from harness.driver.ops import set_medium
from harness.driver.pl181 import IRQENABLE, MmciHost, MmciTransfer
from harness.hwdefs import pl181 as P
from harness.hwdefs import sd as S
from harness.images import BLOCK
from harness.scenarios.common import expect_identified
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "mmci"
_ST = P.MCISTATUS


def _ready(t: Target, ctx: Context) -> MmciHost:
    """Identification (PLS 4.2), the card selected, CMD16 512."""
    h = MmciHost(t)
    expect_identified(ctx, h.init(), h.rca)
    return h


def _pattern(seed: int, n: int = BLOCK) -> bytes:
    return bytes((seed * 31 + i * 13) & 0xFF for i in range(n))


def _expect_data(ctx: Context, t: Target, what: str, x: MmciTransfer, lba: int) -> None:
    ctx.expect(x.command.ok, f"{what}: the command did not end with CmdRespEnd")
    ctx.expect(x.data == t.image_read(lba * BLOCK, len(x.data)),
               f"{what}: the data differs from the card image")


@scenario("mmci-registers", GROUP)
def mmci_registers(t: Target, ctx: Context) -> None:
    """MMCI registers: reset values, IDs, what a write keeps, access sizes.

    The ID bytes (TRM 3.3.17-18), what each register keeps of an all-ones
    write (ledger pl181.clock-keeps-clkdiv-only, mask-keeps-32-bits,
    select-unimplemented), writes to read-only
    registers, byte and halfword accesses, SYS_ID and SYS_MCI."""
    ids = [t.read(P.mmci(P.PERIPH_ID + 4 * i), 4) for i in range(8)]
    ctx.expect(ids == list(P.ID_BYTES), f"PeriphID/PCellID {ids} (TRM: 0x181 by ARM)")
    for reg in (*P.MMCI_REGISTERS, P.SYS_ID, P.SYS_MCI):
        t.read(P.sysreg(reg) if reg in (P.SYS_ID, P.SYS_MCI) else P.mmci(reg), 4)
    rw = (P.MCIPOWER, P.MCICLOCK, P.MCIARGUMENT, P.MCIDATATIMER, P.MCIDATALENGTH,
          P.MCIMASK0, P.MCIMASK1, P.MCISELECT)
    for reg in rw:
        t.write(P.mmci(reg), 4, 0xFFFF_FFFF)
        t.read(P.mmci(reg), 4)
    t.write(P.mmci(P.MCIDATACTRL), 4, 0xFFFF_FFFE)  # everything but Enable
    t.write(P.mmci(P.MCICOMMAND), 4, 0xFFFF_FBFF)   # everything but Enable
    for reg in (P.MCIDATACTRL, P.MCICOMMAND, P.MCISTATUS):
        t.read(P.mmci(reg), 4)
    for reg in (P.MCIRESPCMD, *P.MCIRESPONSE, P.MCIDATACNT, P.MCISTATUS, P.MCIFIFOCNT):
        t.write(P.mmci(reg), 4, 0x5A5A_5A5A)
        t.read(P.mmci(reg), 4)
    for off in range(0, 0x4C, 1):  # bytes: each lands on its own offset (no .impl)
        t.read(P.mmci(off), 1)
    for off in range(0, 0x4C, 2):
        t.read(P.mmci(off), 2)
    t.write(P.mmci(P.MCIMASK0) + 1, 1, 0x12)
    t.write(P.mmci(P.MCIARGUMENT) + 2, 2, 0x3456)
    t.read(P.mmci(P.MCIMASK0), 4)
    t.read(P.mmci(P.MCIARGUMENT), 8)
    for off in range(P.PERIPH_ID, 0x1000, 1):
        t.read(P.mmci(off), 1)


@scenario("mmci-init", GROUP)
def mmci_init(t: Target, ctx: Context) -> None:
    """Card identification, long responses and CMD13 in each state.

    CMD0 (no response: CmdSent), CMD8, CMD55+ACMD41, CMD2 (long response:
    CID), CMD3, CMD9 (CSD), CMD7, CMD16; MCIRespCmd (ledger
    pl181.respcmd-zero); CMD10 refused in transfer state, answered in
    stand-by; CMD13 in both."""
    h = _ready(t, ctx)
    st = h.command(S.index("SEND_STATUS"), h.rca << 16)
    ctx.expect(st.ok and (st.r1 >> 9) & 0xF == 4, f"CMD13: state {(st.r1 >> 9) & 0xF} is not "
               "tran (PLS 4.10.1)")
    h.command(S.index("SEND_CID"), h.rca << 16, long=True)  # illegal in tran (stand-by only)
    h.command(S.index("SELECT_DESELECT_CARD"), 0)  # deselect: stand-by
    cid = h.command(S.index("SEND_CID"), h.rca << 16, long=True)
    ctx.expect(cid.ok and cid.response[3] & 1 == 0,
               "CMD10: Response3 bit 0 is not 0 (TRM 3.3.6: the end bit is not kept)")
    t.read(P.mmci(P.MCIRESPCMD), 4)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.command(S.index("SELECT_DESELECT_CARD"), h.rca << 16)
    h.command(S.index("SEND_STATUS"), h.rca << 16)


@scenario("mmci-read-single", GROUP)
def mmci_read_single(t: Target, ctx: Context) -> None:
    """CMD17 on four blocks by PIO, each the image's block.

    The FIFO filled 16 words at a time,
    MCIFifoCnt and MCIDataCnt along the way (ledger pl181.fifocnt-from-datacnt),
    each block the image's."""
    h = _ready(t, ctx)
    for lba in (0, 1, 7, 31):
        _expect_data(ctx, t, f"CMD17 block {lba}",
                     h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK), lba)


@scenario("mmci-read-multi", GROUP)
def mmci_read_multi(t: Target, ctx: Context) -> None:
    """CMD18 of four blocks on the 4-bit bus, then CMD12.

    One data transfer, CMD12 after DataEnd;
    DataBlockEnd once, with DataEnd (ledger pl181.data-block-end-at-data-end);
    the 4-bit bus (ACMD6, MCIClock.WideBus)."""
    h = _ready(t, ctx)
    h.bus_width(4)
    x = h.read(S.index("READ_MULTIPLE_BLOCK"), 2 * BLOCK, blocks=4, stop=True)
    _expect_data(ctx, t, "CMD18 blocks 2-5", x, 2)
    ctx.expect(len(x.data) == 4 * BLOCK, f"CMD18: {len(x.data)} bytes read")
    h.command(S.index("SEND_STATUS"), h.rca << 16)


@scenario("mmci-write-single", GROUP)
def mmci_write_single(t: Target, ctx: Context) -> None:
    """CMD24 (data after the response), read back by CMD17; the image compared."""
    h = _ready(t, ctx)
    for lba in (5, 0):
        data = _pattern(lba)
        w = h.write(S.index("WRITE_BLOCK"), lba * BLOCK, data)
        ctx.expect(w.command.ok, f"CMD24 block {lba}: no CmdRespEnd")
        h.command(S.index("SEND_STATUS"), h.rca << 16)
        r = h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK)
        ctx.expect(r.data == data, f"block {lba}: read back differs from the write")


@scenario("mmci-write-multi", GROUP)
def mmci_write_multi(t: Target, ctx: Context) -> None:
    """CMD25 of three blocks in one transfer, CMD12; read back by CMD18."""
    h = _ready(t, ctx)
    data = b"".join(_pattern(8 + i) for i in range(3))
    h.write(S.index("WRITE_MULTIPLE_BLOCK"), 8 * BLOCK, data, stop=True)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    r = h.read(S.index("READ_MULTIPLE_BLOCK"), 8 * BLOCK, blocks=3, stop=True)
    ctx.expect(r.data == data, "CMD25 blocks 8-10: read back differs from the write")


@scenario("mmci-app-data", GROUP)
def mmci_app_data(t: Target, ctx: Context) -> None:
    """Short data blocks: ACMD51 (SCR), ACMD13 (SD status), CMD6.

    ACMD51 (SCR, 8 bytes: below half a FIFO, RxDataAvlbl
    unmasked), ACMD13 (SD status, 64), CMD6 (switch status, 64)."""
    h = _ready(t, ctx)
    h.command(S.index("APP_CMD"), h.rca << 16)
    scr = h.read(S.index("SEND_SCR", app=True), 0, blksz=8)
    ctx.expect(len(scr.data) == 8 and scr.data[0] >> 4 == 0,
               f"ACMD51: SCR {scr.data.hex()} structure version is not 0 (PLS 5.6)")
    h.command(S.index("APP_CMD"), h.rca << 16)
    h.read(S.index("SD_STATUS", app=True), 0, blksz=64)
    sw = h.read(S.index("SWITCH_FUNC"), 0x00FF_FFF1, blksz=64)
    ctx.expect(len(sw.data) == 64, "CMD6: no 64-byte switch status")


@scenario("mmci-erase", GROUP)
def mmci_erase(t: Target, ctx: Context) -> None:
    """CMD24 two blocks, CMD32/CMD33/CMD38 over them (R1b), CMD13, read back."""
    h = _ready(t, ctx)
    for lba in (12, 13):
        h.write(S.index("WRITE_BLOCK"), lba * BLOCK, _pattern(lba))
    h.command(S.index("ERASE_WR_BLK_START"), 12 * BLOCK)
    h.command(S.index("ERASE_WR_BLK_END"), 13 * BLOCK)
    h.command(S.index("ERASE"), 0)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    for lba in (12, 13, 14):
        _expect_data(ctx, t, f"CMD17 block {lba} after erase",
                     h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK), lba)


@scenario("mmci-interrupts", GROUP)
def mmci_interrupts(t: Target, ctx: Context) -> None:
    """The interrupt output MCIINTR0 through MCIMask0, MCIClear and the FIFO bits.

    MCIINTR0 = MCIStatus & MCIMask0 (TRM, "Interrupt logic"): raised by CmdSent and
    CmdRespEnd, by DataEnd after any command (ledger pl181.data-end-without-data),
    lowered by MCIClear; MCIMask1's FIFO bits during a read, mask swapped."""
    h = MmciHost(t)
    h.set_ios()
    t.write(P.mmci(P.MCIMASK0), 4, _ST.mask("CmdSent"))
    h.start_command(S.index("GO_IDLE_STATE"), rsp=False)
    ctx.expect(t.irq_level(), "CmdSent masked in: MCIINTR0 not raised")
    t.write(P.mmci(P.MCICLEAR), 4, _ST.mask("CmdSent"))
    ctx.expect(not t.irq_level(), "CmdSent cleared: MCIINTR0 still raised")
    t.write(P.mmci(P.MCIMASK0), 4, _ST.mask("DataEnd"))
    t.read(P.mmci(P.MCISTATUS), 4)
    t.write(P.mmci(P.MCICLEAR), 4, 0x7FF)
    t.write(P.mmci(P.MCIMASK0), 4, IRQENABLE)
    h.init()
    t.write(P.mmci(P.MCIMASK0), 4, _ST.mask("RxFifoHalfFull", "RxDataAvlbl"))
    h.start_data(BLOCK, BLOCK, read=True)
    t.write(P.mmci(P.MCIMASK1), 4, 0)
    h.start_command(S.index("READ_SINGLE_BLOCK"), 3 * BLOCK)
    for _ in range(4):
        t.read(P.mmci(P.FIFO_START), 4)
        t.read(P.mmci(P.MCISTATUS), 4)
    t.write(P.mmci(P.MCIMASK0), 4, 0)
    t.write(P.mmci(P.MCIMASK1), 4, _ST.mask("RxFifoHalfFull", "DataEnd"))
    for _ in range(BLOCK // 4):
        t.read(P.mmci(P.FIFO_START), 4)
        t.read(P.mmci(P.MCIFIFOCNT), 4)
    t.read(P.mmci(P.MCISTATUS), 4)
    t.write(P.mmci(P.MCICLEAR), 4, 0x7FF)
    t.write(P.mmci(P.MCIMASK1), 4, 0xFFFF_FFFF)
    t.write(P.mmci(P.MCIMASK1), 4, 0)


@scenario("mmci-fifo", GROUP)
def mmci_fifo(t: Target, ctx: Context) -> None:
    """The 16-word FIFO: deferred refill, empty reads, pushes, DMAEnable.

    A read drained without a status read (no refill until
    MCIStatus or MCIFifoCnt: ledger pl181.fifo-refill-after-status), reads of an
    empty FIFO (0), DataCtrl.Enable cleared at the end, FIFO writes with no
    data pending (dropped), a write past a full FIFO, DataLength of 0."""
    h = _ready(t, ctx)
    h.start_data(BLOCK, BLOCK, read=True)
    h.start_command(S.index("READ_SINGLE_BLOCK"), 4 * BLOCK)
    words = [t.read(P.mmci(P.FIFO_START + 4 * (i % 16)), 4) for i in range(20)]
    ctx.expect(words[:16] == [int.from_bytes(t.image_read(4 * BLOCK + 4 * i, 4), "little")
                              for i in range(16)], "the first 16 FIFO words are not the block's")
    for reg in (P.MCIFIFOCNT, P.MCIDATACNT, P.MCISTATUS, P.MCIDATACTRL):
        t.read(P.mmci(reg), 4)
    for _ in range(120):
        t.read(P.mmci(P.FIFO_START), 4)
        t.read(P.mmci(P.MCISTATUS), 4)
    for reg in (P.MCIFIFOCNT, P.MCIDATACNT, P.MCISTATUS, P.MCIDATACTRL):
        t.read(P.mmci(reg), 4)
    t.write(P.mmci(P.FIFO_START), 4, 0x1234_5678)  # DataCnt 0: dropped
    _dma_stream_read(t, ctx, 6)
    t.write(P.mmci(P.MCICLEAR), 4, 0x7FF)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    t.write(P.mmci(P.MCIDATALENGTH), 4, 0)
    t.write(P.mmci(P.MCIDATACTRL), 4, P.MCIDATACTRL.mask("Enable"))  # nothing to move
    for reg in (P.MCISTATUS, P.MCIDATACTRL, P.MCIFIFOCNT):
        t.read(P.mmci(reg), 4)
    # A read enabled with the card idle, then host words pushed into it.
    t.write(P.mmci(P.MCIDATALENGTH), 4, 128)
    t.write(P.mmci(P.MCIDATACTRL), 4, P.MCIDATACTRL.mask("Enable", "Direction"))
    for i in range(18):
        t.write(P.mmci(P.FIFO_START), 4, 0xA000_0000 + i)
        t.read(P.mmci(P.MCISTATUS), 4)
    for _ in range(18):
        t.read(P.mmci(P.FIFO_START), 4)
    t.read(P.mmci(P.MCISTATUS), 4)
    t.write(P.mmci(P.MCIDATACTRL), 4, 0)
    h.command(S.index("SEND_STATUS"), h.rca << 16)


def _dma_stream_read(t: Target, ctx: Context, lba: int) -> None:
    """CMD17 with DMAEnable and Mode (stream) set in MCIDataCtrl: QEMU moves the
    block through the FIFO all the same (ledger pl181.no-dma-no-stream)."""
    dc = P.MCIDATACTRL
    t.write(P.mmci(P.MCIDATALENGTH), 4, BLOCK)
    t.write(P.mmci(P.MCIDATACTRL), 4, dc.mask("Enable", "Direction", "Mode", "DMAEnable")
            | dc.field("BlockSize").value(9))
    t.write(P.mmci(P.MCIARGUMENT), 4, lba * BLOCK)
    t.write(P.mmci(P.MCICOMMAND), 4, 17 | P.MCICOMMAND.mask("Enable", "Response"))
    data = bytearray()
    for _ in range(BLOCK // 4):
        data += t.read(P.mmci(P.FIFO_START), 4).to_bytes(4, "little")
        t.read(P.mmci(P.MCISTATUS), 4)
    ctx.expect(bytes(data) == t.image_read(lba * BLOCK, BLOCK),
               f"CMD17 block {lba} with DMAEnable: the FIFO words are not the block")
    t.read(P.mmci(P.MCIDATACTRL), 4)
    t.write(P.mmci(P.MCICLEAR), 4, 0x7FF)


@scenario("mmci-errors", GROUP)
def mmci_errors(t: Target, ctx: Context) -> None:
    """Command errors: refused commands, Pending, Interrupt, out of range.

    Ledger pl181.no-crc-or-data-errors,
    pending-and-interrupt-commands): an illegal command and a long response
    to a short-answer command (CmdTimeOut), a short response asked of CMD2's
    R2, Pending (never sent) and Interrupt (sent), an address out of range,
    and a write of more bytes than one block."""
    h = _ready(t, ctx)
    bad = h.command(60)
    ctx.expect(bad.timeout, "CMD60 (reserved): the card answered")
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.command(S.index("SEND_STATUS"), h.rca << 16, long=True)
    h.command(S.index("SEND_STATUS"), h.rca << 16, rsp=False)  # answered, not waited for: CmdSent
    cmd = P.MCICOMMAND
    h.start_command(S.index("SEND_STATUS"), h.rca << 16, extra=cmd.mask("Pending"))
    for reg in (P.MCISTATUS, P.MCICOMMAND, P.MCIRESPONSE[0]):
        t.read(P.mmci(reg), 4)
    h.command(S.index("SEND_STATUS"), h.rca << 16, extra=cmd.mask("Interrupt"))
    h.command(S.index("SET_BLOCKLEN"), 4096)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.command(S.index("SET_BLOCKLEN"), BLOCK)
    far = h.read(S.index("READ_SINGLE_BLOCK"), 0x7FFF_0000)
    ctx.expect(far.command.ok and not far.data,
               "CMD17 out of range: no R1, or data (PLS 4.3.3: R1 flags OUT_OF_RANGE)")
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.write(S.index("WRITE_BLOCK"), 3 * BLOCK, _pattern(3) + _pattern(4)[:64])
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    _expect_data(ctx, t, "CMD17 block 3", h.read(S.index("READ_SINGLE_BLOCK"), 3 * BLOCK), 3)


@scenario("mmci-card-absent", GROUP)
def mmci_card_absent(t: Target, ctx: Context) -> None:
    """No card: the medium ejected, then inserted again.

    SYS_MCI's card-detect bit clears (vexpress wires the
    MMCI's card-inserted output there), every command times out, a read moves
    nothing; inserted again, SYS_MCI sets and the card is identified anew."""
    sys_mci = P.sysreg(P.SYS_MCI)
    ctx.expect(t.read(sys_mci, 4) & 1 == 1, "SYS_MCI: no card detected at start")
    set_medium(t, False)
    ctx.expect(t.read(sys_mci, 4) & 1 == 0, "SYS_MCI: card still detected after eject")
    h = MmciHost(t)
    h.probe()
    h.command(S.index("GO_IDLE_STATE"), rsp=False)
    ctx.expect(h.command(S.index("SEND_IF_COND"), 0x1AA).timeout,
               "CMD8 with no card: no CmdTimeOut")
    h.app_command(S.index("SD_SEND_OP_COND", app=True), S.ACMD41_HCS | S.OCR_VDD_2V7_3V6)
    h.start_data(BLOCK, BLOCK, read=True)
    h.start_command(S.index("READ_SINGLE_BLOCK"), 0)
    for reg in (P.MCISTATUS, P.MCIFIFOCNT, P.MCIDATACNT, P.MCIDATACTRL):
        t.read(P.mmci(reg), 4)
    t.write(P.mmci(P.MCIDATACTRL), 4, 0)
    set_medium(t, True)
    ctx.expect(t.read(sys_mci, 4) & 1 == 1, "SYS_MCI: no card detected after insertion")
    _expect_data(ctx, t, "CMD17 after insertion",
                 _ready(t, ctx).read(S.index("READ_SINGLE_BLOCK"), BLOCK), 1)
