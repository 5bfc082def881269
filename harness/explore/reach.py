"""Reach (issue #34): state classes the explorer's goal names, and inputs for them.

Four kinds so far, each a set of *classes* (features ``("reach", kind,
...)``, beside the model's arcs and the abstract states of :mod:`.state`)
and table inputs that reach them:

``lock``
    CMD42 against every password (PLS 4.3.7): a password of each length
    0..16 stored (0: none) and the card locked and unlocked with it; a
    request whose *old* password differs from the stored one in exactly one
    byte, at each position (must be refused); a change whose *new*
    password differs from the old in exactly one byte, at each position
    (must be stored as sent: the next request proves it); a wrong password
    for each request kind in each lock state (none, set, locked); the
    forced erase (PLS 4.3.7.3) from each lock state, as the flags byte
    alone and inside a longer structure.
``stop``
    The data port after every way a transfer stops (SDHC 2.2.14 Stop At
    Block Gap, CMD12 mid-block, Auto CMD12 (2.2.5), DAT line and full
    software reset (2.2.17), a data error (an ADMA error after the first
    block, SDHC 2.2.25: the only data error QEMU's controller raises
    itself), the card removed: each stop, then data port reads and writes
    of 1, 2 and 4 bytes and the narrow accesses at the port's other byte
    lanes (+1, +2, +3: QEMU takes them as sequential accesses of the
    buffer), then the next transfer, a write and a read back through the
    data port, compared byte for byte by the lockstep.

``dma``
    DMA that points anywhere (SDHC 2.2.1 SDMA System Address, 2.2.26 ADMA
    System Address, 1.13.4 descriptor addresses): the end of RAM (a range
    across it), the first byte past it, unassigned space, the BIOS ROM
    (as a destination), the controller's own BAR, a range across a 4 KiB
    page; for SDMA, the ADMA table and ADMA data, to and from memory.  The
    model's memory reads a hole as zeros, drops a write and reports a
    decode error (ADMA: ADMA Error, ERRINTSTS), :mod:`harness.model.memory`.
    And other devices' MMIO (:data:`DEVICE_MMIO`: the HPET, the I/O APIC,
    the LAPIC/MSI window) as an ADMA2 or ADMA1 data segment, read and
    written: since QEMU 7.0 (7.2.22 to 11.1.1 read alike) sdhci makes its
    ADMA *data* accesses with ``MemTxAttrs.memory``, which the memory core
    refuses for anything that is not RAM (``flatview_access_allowed``):
    nothing moves, ADMA Error is raised (ERRINTSTS bit 9 and the Error
    Interrupt summary, when its status enable is set; SDHC 2.2.18), the
    ADMA Error Status state is left as it was (ledger
    ``sdhci.adma-dma-error-continues``), the buffer position goes back to 0,
    the ADMA System Address stays on the descriptor and, the descriptor
    having End, the transfer ends with Length Mismatch and Transfer
    Complete.  The model needs no model of the device: to the controller a
    refused access is a hole.

``migrate``
    A migration point as an operation (``migrate``): the corpus input
    that has one also runs in the check's migration group, QEMU moved to a
    new process of the same build at each, while the model goes on
    without migrating: what the guest reads after it is compared with
    what it would have read (:data:`MIGRATE_POINTS`).

The classes are computed by the search's runner (:func:`before` then
:func:`after` around each operation, with a :class:`Tracker` of the run);
:func:`render` says which the committed corpus reaches, for ``explore
--report``.  Not yet here, and why: :data:`NOT_YET`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from harness.driver.ops import Op, start_commands
from harness.explore import restart
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H

#: The block commands the tables draw (PLS 4.7.4), in this order.
_R1, _RN, _W1, _WN = map(S.index, ("READ_SINGLE_BLOCK", "READ_MULTIPLE_BLOCK", "WRITE_BLOCK",
                                   "WRITE_MULTIPLE_BLOCK"))
_MULTI = (_RN, _WN)

Feature = tuple[Any, ...]

_SETUP: Op = {"op": "setup", "freq": 400_000}
_INIT: Op = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}

#: Longest password (PLS 4.3.7.1: PWD_LEN up to 16 bytes).
MAX_PWD = 16
_BDATA = H.BDATA.offset
_DATA_ERRORS = H.EIS_DATTOUT | H.EIS_DATCRC | H.EIS_DATEND | H.EIS_ADMAERR

#: The operations each kind adds or drives (for ``explore --report``).
OPERATIONS: dict[str, str] = {
    "lock": "lock (CMD16 + CMD42 + CMD16: flags, PWD_LEN, PWD; pad: a 512-byte block; "
            "bare: the flags byte alone) with passwords of every length and one byte off",
    "stop": "start + pio (a transfer left running, part moved), then blkgap / write CMDREG "
            "(CMD12, Command Type Abort) / reset DAT or ALL / medium eject / ADMA error / start "
            "with auto12; then pio 1/2/4 and read/write at BDATA+1..+3; then rw",
    "dma": "start with sdma_addr (the SDMA System Address itself), table_addr (the ADMA "
           "System Address itself) or abs descs (ADMA2 and ADMA1 data addresses) at the end "
           "of RAM, past it, unassigned space, the BIOS ROM, the controller's own BAR, across "
           "a page, other devices' MMIO (HPET 0xfed00000, IOAPIC 0xfec00000, LAPIC/MSI "
           "0xfee00000: refused, memory-only ADMA data accesses)",
    "restart": restart.OPERATION,
    "migrate": "migrate (a migration point at any step: in the check's migration group, "
               "QEMU moves to a new process of the same build; the model goes on unmigrated)",
}
#: What each kind does not reach yet through qtest, and why.
NOT_YET: dict[str, str] = {
    "dma": "DMA read from the BIOS ROM (as SDMA/ADMA source or descriptor table): the "
           "model cannot know a build's firmware bytes without reading them from the build; "
           "SDMA and descriptor fetches from other devices' MMIO: 7.2 to 11.1 make them "
           "with unspecified attributes (only ADMA data accesses are memory-only), so they "
           "are not refused and read the device's registers, whose values are the device's "
           "(an SDMA write into a device reaches it: the controller goes on as for RAM); "
           "PCIe ECAM and another function's BAR: under qtest no firmware enables PCIEXBAR "
           "or programs another BAR (and the Target has no configuration cycle), so both "
           "are holes there, the unassigned class",
    "migrate": "SPI mode (ssi-sd): its machines are boards the migration check does not "
               "run (it migrates PC machine types).  The SD devices' vmstate is compared field "
               "by field after a round trip to the same build (harness.qemu.vmstate); a field "
               "missing from the vmstate altogether is written by neither side: the model's "
               "comparison after the point finds what it breaks",
}


def password(n: int, salt: int = 0) -> bytes:
    """A password of ``n`` bytes (PLS 4.3.7.1), its bytes distinct from
    those of another ``salt``'s (so that old and new never agree by chance)."""
    return bytes((0x41 + 17 * salt + 5 * i) & 0xFF for i in range(n))


