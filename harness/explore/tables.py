"""Inputs generated from the specification's tables (issue #19 item 6).

Not the model's branches but the tables of ``harness/hwdefs/``: every SD
command (and application command) of the command table in each card state
a short prefix reaches (idle, transfer, stand-by, sending-data,
receiving-data, inactive); every addressed data or protection command at
the last address in range and the first out of range of the search's
card; every writable field of every controller register written with each
value class (zero, one, all ones, the top value); every reset kind in
every phase of a transfer; transfers of each block size class at each
byte offset class; media changes in each controller state.  They open the search
(:func:`harness.explore.search.search` runs them first), so they are kept
only where they reach something new, as any input.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.driver.ops import CARD_BLOCKS, CSD_WRITABLE, DMA_BASE, PASSWORDS, Op
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.fields import Access

#: The block commands the tables draw (PLS 4.7.4), in this order.
_R1, _RN, _W1, _WN = map(S.index, ("READ_SINGLE_BLOCK", "READ_MULTIPLE_BLOCK", "WRITE_BLOCK",
                                   "WRITE_MULTIPLE_BLOCK"))
_MULTI = (_RN, _WN)

_SETUP: Op = {"op": "setup", "freq": 400_000}
_INIT: Op = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}

def _lock(flags: int, pwd: bytes = b"", *, pad: bool = True, bare: bool = False) -> Op:
    """A ``lock`` operation (CMD42, PLS 4.3.7); ``pad``: a 512-byte data
    block after CMD16 with the structure's length, what QEMU >= 9.1 takes
    (ledger ``sd.cmd42-data-length``), the search's profile."""
    return {"op": "lock", "flags": flags, "pwd": pwd.hex(), "pwd_len": None, "pad": pad,
            "bare": bare}


_PWD_A, _PWD_B = PASSWORDS

#: Card states reached by a prefix of operations (PLS 4.2, 4.3, Figure 4-13;
#: "locked": a password set, then changed with the lock bit, PLS 4.3.7.1).
STATE_PREFIXES: dict[str, list[Op]] = {
    "idle": [_SETUP],
    "tran": [_SETUP, _INIT],
    "stby": [_SETUP, _INIT, {"op": "cmd", "index": 7, "arg": 0, "app": False}],
    "data": [_SETUP, _INIT, {"op": "cmd", "index": 17, "arg": 0, "app": False}],
    "rcv": [_SETUP, _INIT, {"op": "cmd", "index": 24, "arg": 0, "app": False}],
    "inactive": [_SETUP, _INIT, {"op": "cmd", "index": 15, "arg": 0, "app": False,
                                 "rca": True}],
    "locked": [_SETUP, _INIT, _lock(S.LOCK_SET_PWD, _PWD_A),
               _lock(S.LOCK_SET_PWD | S.LOCK_LOCK, _PWD_A + _PWD_B)],
}
#: Commands whose argument is the card's RCA (PLS 4.7.4, Table 4-21ff: "[31:16] RCA").
_RCA_ARG = S.commands(arg=S.Arg.RCA)
#: Commands whose argument is a data address (PLS 4.7.4; SDSC: a byte address).
ADDRESSED = tuple(sorted(S.commands(arg=S.Arg.ADDRESS)))
#: Data blocks shorter than a sector: CMD30's 32 protection bits (PLS 4.3.5).
_BLOCK_BYTES = {S.index("SEND_WRITE_PROT"): S.WRITE_PROT_BYTES}


def _command(spec: S.SpecCommand) -> Op:
    op: Op = {"op": "cmd", "index": spec.index, "arg": 0, "app": spec.app}
    if spec.index in _RCA_ARG and not spec.app:
        op["rca"] = True
    if spec.kind is S.CmdType.ADTC:
        op["data"] = {"read": spec.reads or spec.app, "bs": 512 if not spec.app
                      else 64, "count": 1, "mode": "pio"}
    return op