def _flip(pwd: bytes, i: int) -> bytes:
    return pwd[:i] + bytes([pwd[i] ^ 0x5A]) + pwd[i + 1:]


def lock_op(flags: int, pwd: bytes = b"", *, pad: bool = True, bare: bool = False) -> Op:
    """A ``lock`` operation (see :func:`harness.driver.ops.lock`)."""
    return {"op": "lock", "flags": flags, "pwd": pwd.hex(), "pwd_len": None, "pad": pad,
            "bare": bare}


_SET, _LOCK = S.LOCK_SET_PWD, S.LOCK_SET_PWD | S.LOCK_LOCK


def lock_inputs() -> list[list[Op]]:
    """Every password length, one byte off at each position, wrong in each
    state and the forced erase in each (the module doc).  A password is set
    and changed as QEMU takes it (the old one followed by the new one, with
    SET_PWD; locking and unlocking too: ledger ``sd.lock-pwd-len``)."""
    lengths: list[Op] = [_SETUP, _INIT, lock_op(_SET, b"")]
    cur = b""
    for n in range(1, MAX_PWD + 1):
        new = password(n, n)
        lengths += [lock_op(_SET, cur + new), lock_op(_LOCK, new + new),
                    lock_op(_SET, new + new)]
        cur = new
    lengths.append(lock_op(_SET, cur + password(MAX_PWD + 1, 3)))   # 17 bytes: refused
    off: list[Op] = [_SETUP, _INIT, lock_op(_SET, password(MAX_PWD))]
    cur = password(MAX_PWD)
    for i in range(MAX_PWD):
        off.append(lock_op(_SET, _flip(cur, i) + b"x"))           # old one byte off
        off.append(lock_op(_SET, cur + _flip(cur, i)))            # new one byte off
        cur = _flip(cur, i)
    locked_off: list[Op] = [_SETUP, _INIT, lock_op(_SET, password(5)),
                            lock_op(_LOCK, password(5) + password(5))]
    for i in range(5):
        locked_off.append(lock_op(_SET, _flip(password(5), i) + b"x"))  # unlock, one off
    locked_off.append(lock_op(_SET, password(5) + b"x"))
    erase = [lock_op(S.LOCK_ERASE, pad=pad, bare=True) for pad in (True, False)]
    erases = [[_SETUP, _INIT, *erase],
              [_SETUP, _INIT, lock_op(_SET, password(4)), *erase],
              [_SETUP, _INIT, lock_op(_SET, password(4)), lock_op(_LOCK, password(4) * 2),
               lock_op(S.LOCK_ERASE, b"\x01"), *erase, lock_op(_SET, password(3))]]
    return [lengths, off, locked_off, *erases]


#: How a transfer stops (the ``stop`` kind's first field).
STOPS = ("gap", "cmd12", "auto12", "dat-reset", "sw-reset", "error", "removed")
#: Data port accesses after a stop: (write, size, byte lane).
PORT = tuple((w, size, 0) for w in (False, True) for size in (1, 2, 4)) + tuple(
    (w, size, lane) for w in (False, True) for size, lane in ((1, 1), (2, 2), (1, 3)))


def _start(index: int, *, count: int = 3, block: int = 4, auto12: bool = False) -> Op:
    return {"op": "start", "index": index, "bs": 512, "count": count, "offset": 0,
            "block": block, "mode": "pio", "auto12": auto12, "blkcnt_en": True,
            "boundary": 0}


def _pio(write: bool, n: int, size: int = 4) -> Op:
    return {"op": "pio", "write": write, "n": n, "size": size}


def _port_ops() -> list[Op]:
    out: list[Op] = []
    for write, size, lane in PORT:
        if not lane:
            out.append(_pio(write, 1, size))
        elif write:
            out.append({"op": "write", "off": _BDATA + lane, "size": size, "value": 0xA5C3})
        else:
            out.append({"op": "read", "off": _BDATA + lane, "size": size})
    return out


def _next_transfer() -> list[Op]:
    """A write of two blocks, then their read back through the data port."""
    rw: Op = {"op": "rw", "read": False, "block": 8, "count": 2, "bs": 512, "mode": "pio",
              "stop": "auto", "pio_access": 4, "skew": 0, "boundary": 4096,
              "max_segment": 65536}
    return [rw, dict(rw, read=True)]


def _stopping(how: str, write: bool) -> list[Op]:
    """A transfer started, part of it moved, then stopped ``how``."""
    index = (25 if write else 18)
    half = _pio(write, 64)
    cmd12 = {"op": "write", "off": H.CMDREG.offset, "size": 2,
             "value": H.cmdreg(12, H.RSP_48_BUSY, crc=True, idx=True,
                               cmd_type=H.CMD_TYPE_ABORT)}
    tick = {"op": "clock", "ns": 1_000_000}
    tran = H.ADMA_VALID | H.ADMA_ACT_TRAN
    return {
        "gap": [_start(index), half, {"op": "blkgap", "value": H.BLKGAP_STOP}, half, tick],
        "cmd12": [_start(index), half, cmd12, tick],
        "auto12": [_start(index, count=2, auto12=True), _pio(write, 256), tick],
        "dat-reset": [_start(index), half, {"op": "reset", "what": H.SWRST_DAT}],
        "sw-reset": [_start(index), half, {"op": "reset", "what": H.SWRST_ALL}, _SETUP],
        # the second descriptor not valid: ADMA error after a block (SDHC 2.2.25)
        "error": [dict(_start(index, count=2), mode="adma2",
                       descs=[[0x10000, 512, tran], [0x10200, 512, tran & ~H.ADMA_VALID]]),
                  tick],
        "removed": [_start(index), half, {"op": "medium", "inserted": False}],
    }[how]