def command_states() -> list[list[Op]]:
    """Every command of the table in every state of :data:`STATE_PREFIXES`."""
    out = []
    specs = [c for t in (S.SD_COMMANDS, S.SD_APP_COMMANDS) for c in t.values()
             if not c.reserved]
    for prefix in STATE_PREFIXES.values():
        for spec in specs:
            out.append([*prefix, _command(spec)])
    return out


#: ACMD41 arguments (PLS 4.2.3.1, Figure 4-4): an inquiry (no voltage
#: window), a window without and with HCS, the window's low bit only, all ones.
_ACMD41_ARGS = (0, 0x00FF8000, 0x40FF8000, 0x00008000, 0xFFFFFFFF)


def op_cond_sequences() -> list[list[Op]]:
    """ACMD41 with each argument class from idle: once, twice in a row (the
    power-up still running), and again after the power-up time, before and
    after the card left idle (PLS 4.2.3)."""
    def acmd41(arg: int) -> Op:
        return {"op": "cmd", "index": 41, "arg": arg, "app": True}

    later = {"op": "clock", "ns": 1_100_000_000}
    out = []
    for arg in _ACMD41_ARGS:
        out.append([_SETUP, acmd41(arg), acmd41(arg)])
        out.append([_SETUP, acmd41(arg), later, acmd41(arg), acmd41(0x40FF8000)])
        out.append([_SETUP, _INIT, acmd41(arg)])
    return out


def rca_mismatches() -> list[list[Op]]:
    """Each command addressed by RCA (PLS 4.7.4) sent with RCA 0 and with
    the card's RCA plus one, in stand-by, transfer and sending-data."""
    out = []
    for state in ("stby", "tran", "data"):
        for index in sorted(_RCA_ARG):
            out.append([*STATE_PREFIXES[state],
                        {"op": "cmd", "index": index, "arg": 0, "app": False}])
            out.append([*STATE_PREFIXES[state], {"op": "cmd", "index": index, "arg": 0,
                                                 "app": False, "rca": True, "rca_xor": 1}])
    return out


def address_bounds() -> list[list[Op]]:
    """Each addressed command at the last block in range and the first out."""
    out = []
    for index in ADDRESSED:
        for block in (CARD_BLOCKS - 1, CARD_BLOCKS):
            op: Op = {"op": "cmd", "index": index, "arg": block * 512, "app": False}
            spec = S.SD_COMMANDS[index]
            if spec.data is not None:  # two blocks of a multiple-block command
                op["data"] = {"read": spec.reads, "bs": _BLOCK_BYTES.get(index, 512),
                              "count": 2 if "_MULTIPLE_" in spec.name else 1, "mode": "pio"}
            out.append([_SETUP, _INIT, op])
    return out


def register_fields() -> list[list[Op]]:
    """Every writable field of every register, each value class, after set-up."""
    out = []
    for reg in H.REGISTERS:
        if reg.offset >= H.REGISTER_WINDOW or reg.name == "BDATA":
            continue
        size = min(reg.width, 4)
        for f in reg.fields:
            if f.access is Access.RSVD or f.lsb >= 8 * size:
                continue
            top = (1 << f.width) - 1
            for v in dict.fromkeys((0, 1, top, top >> 1)):
                out.append([_SETUP, _INIT, {"op": "write", "off": reg.offset, "size": size,
                                            "value": (v << f.lsb) & ((1 << 8 * size) - 1)}])
    return out


def _start(index: int, mode: str, *, bs: int = 512, count: int = 2, offset: int = 0,
           block: int = 4, auto12: bool = False) -> Op:
    return {"op": "start", "index": index, "bs": bs, "count": count, "offset": offset,
            "block": block, "mode": mode, "auto12": auto12, "blkcnt_en": True, "boundary": 0}