def stop_inputs() -> list[list[Op]]:
    """Each stop of a multiple-block read and write, then every port access,
    then the next transfer (the module doc); the removed card comes back
    (inserted, Card Removal acknowledged, initialised) before it."""
    back = [{"op": "write", "off": H.NORINTSTS.offset, "size": 2, "value": H.NIS_CARDREM},
            {"op": "medium", "inserted": True}, {"op": "clock", "ns": 1_100_000_000}, _INIT]
    out = []
    for how in STOPS:
        for write in (False, True):
            again = back if how == "removed" else []
            out.append([_SETUP, _INIT, *_stopping(how, write), *_port_ops(), *again,
                        *_next_transfer()])
    return out


#: Where DMA points (the ``dma`` kind's region field), on the explore
#: machine (q35, 128 MiB of RAM, sdhci-pci's BAR0 at its default): the last
#: bytes of RAM and past them, the first byte past RAM, unassigned space
#: below the PCI hole, the BIOS ROM below 4 GiB (written only: the model
#: cannot know a build's firmware bytes without reading them from it), the
#: controller's own BAR (registers and the rest of the BAR), a range across
#: a 4 KiB page inside RAM.
DMA_REGIONS = ("ram-top", "past-ram", "unassigned", "rom", "own-bar", "page-cross")
#: The DMA engines: SDMA's System Address, ADMA2's table address, an ADMA2
#: descriptor's data address (SDHC 2.2.1, 2.2.26, 1.13.4).
DMA_ENGINES = ("sdma", "adma-table", "adma-data")
_RAM_END = 128 << 20
_ROM = 0xFFFF_0000
#: sdhci-pci's BAR0 on the PC (:data:`harness.machine.DEFAULT_BAR0`).
_BAR0 = 0xE000_0000
_REGION_ADDR = {"ram-top": _RAM_END - 256, "past-ram": _RAM_END, "unassigned": 0x1000_0000,
                "rom": _ROM, "own-bar": _BAR0, "page-cross": 0x0101_0F00}


#: Other devices' MMIO on the explore machine (q35 under qtest: what is mapped
#: without firmware), as (base, size): the HPET (IA-PC HPET 1.0a, 2.3), the
#: I/O APIC (82093AA), the LAPIC/MSI window (Intel SDM 10.4.1, 10.11.1).
DEVICE_MMIO: dict[str, tuple[int, int]] = {
    "hpet": (0xFED0_0000, 0x400), "ioapic": (0xFEC0_0000, 0x1000),
    "lapic-msi": (0xFEE0_0000, 0x10_0000)}
#: The ADMA data engines the device classes take: ADMA2 (32-bit) and ADMA1
#: (sdhci-pci's Capabilities report both: CAPAB bits 19 and 20, SDHC 2.00 2.2.25).
DEVICE_ENGINES = ("adma-data", "adma1-data")


def region(addr: int, length: int, model: Any) -> str | None:
    """The :data:`DMA_REGIONS` or :data:`DEVICE_MMIO` class of ``[addr, addr +
    length)`` on ``model``'s memory (None: inside one page of RAM, the
    ordinary case)."""
    bar0 = getattr(getattr(model, "machine", None), "bar0", _BAR0)
    mem = model.memory
    end = addr + max(length, 1)
    if bar0 <= addr < bar0 + 0x1000:
        return "own-bar"
    for name, (base, size) in DEVICE_MMIO.items():
        if base <= addr < base + size:
            return name
    if addr >= _ROM and addr < 1 << 32:
        return "rom"
    if mem.is_ram(addr) and not mem.is_ram(end - 1):
        return "ram-top"
    if not mem.is_ram(addr):
        return "past-ram" if mem.is_ram(addr - 1) else "unassigned"
    return "page-cross" if addr >> 12 != (end - 1) >> 12 else None


def _dma_classes(model: Any, op: Op) -> list[Feature]:
    """The ``dma`` classes of a ``start`` (before it runs)."""
    read = next(c[1] for c in start_commands(op) if c[0] == op["index"])
    way = "to-mem" if read else "from-mem"
    n = op["bs"] * max(op["count"], 1)
    out: list[Feature] = []
    if op["mode"] == "sdma" and op.get("sdma_addr") is not None:
        where = region(op["sdma_addr"], n, model)
        out += [("reach", "dma", "sdma", where, way)] if where else []
    if op.get("table_addr") is not None:
        where = region(op["table_addr"], 8, model)
        out += [("reach", "dma", "adma-table", where, "read")] if where else []
    if op.get("abs"):
        engine = "adma1-data" if op["mode"] == "adma1" else "adma-data"
        for addr, length, _attr in op.get("descs", ()):
            where = region(addr, length or 65536, model)
            out += [("reach", "dma", engine, where, way)] if where else []
    return out


def dma_goal() -> list[Feature]:
    out: list[Feature] = []
    for engine in DMA_ENGINES:
        for where in DMA_REGIONS:
            if engine == "adma-table":
                if where not in ("rom", "page-cross"):   # the ROM's bytes: the build's
                    out.append(("reach", "dma", engine, where, "read"))
                continue
            for way in ("to-mem", "from-mem"):
                if where == "rom" and way == "from-mem":
                    continue
                out.append(("reach", "dma", engine, where, way))
    for engine in DEVICE_ENGINES:
        wheres = (*DEVICE_MMIO, "own-bar") if engine == "adma1-data" else tuple(DEVICE_MMIO)
        out += [("reach", "dma", engine, where, way) for where in wheres
                for way in ("to-mem", "from-mem")]
    return out


def device_inputs() -> list[list[Op]]:
    """An ADMA2 and an ADMA1 read and write whose one data segment (End
    set, 1024 bytes) is another device's MMIO, each device in turn (each
    followed by a clock step, a CMD + DAT line reset and CMD12), then the
    next transfer read back byte for byte; ADMA1 into the controller's own
    BAR too."""
    tick: Op = {"op": "clock", "ns": 1_000_000}
    clear: list[Op] = [{"op": "reset", "what": H.SWRST_CMD | H.SWRST_DAT},
                       {"op": "cmd", "index": 12, "arg": 0, "app": False}]
    tran = H.ADMA_VALID | H.ADMA_ACT_TRAN | H.ADMA_END
    out = []
    for mode in ("adma2", "adma1"):
        targets = [base for base, _size in DEVICE_MMIO.values()]
        targets += [_BAR0] if mode == "adma1" else []
        for index in _MULTI:
            ops: list[Op] = [_SETUP, _INIT]
            for addr in targets:
                ops += [dict(_start(index, count=2), mode=mode, abs=True,
                             descs=[[addr, 1024, tran]]), tick, *clear]
            out.append([*ops, *_next_transfer()])
    return out


def dma_inputs() -> list[list[Op]]:
    """For each engine and direction, a transfer pointed at each region in
    turn (each followed by a clock step, a CMD + DAT line reset, SDHC
    2.2.17, and CMD12), then an ordinary transfer read back byte for byte; the own BAR
    and the table addresses in inputs of their own."""
    tick = {"op": "clock", "ns": 1_000_000}
    # the lines reset, then CMD12 takes the card back to the transfer state
    # (PLS 4.3.4: the reset leaves it sending or receiving)
    clear: list[Op] = [{"op": "reset", "what": H.SWRST_CMD | H.SWRST_DAT},
                       {"op": "cmd", "index": 12, "arg": 0, "app": False}]
    tran = H.ADMA_VALID | H.ADMA_ACT_TRAN | H.ADMA_END
    out = []
    for index in _MULTI:
        sdma: list[Op] = []
        adma: list[Op] = []
        for where, addr in _REGION_ADDR.items():
            if where == "rom" and index == _WN:
                continue
            go = dict(_start(index, count=2), mode="sdma", sdma_addr=addr)
            data = dict(_start(index, count=2), mode="adma2", abs=True,
                        descs=[[addr, 1024, tran]])
            (sdma if where != "own-bar" else adma).append(go)
            adma.append(data)
            if where != "own-bar":
                sdma += [tick, *clear]
            adma += [tick, *clear]
        out.append([_SETUP, _INIT, *sdma, *_next_transfer()])
        out.append([_SETUP, _INIT, *adma, *_next_transfer()])
    table: list[Op] = []
    for where in ("ram-top", "past-ram", "unassigned", "own-bar"):
        addr = _REGION_ADDR[where] + (252 if where == "ram-top" else 0)
        table += [dict(_start(17, count=1), mode="adma2", table_addr=addr), tick, *clear]
    out.append([_SETUP, _INIT, *table, *_next_transfer()])
    return out


#: Where a ``migrate`` operation meets the run (the ``migrate`` kind): a
#: multiple-block read between two blocks, the same read stopped at a block
#: gap (SDHC 2.2.14), a write aborted by CMD12.  The migration group's fixed
#: points have the rest (idle, mid-block of a read and of a write, a locked
#: card): each migration is a QEMU process of its own in the default check,
#: so the kind adds only the three no point had (its time budget, +10%).
MIGRATE_POINTS: tuple[tuple[str, ...], ...] = (
    ("between-blocks", "r"), ("gap-stopped", "r"), ("after-cmd12",),
    ("card-mid-block", "r"), ("card-mid-data", "acmd13"))