#: Where a transfer can be when something interrupts it (SDHC 3.7.2, 2.2.9):
#: issued only, part of a block moved, a whole block moved, a block and a
#: word more, and (DMA) after the controller's timer ran.
_PHASES: dict[str, list[Op]] = {
    "issued": [],
    "word": [{"op": "pio", "write": False, "n": 1, "size": 4}],
    "block": [{"op": "pio", "write": False, "n": 128, "size": 4}],
    "block+1": [{"op": "pio", "write": False, "n": 129, "size": 4}],
    "timer": [{"op": "clock", "ns": 1_000_000}],
}
#: The software reset kinds (SDHC 2.2.17) and the card's own (CMD0).
_RESETS: list[Op] = [*({"op": "reset", "what": w} for w in
                       (H.SWRST_ALL, H.SWRST_CMD, H.SWRST_DAT, H.SWRST_CMD | H.SWRST_DAT)),
                     {"op": "cmd", "index": 0, "arg": 0, "app": False}]


def _phased_transfers() -> Iterator[tuple[int, str, list[Op]]]:
    """``(index, mode, ops)``: CMD18 and CMD25 by PIO and SDMA, with the
    operations that bring each into a phase of :data:`_PHASES` (its PIO
    accesses turned into writes for CMD25; SDMA has no word or
    block-and-a-word phase)."""
    for index in _MULTI:
        for mode in ("pio", "sdma"):
            for phase, ops in _PHASES.items():
                if mode == "sdma" and phase in ("word", "block+1"):
                    continue
                yield index, mode, [dict(o, write=index == _WN) if o["op"] == "pio" else o
                                    for o in ops]


def resets_in_phases() -> list[list[Op]]:
    """Each reset kind in each phase of a read and a write, PIO and SDMA,
    single and multiple block (issue #19 item 5)."""
    out = []
    for index in (_R1, _RN, _W1, _WN):
        for mode in ("pio", "sdma"):
            for phase, ops in _PHASES.items():
                if mode == "sdma" and phase in ("word", "block+1"):
                    continue
                moved = [dict(o, write=index in (_W1, _WN)) if o["op"] == "pio" else o
                         for o in ops]
                for reset in _RESETS:
                    out.append([_SETUP, _INIT, _start(index, mode, count=2 if index in _MULTI
                                                      else 1, auto12=index in _MULTI),
                                *moved, reset])
    return out


#: Block sizes at and around the limits (SDHC 2.2.2: 12 bits; PLS: 512).
BLOCK_SIZES = (1, 2, 3, 4, 511, 512, 513, 1024, 2048, 4095)
#: Byte offsets of an SDSC card's address (PLS 4.3.3: a byte address).
OFFSETS = (0, 1, 511)