_MIGRATE: Op = {"op": "migrate"}


def migrate_inputs() -> list[list[Op]]:
    """The migration points of :data:`MIGRATE_POINTS` in two inputs; after
    each, the transfer goes on (or the data port is read and written) and
    the next one is read back byte for byte."""
    gap, cont = ({"op": "blkgap", "value": v} for v in (H.BLKGAP_STOP, H.BLKGAP_CONTINUE))
    read = [_SETUP, _INIT, _start(18, count=4), _pio(False, 128), _MIGRATE, _pio(False, 64),
            gap, _pio(False, 64), {"op": "clock", "ns": 1_000_000}, _MIGRATE, cont,
            _pio(False, 256), *_next_transfer()]
    write = [_SETUP, _INIT, *_stopping("cmd12", True), _MIGRATE, *_port_ops(),
             *_next_transfer()]
    return [read, write, *card_mid_inputs()]


def card_mid_inputs() -> list[list[Op]]:
    """Migration points inside the card's data block (issue #43): Block
    Size below the card's block length, so that the host's transfer ends or
    pauses while the card is part-way through its block (PLS 4.3.3: the
    card sends or takes its block length; SDHC 2.2.2: the host counts its
    own Block Size).  CMD17 of 256 bytes: the card is left in sending-data
    at byte 256, migrated there, then two SDMA restarts of one byte each
    (Block Size and Count 1, SDMA System Address's top byte, ledger
    ``sdhci.sdma-sysad-starts-transfer``): the first byte is the block's 257th,
    the second is 0 on QEMU >= 9.1 (ledger ``sd.data-size-not-migrated``: the
    card stops after one more byte; one byte a chunk, so 10.0's byte-wise and
    11.1's chunk-wise reads agree), then CMD12 and a CMD25 of 256-byte host
    blocks; ACMD13 (64 bytes) read 8 bytes a block, migrated part-way.  One
    input, two points: each point is a QEMU process more in the default
    check (its time budget: a third, CMD25 migrated inside its card block,
    was cut for it)."""
    tick: Op = {"op": "clock", "ns": 1_000_000}
    cmd12: Op = {"op": "cmd", "index": 12, "arg": 0, "app": False}
    one = [{"op": "write", "off": H.BLKSIZE.offset, "size": 4, "value": 1 << 16 | 1},
           {"op": "write", "off": H.HOSTCTL.offset, "size": 1,
            "value": H.HOSTCTL_WIDTH4 | H.HOSTCTL_DMA_SDMA},
           {"op": "write", "off": H.SDMASYSAD.offset, "size": 4, "value": 0x0101_0000}, tick]
    return [[_SETUP, _INIT,
             dict(_start(17, count=1), bs=256), _pio(False, 64), tick, _MIGRATE, *one,
             *one, cmd12,
             dict(_start(25, count=4), bs=256), _pio(True, 96), _pio(True, 160), tick, cmd12,
             dict(_start(13, count=8), bs=8, app=True), _pio(False, 6), _MIGRATE,
             _pio(False, 10), tick, _next_transfer()[1]]]


def _migrate_class(model: Any, tracker: Tracker) -> Feature:
    """Where a ``migrate`` operation is (:data:`MIGRATE_POINTS`)."""
    s, card = model.sdhci, model.card
    if getattr(card, "locked", False):
        return ("reach", "migrate", "locked")
    way = "r" if s.trnmod & H.TRNMOD_READ else "w"
    if getattr(s, "stopped_state", 0):
        return ("reach", "migrate", "gap-stopped", way)
    if tracker.stopped:
        return ("reach", "migrate", f"after-{tracker.stopped}")
    card_at = _card_inside(card)
    if card_at:
        return ("reach", "migrate", *card_at)
    if s.prnsts & H.PRNSTS_DATINHIBIT:
        size = s.blksize & 0xFFF
        inside = s.data_count % size if size else 0
        return ("reach", "migrate", "mid-block" if inside else "between-blocks", way)
    return ("reach", "migrate", "idle")


def _card_inside(card: Any) -> tuple[str, str] | None:
    """Where the card is inside a data block, if it is (sending-data or
    receiving-data with part of its block moved, PLS 4.3.3)."""
    state = int(getattr(card, "state", -1))
    xfer = getattr(card, "xfer", None)
    if state not in (S.CardState.DATA, S.CardState.RCV) or xfer is None or not xfer.offset:
        return None
    # the data block's size names it (a probe's CMD13 may be the last command)
    named = {64: "acmd13", 8: "acmd51"}.get(getattr(xfer, "size", 0))
    if named and state == S.CardState.DATA:
        return ("card-mid-data", named)
    return ("card-mid-block", "r" if state == S.CardState.DATA else "w")


def table_inputs() -> list[list[Op]]:
    return (lock_inputs() + stop_inputs() + dma_inputs() + device_inputs()
            + migrate_inputs() + restart.inputs())


def goal() -> dict[str, list[Feature]]:
    """Every class of each kind: the coverage goal ``explore --report`` measures."""
    lock: list[Feature] = [("reach", "lock", "pwd-len", n) for n in range(MAX_PWD + 1)]
    lock += [("reach", "lock", what, n) for what in ("locked-len", "unlocked-len")
             for n in range(1, MAX_PWD + 1)]
    lock += [("reach", "lock", what, i) for what in ("old-off", "new-off")
             for i in range(MAX_PWD)]
    # with no password set, only a request without SET_PWD can be wrong
    lock += [("reach", "lock", "wrong", st, req) for st in _LOCK_STATES for req in _REQUESTS
             if (st, req) != ("none", "set")]
    lock += [("reach", "lock", "erase", st, bare) for st in _LOCK_STATES for bare in (1, 0)]
    stop: list[Feature] = []
    for how in STOPS:
        stop.append(("reach", "stop", how))
        stop += [("reach", "stop", how, "port", "w" if w else "r", _lane(size, lane))
                 for w, size, lane in PORT]
        stop.append(("reach", "stop", how, "next"))
    return {"lock": lock, "stop": stop, "dma": dma_goal(), "restart": restart.goal(),
            "migrate": [("reach", "migrate", *p) for p in MIGRATE_POINTS]}


_LOCK_STATES = ("none", "set", "locked")
_REQUESTS = ("set", "clear", "lock", "unlock")


def _lane(size: int, lane: int) -> str:
    return f"{size}" if not lane else f"{size}@+{lane}"


@dataclass
class Tracker:
    """What a run did so far that a class needs: the last stop, if the
    data port has not started a new transfer since; the ``restart`` kind's
    state."""

    stopped: str | None = None
    restart: restart.State = field(default_factory=restart.State)

    def copy(self) -> Tracker:
        return Tracker(self.stopped, replace(self.restart))


def _lock_state(card: Any) -> str:
    return "locked" if getattr(card, "locked", False) else "set" if card.pwd else "none"


def _request(flags: int) -> str:
    """The request kind of a lock structure's flags (PLS 4.3.7, Table 4-9)."""
    if flags & S.LOCK_CLR_PWD:
        return "clear"
    if flags & S.LOCK_LOCK:
        return "lock"
    return "set" if flags & S.LOCK_SET_PWD else "unlock"


def _one_off(a: bytes, b: bytes) -> int | None:
    """The position where ``a`` and ``b`` (of one length) differ, if one only."""
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return diff[0] if len(diff) == 1 else None


def _lock_before(card: Any, op: Op) -> list[Feature]:
    """The request's classes from the card's password before it (PLS 4.3.7.1)."""
    if not hasattr(card, "pwd"):
        return []
    state = _lock_state(card)
    if op.get("bare") or op["flags"] & S.LOCK_ERASE:
        return [("reach", "lock", "erase", state, int(bool(op.get("bare"))))]
    if op.get("pwd_len") is not None:
        return []
    sent, cur = bytes.fromhex(op["pwd"]), bytes(card.pwd)
    out: list[Feature] = []
    old = sent[:len(cur)]
    if (not cur and not op["flags"] & S.LOCK_SET_PWD) or (cur and old != cur):
        out.append(("reach", "lock", "wrong", state, _request(op["flags"])))
    if cur and len(sent) > len(cur):
        at = _one_off(old, cur)
        if at is not None:
            out.append(("reach", "lock", "old-off", at))
        new = sent[len(cur):]
        at = _one_off(new, cur) if old == cur and len(new) == len(cur) else None
        if at is not None:
            out.append(("reach", "lock", "new-off", at))
    return out