def sizes_and_offsets() -> list[list[Op]]:
    """Transfers of every block size class at every offset class, read and
    written through the data port one block and a word."""
    out = []
    for index in (_R1, _W1):
        for bs in BLOCK_SIZES:
            for offset in OFFSETS:
                words = -(-bs // 4) + 1
                out.append([_SETUP, _INIT, _start(index, "pio", bs=bs, count=1, offset=offset),
                            {"op": "pio", "write": index == _W1, "n": words, "size": 4}])
    return out


#: The lock card data structure's flag combinations (PLS 4.3.7: SET_PWD,
#: CLR_PWD, LOCK_UNLOCK, ERASE).
_LOCK_FLAGS = (0, S.LOCK_SET_PWD, S.LOCK_CLR_PWD, S.LOCK_LOCK, S.LOCK_SET_PWD | S.LOCK_LOCK,
               S.LOCK_CLR_PWD | S.LOCK_LOCK, S.LOCK_ERASE)


def lock_requests() -> list[list[Op]]:
    """Every lock request (flags x password: none, the current one, the
    current followed by another, a wrong one, a wrong one of the current
    one's length followed by another) from each lock state: no
    password, a password set, locked (its password then the second one);
    and a forced erase as PLS 4.3.7.3 sends it (CMD16(1), the flags byte)
    from each, with and without the 512-byte block."""
    a, b = _PWD_A, _PWD_B
    states = ((STATE_PREFIXES["tran"], a, b), ([_SETUP, _INIT, _lock(S.LOCK_SET_PWD, a)], a, b),
              (STATE_PREFIXES["locked"], b, a))
    out = []
    for prefix, cur, other in states:
        for flags in _LOCK_FLAGS:
            wrong = bytes([cur[0] ^ 0xFF]) + cur[1:] + other  # the current one's length
            for pwd in (b"", cur, cur + other, b"wrong!", wrong):
                out.append([*prefix, _lock(flags, pwd)])
        for pad in (True, False):
            out.append([*prefix, _lock(S.LOCK_ERASE, pad=pad, bare=True)])
    return out


def gaps_in_phases() -> list[list[Op]]:
    """A Stop At Block Gap request, and a Continue after it (SDHC 2.2.14),
    in each phase of a multiple-block read and write, PIO and SDMA."""
    out = []
    stop = {"op": "blkgap", "value": H.BLKGAP_STOP}
    cont = {"op": "blkgap", "value": H.BLKGAP_CONTINUE}
    for index, mode, moved in _phased_transfers():
        go = _start(index, mode, count=3)
        out.append([_SETUP, _INIT, go, *moved, stop])
        out.append([_SETUP, _INIT, go, *moved, stop, *moved, cont])
        out.append([_SETUP, _INIT, go, *moved, stop, stop,
                    {"op": "pio", "write": index == _WN, "n": 256, "size": 4}])
    return out


def _write(count: int) -> Op:
    return {"op": "rw", "read": False, "block": 8, "count": count, "bs": 512, "mode": "pio",
            "stop": "auto", "pio_access": 4, "skew": 0, "boundary": 4096,
            "max_segment": 65536}


def csd_protection() -> list[list[Op]]:
    """Each writable CSD bit set by CMD27 (PLS 5.3: COPY, PERM_WRITE_PROTECT,
    TMP_WRITE_PROTECT, FILE_FORMAT(_GRP)), then what it guards: a single
    and a multiple block write, an erase; set then cleared; and a CSD
    with a read-only byte changed (CSD_OVERWRITE)."""
    out = []
    for bit in CSD_WRITABLE.values():
        program = {"op": "csd", "set": bit, "clear": 0, "flip": None}
        for after in (_write(1), _write(2), {"op": "erase", "first": 8, "last": 9, "arg": 0}):
            out.append([_SETUP, _INIT, program, after])
        out.append([_SETUP, _INIT, program, {"op": "csd", "set": 0, "clear": bit, "flip": None},
                    _write(1)])
    for flip in (0, 7, 14):
        out.append([_SETUP, _INIT, {"op": "csd", "set": 0, "clear": 0, "flip": flip}])
    return out


#: A management layer's media changes (QMP ``eject``, ``blockdev-change-medium``).
_EJECT: Op = {"op": "medium", "inserted": False}
_INSERT: Op = {"op": "medium", "inserted": True}
#: The guest acknowledges Card Removal (SDHC 2.2.17: write 1 to clear).
_ACK_REMOVAL: Op = {"op": "write", "off": H.NORINTSTS.offset, "size": 2,
                    "value": H.NIS_CARDREM}
#: A little over the controller's insertion delay (QEMU's sdhci: an insertion
#: while Card Removal is pending is reported a second later).
_PAST_DELAY: Op = {"op": "clock", "ns": 1_100_000_000}


def media_changes() -> list[list[Op]]:
    """Media changes in each controller state they meet (issue #19 item 5):
    an eject, an insertion after it with Card Removal pending or
    acknowledged, the delayed insertion's timer with the removal still
    pending and after it was acknowledged, a second change while the timer
    runs, a Software Reset For All with the timer armed; an eject in each
    phase of a transfer; a command to an ejected card, and the card
    initialised again after the medium came back."""
    base = [_SETUP, _INIT]
    out = [[*base, _EJECT], [*base, _EJECT, _INSERT],
           [*base, _EJECT, _ACK_REMOVAL, _INSERT],
           [*base, _EJECT, _INSERT, _PAST_DELAY],
           [*base, _EJECT, _INSERT, _ACK_REMOVAL, _PAST_DELAY],
           [*base, _EJECT, _INSERT, _EJECT, _INSERT],
           [*base, _EJECT, _INSERT, {"op": "reset", "what": H.SWRST_ALL}, _PAST_DELAY],
           [*base, _EJECT, {"op": "cmd", "index": 13, "arg": 0, "app": False, "rca": True}],
           [*base, _EJECT, _ACK_REMOVAL, _INSERT, _INIT]]
    for index, mode, moved in _phased_transfers():
        out.append([*base, _start(index, mode, count=3), *moved, _EJECT,
                    {"op": "pio", "write": index == _WN, "n": 128, "size": 4}])
    return out


def dma_selects() -> list[list[Op]]:
    """A read and a write started with each ADMA DMA Select (SDHC 2.2.10),
    then the controller's timer; on the variants, a controller whose
    capabilities lack that ADMA (SDHC 2.2.26) or have 64-bit addressing."""
    tick = {"op": "clock", "ns": 1_000_000}
    return [[_SETUP, _INIT, _start(index, mode, count=2, block=4), tick]
            for mode in ("adma1", "adma2", "adma64") for index in _MULTI]


def sdma_boundaries() -> list[list[Op]]:
    """Multiple-block SDMA with block sizes that do not divide the 4 KiB
    buffer boundary (SDHC 2.2.2, 1.7.2: the DMA Interrupt falls inside a
    block), the boundary's interrupt, then the guest's new System Address
    that continues the transfer (SDHC 2.2.1); and SDMA and PIO transfers
    started with a Block Count of 0 or without Block Count Enable."""
    out = []
    cont = {"op": "write", "off": H.SDMASYSAD.offset, "size": 4, "value": DMA_BASE + 0x20000}
    tick = {"op": "clock", "ns": 1_000_000}
    for index in _MULTI:
        for bs in (300, 500, 511):  # the default controller's buffer: 512 bytes at most
            go = _start(index, "sdma", bs=bs, count=16)
            out.append([_SETUP, _INIT, go, tick, cont, tick])
            out.append([_SETUP, _INIT, go, tick, cont, tick, cont, tick])
    for index in _MULTI:
        write = index == _WN
        for mode in ("sdma", "pio", "adma2"):
            for count, enable in ((0, True), (2, False)):
                go = dict(_start(index, mode, count=count), blkcnt_en=enable)
                block = {"op": "pio", "write": write, "n": 128, "size": 4}
                out.append([_SETUP, _INIT, go, tick, block, block, block,
                            {"op": "reset", "what": H.SWRST_CMD | H.SWRST_DAT}])
    return out


def _adma(descs: list[list[int]], count: int = 1) -> Op:
    return {"op": "adma", "read": True, "block": 4, "count": count, "bs": 512,
            "descs": descs, "width64": False}


def adma_chains() -> list[list[Op]]:
    """ADMA2 chains (SDHC 1.13.4): a Link descriptor to itself (no
    progress: the transfer waits on the guest), then
    a guest memory write over the table, a clock step, a DAT line reset;
    and an Int descriptor before the End one with the interrupt signal
    enabled (the engine stops at it, SDHC 1.13.4 Int)."""
    link = H.ADMA_VALID | H.ADMA_ACT_LINK
    tran = H.ADMA_VALID | H.ADMA_ACT_TRAN
    loop = _adma([[0, 0, link]])  # the table is at the DMA area's start: a Link to itself
    after = [_mem(0x200, bytes(8)), {"op": "clock", "ns": 1_000_000},
             {"op": "reset", "what": H.SWRST_DAT}]
    signal = {"op": "irq", "norsts": 0xFFFF, "errsts": 0xFFFF, "norsig": 0xFFFF,
              "errsig": 0xFFFF}
    stop_at_int = _adma([[0x10000, 512, tran | H.ADMA_INT], [0x10200, 512, tran | H.ADMA_END]],
                        count=2)
    out = [[_SETUP, _INIT, loop, *after], [_SETUP, _INIT, loop, {"op": "clock", "ns": 50},
                                           *after],
           [_SETUP, _INIT, signal, stop_at_int, {"op": "clock", "ns": 1_000_000}]]
    # The same Link to itself left running (``start``): the guest's memory
    # write meets it parked (the probes' register accesses step it first).
    parked = dict(_start(17, "adma2", count=1), link=True)
    out.append([_SETUP, _INIT, parked, _mem(0x200, bytes(8)), {"op": "clock", "ns": 1000},
                {"op": "reset", "what": H.SWRST_DAT}])
    return out


def _mem(off: int, data: bytes) -> Op:
    return {"op": "mem", "off": off, "data": data.hex()}


def _erase(first: int, last: int) -> Op:
    return {"op": "erase", "first": first, "last": last, "arg": 0}


def erase_overlaps() -> list[list[Op]]:
    """Erases over erased and written ranges (PLS 4.3.5): a range over part
    of an erased one, inside it, over a block written after it, then a
    read across them; and a range over the card's last block, one to the
    card's size and one at it."""
    read = {"op": "rw", "read": True, "block": 40, "count": 16, "bs": 512, "mode": "sdma",
            "stop": "auto", "pio_access": 4, "skew": 0, "boundary": 4096,
            "max_segment": 65536}
    write = dict(_write(1), block=60)
    base = [_SETUP, _INIT, _erase(8, 100)]
    return [[*base, _erase(50, 200), read], [*base, _erase(20, 30), read],
            [*base, write, _erase(55, 65), read], [*base, write, _erase(61, 120), read],
            [_SETUP, _INIT, write, _erase(40, 70), write, read],
            [_SETUP, _INIT, _erase(CARD_BLOCKS - 2, CARD_BLOCKS - 1),
             dict(read, block=CARD_BLOCKS - 4, count=4)],
            # ending at the card's size itself, and starting there: QEMU's
            # range check takes an address equal to the size (sd.erase-range)
            [_SETUP, _INIT, _erase(CARD_BLOCKS - 1, CARD_BLOCKS),
             dict(read, block=CARD_BLOCKS - 4, count=4)],
            [_SETUP, _INIT, _erase(CARD_BLOCKS, CARD_BLOCKS)]]


def busy_commands_in_transfer() -> list[list[Op]]:
    """A command with a busy response (R1b) issued through CMDREG while a
    read holds the DAT line (SDHC 2.2.9 Command Inhibit (DAT), 3.7.1.1): an
    ordinary one is not issued, an abort one (CMD12, Command Type Abort)
    is (a PIO read: the DAT line stays busy until the guest reads)."""
    out = []
    for mode in ("pio",):
        for index, kind in ((38, H.CMD_TYPE_NORMAL), (12, H.CMD_TYPE_ABORT)):
            issue = {"op": "write", "off": H.CMDREG.offset, "size": 2,
                     "value": H.cmdreg(index, H.RSP_48_BUSY, crc=True, idx=True,
                                       cmd_type=kind)}
            out.append([_SETUP, _INIT, _start(18, mode, count=3), issue,
                        {"op": "clock", "ns": 1_000_000},
                        {"op": "reset", "what": H.SWRST_CMD | H.SWRST_DAT}])
    return out


def table_inputs() -> list[list[Op]]:
    """All of them, in a fixed order."""
    return (command_states() + address_bounds() + register_fields() + resets_in_phases()
            + sizes_and_offsets() + lock_requests() + gaps_in_phases() + csd_protection()
            + media_changes() + dma_selects() + sdma_boundaries() + erase_overlaps()
            + op_cond_sequences() + rca_mismatches() + adma_chains()
            + busy_commands_in_transfer())