def _stop_how(model: Any, op: Op) -> str | None:
    """How ``op`` stops a transfer in progress, as far as it does by itself."""
    kind = op["op"]
    if kind == "blkgap" and op["value"] & H.BLKGAP_STOP:
        return "gap"
    if kind == "write" and op["off"] == H.CMDREG.offset and op["size"] >= 2:
        return "cmd12" if (op["value"] >> 8) & 0x3F == 12 else None
    if kind == "cmd" and op["index"] == 12 and not op["app"]:
        return "cmd12"
    if kind == "reset":
        return ("sw-reset" if op["what"] & H.SWRST_ALL else
                "dat-reset" if op["what"] & H.SWRST_DAT else None)
    if kind == "medium" and not op["inserted"]:
        return "removed"
    return None


def before(model: Any, op: Op) -> tuple[Any, ...]:
    """What :func:`after` needs of the state before ``op``."""
    s = model.sdhci
    active = bool(s.prnsts & H.PRNSTS_DATINHIBIT)
    lock = (_lock_before(model.card, op) if op["op"] == "lock" else
            _dma_classes(model, op) if op["op"] == "start" else [])
    return active, s.errintsts & _DATA_ERRORS, s.trnmod, lock, restart.before(model)


def after(pre: tuple[Any, ...], model: Any, op: Op, tracker: Tracker) -> set[Feature]:
    """The classes ``op`` reached (``pre`` from :func:`before`)."""
    active, errors, trnmod, out, pre_restart = pre
    feats: set[Feature] = set(out)
    card = model.card
    if hasattr(card, "pwd"):
        feats.add(("reach", "lock", "pwd-len", len(card.pwd)))
        if op["op"] == "lock" and card.pwd:
            feats.add(("reach", "lock", "locked-len" if card.locked else "unlocked-len",
                       len(card.pwd)))
    kind = op["op"]
    if kind == "migrate":
        feats.add(_migrate_class(model, tracker))
    if tracker.stopped and kind in ("rw", "start", "adma"):
        feats.add(("reach", "stop", tracker.stopped, "next"))
        tracker.stopped = None
    elif tracker.stopped:
        feats |= _port(tracker.stopped, op)
    s = model.sdhci
    how = _stop_how(model, op) if active else None
    feats |= restart.after(pre_restart, model, op, active, how, tracker.restart)
    if how is None and s.errintsts & _DATA_ERRORS & ~errors:
        how = "error"   # a data error stops the transfer it starts, too (ADMA)
    elif (how is None and active and not s.prnsts & H.PRNSTS_DATINHIBIT
          and trnmod & H.TRNMOD_ACMD12):
        how = "auto12"
    if how is not None:
            feats.add(("reach", "stop", how))
            tracker.stopped = how
    return feats


def _port(how: str, op: Op) -> set[Feature]:
    kind = op["op"]
    if kind == "pio":
        return {("reach", "stop", how, "port", "w" if op["write"] else "r",
                 _lane(op["size"], 0))} if op["n"] else set()
    if kind in ("read", "write") and _BDATA <= op["off"] < _BDATA + 4:
        lane = op["off"] - _BDATA
        return {("reach", "stop", how, "port", "w" if kind == "write" else "r",
                 _lane(op["size"], lane))}
    return set()


def is_reach(f: object) -> bool:
    return isinstance(f, tuple) and bool(f) and f[0] == "reach"


def render(reached: Iterable[Any]) -> str:
    """Per kind: its operations, the classes reached of the goal, those not."""
    got = {f for f in reached if is_reach(f)}
    lines = ["reach (issues #34, #43): operations and state classes"]
    for kind, classes in goal().items():
        hit = [c for c in classes if c in got]
        lines.append(f"  {kind}: {len(hit)} of {len(classes)} classes "
                     f"({100 * len(hit) / len(classes):.1f}%)")
        lines.append(f"    operations: {OPERATIONS[kind]}")
        missing = [c for c in classes if c not in got]
        if missing:
            shown = ", ".join(" ".join(map(str, c[2:])) for c in missing[:12])
            more = f" (+{len(missing) - 12} more)" if len(missing) > 12 else ""
            lines.append(f"    not reached: {shown}{more}")
    for kind, why in NOT_YET.items():
        lines.append(f"  {kind}: not reached, and why: {why}")
    return "\n".join(lines)
