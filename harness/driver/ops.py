"""The fuzzer's operation vocabulary: what one input is made of.

An input is a list of operations, each a JSON object ``{"op": KIND, ...}``
so that corpora and findings are plain files.  Operations sit at the level
of the Target and of the host driver (:mod:`harness.driver`): a whole SD
command with its data phase (PIO, SDMA, ADMA2) is one operation, so that a
random sequence reaches deep card and controller state, and the raw
register writes, clock steps, resets and guest memory writes between them
disturb that state at random points.  :func:`apply` runs one operation
through a driver on any Target; :func:`generate` and :func:`mutate` draw
inputs from a seeded ``random.Random`` only, so a seed gives one input.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.driver.adma import Adma2Desc, AdmaOptions
from harness.driver.host import APP_CMD, SET_BLOCKLEN, HostDriver
from harness.driver.results import DriverError, Mode, Transfer
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.target import Target

Op = dict[str, Any]

#: Blocks of the fuzzed card (the sdsc-16m recipe: 16 MiB).
CARD_BLOCKS = 32768
#: Guest memory the fuzzer's DMA buffers and descriptor tables live in
#: (the driver's DMA area: tables at +0, data at +0x10000).
DMA_BASE = 0x0100_0000
DMA_SPAN = 0x40000

#: Commands whose data phase the card sends to the host (reads), and those
#: whose data the host sends (the command table's data direction).
_READ_ADTC = frozenset(c.index for c in S.SD_COMMANDS.values() if c.reads)
_WRITE_ADTC = S.commands(data=S.Data.WRITE)
_READ_ACMD = frozenset(c.index for c in S.SD_APP_COMMANDS.values() if c.reads)
_MODES = [m.value for m in Mode]
_STOPS = ["auto", "auto12", "auto23", "cmd12", "cmd23", "none"]


def _arg(rng: random.Random) -> int:
    """A command argument: mostly small or structured, sometimes any."""
    return rng.choice([
        0, rng.randrange(64), rng.randrange(CARD_BLOCKS) * rng.choice([1, 512]),
        rng.randrange(1 << 16) << 16, 0x1AA, 0x40FF8000, 0x80FFFFF1, 0x00FFFFF1,
        rng.randrange(1 << 32), 0xFFFFFFFF,
    ])


def _block(rng: random.Random) -> int:
    return rng.choice([rng.randrange(64), rng.randrange(CARD_BLOCKS),
                       CARD_BLOCKS - rng.randrange(1, 4), CARD_BLOCKS + rng.randrange(4),
                       rng.randrange(1 << 23)])


def _block_size(rng: random.Random) -> int | None:
    return rng.choice([None, None, 512, 1, 2, 3, 4, 7, 8, 16, 64, 100, 257, 511,
                       rng.randrange(1, 513), rng.randrange(513, 4096)])


def _descriptor(rng: random.Random) -> list[int]:
    """``[address offset, length, attribute]`` of one ADMA2 descriptor, valid
    or malformed: any act, end/int/valid bits, lengths 0..65535, addresses
    inside the DMA area, at its end, or beyond RAM."""
    act = rng.choice([H.ADMA_ACT_TRAN, H.ADMA_ACT_TRAN, H.ADMA_ACT_NOP, H.ADMA_ACT_LINK,
                      H.ADMA_ACT_RSV])
    attr = act | (H.ADMA_VALID if rng.random() < 0.9 else 0)
    attr |= H.ADMA_END if rng.random() < 0.3 else 0
    attr |= H.ADMA_INT if rng.random() < 0.2 else 0
    if rng.random() < 0.1:
        attr = rng.randrange(256)
    length = rng.choice([0, 1, 3, 4, 200, 512, 1024, 4096, 65535, rng.randrange(1 << 16)])
    addr = rng.choice([0x10000, 0x10000 + rng.randrange(0x8000), rng.randrange(0x100) * 8,
                       DMA_SPAN - 4, -DMA_BASE + 0x7FFF_0000])
    return [addr, length, attr]


# -- the operation kinds -----------------------------------------------------------------

Generator = Callable[[random.Random], Op]
Runner = Callable[[HostDriver, Target, Op], None]


class Operations:
    """Each operation kind's generator (with its weight in a random
    sequence) and runner, bound by decorator where each is written:
    ``@operation("cmd", weight=14)`` above the generator and
    ``@operation.runs("cmd")`` above the runner.  A kind is bound once; a
    kind that is run but never drawn (``migrate``) has no generator."""

    def __init__(self) -> None:
        #: kind -> (generator, weight), in the order bound (a seed's draws follow it).
        self.generators: dict[str, tuple[Generator, int]] = {}
        self.runners: dict[str, Runner] = {}

    def __call__(self, kind: str, *, weight: int) -> Callable[[Generator], Generator]:
        """Bind the decorated function as the generator of ``kind``."""
        if kind in self.generators:
            raise ValueError(f"fuzz operation {kind!r}: a second generator")

        def bind(fn: Generator) -> Generator:
            self.generators[kind] = (fn, weight)
            return fn
        return bind

    def runs(self, kind: str) -> Callable[[Runner], Runner]:
        """Bind the decorated function as the runner of ``kind``."""
        if kind in self.runners:
            raise ValueError(f"fuzz operation {kind!r}: a second runner")

        def bind(fn: Runner) -> Runner:
            self.runners[kind] = fn
            return fn
        return bind


#: The operation kinds of this module.
operation = Operations()
#: Each kind's generator and its weight in a random sequence.
GENERATORS = operation.generators


# -- generators, one per operation kind ----------------------------------------------

@operation("setup", weight=1)
def _g_setup(rng: random.Random) -> Op:
    return {"op": "setup", "freq": rng.choice([400_000, 25_000_000, 50_000_000])}


@operation("init", weight=2)
def _g_init(rng: random.Random) -> Op:
    return {"op": "init", "bus_width": rng.choice([1, 4, 4]), "hcs": rng.random() < 0.8,
            "block_len": rng.choice([512, 512, 512, 1, 64, 1024])}


@operation("cmd", weight=14)
def _g_cmd(rng: random.Random) -> Op:
    app = rng.random() < 0.25
    table = S.SD_APP_COMMANDS if app else S.SD_COMMANDS
    valid = [c.index for c in table.values() if not c.reserved]
    index = rng.choice(valid) if rng.random() < 0.85 else rng.randrange(64)
    op: Op = {"op": "cmd", "index": index, "arg": _arg(rng), "app": app}
    spec = table.get(index)
    if spec is not None and spec.kind is S.CmdType.ADTC or rng.random() < 0.05:
        read = index in (_READ_ACMD if app else _READ_ADTC) or (
            index not in _WRITE_ADTC and rng.random() < 0.5)
        op["data"] = {"read": read, "bs": rng.choice([512, 64, 8, 16, 4, rng.randrange(1, 600)]),
                      "count": rng.choice([1, 1, 2, 3]), "mode": rng.choice(_MODES)}
    if rng.random() < 0.1:
        op["resp"] = rng.choice([r.value for r in S.Resp])
    return op


@operation("rw", weight=14)
def _g_rw(rng: random.Random) -> Op:
    return {"op": "rw", "read": rng.random() < 0.6, "block": _block(rng),
            "count": rng.choice([1, 1, 2, 3, 7, 16, rng.randrange(1, 40)]),
            "bs": _block_size(rng), "mode": rng.choice(_MODES), "stop": rng.choice(_STOPS),
            "pio_access": rng.choice([4, 4, 2, 1]), "skew": rng.choice([0, 0, 0, 1, 4, 0x7FC]),
            "boundary": rng.choice([512 * 1024, 4096, 8192]),
            "max_segment": rng.choice([65536, 512, 200, 4096])}


@operation("adma", weight=5)
def _g_adma(rng: random.Random) -> Op:
    return {"op": "adma", "read": rng.random() < 0.6, "block": rng.randrange(64),
            "count": rng.choice([1, 2, 3]), "bs": rng.choice([512, 512, 64, 4]),
            "descs": [_descriptor(rng) for _ in range(rng.randrange(1, 6))],
            "width64": rng.random() < 0.15}


@operation("erase", weight=3)
def _g_erase(rng: random.Random) -> Op:
    first = _block(rng)
    return {"op": "erase", "first": first, "last": first + rng.choice([0, 1, 7, 100, -1]),
            "arg": rng.choice([0, 0, 1, 2, rng.randrange(1 << 32)])}


#: Passwords a ``lock`` draws from (PLS 4.3.7.1: 1..16 bytes), few so that
#: a sequence sets one and later sends it back: lock, unlock, replace, clear.
PASSWORDS = (b"sdqtest", b"card-2")


def _password(rng: random.Random) -> bytes:
    """The PWD field: one known password, old + new, or random bytes."""
    a, b = rng.sample(PASSWORDS, 2)
    return rng.choice([a, a, a + b, b + a, b"",
                       bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 16, 17])))])


@operation("lock", weight=3)
def _g_lock(rng: random.Random) -> Op:
    """CMD42 (PLS 4.3.7): set, clear, lock, unlock with a password a later
    ``lock`` can send back; ``pad``: the data block is 512 bytes whatever
    CMD16 set (what QEMU >= 9.1 waits for, ledger ``sd.cmd42-data-length``);
    ``bare``: the structure is the flags byte alone, CMD16(1), as a forced
    erase sends it (PLS 4.3.7.3)."""
    flags = rng.choice([S.LOCK_SET_PWD, S.LOCK_CLR_PWD, S.LOCK_LOCK, S.LOCK_ERASE,
                        S.LOCK_SET_PWD | S.LOCK_LOCK, 0x00, rng.randrange(256)])
    bare = flags == S.LOCK_ERASE and rng.random() < 0.7
    return {"op": "lock", "flags": flags, "pwd": b"".hex() if bare else _password(rng).hex(),
            "pwd_len": rng.choice([None, None, None, rng.randrange(256)]),
            "pad": rng.random() < 0.6, "bare": bare}


@operation("reset", weight=3)
def _g_reset(rng: random.Random) -> Op:
    return {"op": "reset", "what": rng.choice([H.SWRST_ALL, H.SWRST_CMD, H.SWRST_DAT,
                                               H.SWRST_CMD | H.SWRST_DAT])}


@operation("clock", weight=4)
def _g_clock(rng: random.Random) -> Op:
    return {"op": "clock", "ns": rng.choice([1, 100, 10_000, 1_000_000, 100_000_000,
                                             rng.randrange(1, 1 << 30)])}


@operation("irq", weight=4)
def _g_irq(rng: random.Random) -> Op:
    return {"op": "irq", "norsts": rng.choice([0xFFFF, 0x01FF, 0, rng.randrange(1 << 16)]),
            "errsts": rng.choice([0xFFFF, 0, rng.randrange(1 << 16)]),
            "norsig": rng.choice([0xFFFF, 0, 0x0003, rng.randrange(1 << 16)]),
            "errsig": rng.choice([0xFFFF, 0, rng.randrange(1 << 16)])}


@operation("write", weight=7)
def _g_write(rng: random.Random) -> Op:
    size = rng.choice([1, 2, 4, 4, 8])
    if rng.random() < 0.85:
        reg = rng.choice(H.REGISTERS)
        off = reg.offset + rng.randrange(reg.width)
    else:
        off = rng.randrange(H.REGISTER_WINDOW + 8)
    value = rng.choice([0, (1 << (8 * size)) - 1, rng.randrange(1 << (8 * size)),
                        1 << rng.randrange(8 * size)])
    return {"op": "write", "off": off, "size": size, "value": value}


@operation("read", weight=3)
def _g_read(rng: random.Random) -> Op:
    reg = rng.choice(H.REGISTERS)
    return {"op": "read", "off": reg.offset + rng.choice([0, 0, 0, 1, 2]),
            "size": rng.choice([1, 2, 4, 8])}


@operation("mem", weight=2)
def _g_mem(rng: random.Random) -> Op:
    n = rng.choice([8, 16, 64])
    fill = rng.choice(["random", "zero", "ff"])
    data = (bytes(rng.randrange(256) for _ in range(n)) if fill == "random"
            else bytes(n) if fill == "zero" else b"\xff" * n)
    return {"op": "mem", "off": rng.choice([0, 8, 0x10000, rng.randrange(DMA_SPAN - 64)]),
            "data": data.hex()}


@operation("power", weight=1)
def _g_power(rng: random.Random) -> Op:
    return {"op": "power", "on": rng.random() < 0.7,
            "volt": rng.choice([H.PWRCON_VOLT_33, H.PWRCON_VOLT_30, H.PWRCON_VOLT_18])}


@operation("sdclk", weight=1)
def _g_sdclk(rng: random.Random) -> Op:
    return {"op": "sdclk", "freq": rng.choice([0, 400_000, 25_000_000, 50_000_000, 1])}


@operation("switch", weight=2)
def _g_switch(rng: random.Random) -> Op:
    return {"op": "switch", "mode": rng.choice([0, 1]), "group": rng.randrange(1, 7),
            "value": rng.choice([0, 1, 2, 0xF, rng.randrange(16)])}


@operation("hostctl", weight=2)
def _g_hostctl(rng: random.Random) -> Op:
    return {"op": "hostctl", "value": rng.choice([0, 0x02, 0x04, 0x10, 0x18, 0x20,
                                                  rng.randrange(256)])}


@operation("blkgap", weight=1)
def _g_blkgap(rng: random.Random) -> Op:
    return {"op": "blkgap", "value": rng.choice([1, 2, 3, 0])}


@operation("probe", weight=4)
def _g_probe(rng: random.Random) -> Op:
    return {"op": "probe", "status": rng.random() < 0.5}


@operation("force", weight=1)
def _g_force(rng: random.Random) -> Op:
    """A Force Event write (SDHC 2.2.22/2.2.23: FEAER and FEERR in one longword)."""
    return {"op": "force", "size": rng.choice([2, 4]),
            "value": rng.choice([1 << rng.randrange(32), rng.randrange(1 << 32), 0xFFFF0000,
                                 0x0000009F])}


@operation("medium", weight=1)
def _g_medium(rng: random.Random) -> Op:
    """A media change by the management layer (QMP eject / blockdev-change-medium)."""
    return {"op": "medium", "inserted": rng.random() < 0.5}


#: Data commands a ``start`` issues: (index, read, multiple block).
START_COMMANDS = ((S.index("READ_SINGLE_BLOCK"), True, False),
                  (S.index("READ_MULTIPLE_BLOCK"), True, True),
                  (S.index("WRITE_BLOCK"), False, False),
                  (S.index("WRITE_MULTIPLE_BLOCK"), False, True))
#: Application commands a ``start`` with ``"app": true`` may issue (after
#: its own CMD55 with the card's RCA): ACMD13 SD Status (64 bytes) and
#: ACMD51 SCR (8 bytes), PLS 4.10.2 and 5.6, read in host blocks of any size.
START_APP_COMMANDS = ((S.index("SD_STATUS", app=True), True, True),
                      (S.index("SEND_SCR", app=True), True, True))
#: Transfer modes of ``start``: PIO, SDMA, and each ADMA DMA Select (SDHC
#: 2.2.10: ADMA1, ADMA2 32-bit, ADMA2 64-bit) with a one-descriptor table.
START_MODES = ("pio", "sdma", "adma1", "adma2", "adma64")
_START_DMASEL = {"sdma": H.HOSTCTL_DMA_SDMA, "adma1": H.HOSTCTL_DMA_ADMA1,
                 "adma2": H.HOSTCTL_DMA_ADMA2_32, "adma64": H.HOSTCTL_DMA_ADMA2_64}
#: Most blocks an SDMA ``start`` asks for: SDMA moves its data without the
#: guest, so a count of 65535 would move up to 256 MiB in one operation
#: (PIO moves only what ``pio`` operations move, so any count is cheap).
SDMA_START_BLOCKS = 16


@operation("start", weight=4)
def _g_start(rng: random.Random) -> Op:
    """A data command issued through the registers and left running: no
    wait, no data moved (SDHC 3.7.2.1 steps 1-7), so that the operations
    after it (``pio``, ``reset``, ``clock``, a probe) meet the transfer in
    whatever phase it is; any block size and any byte offset."""
    index, _read, multi = rng.choice(START_COMMANDS)
    mode = rng.choice(START_MODES[:2] * 3 + START_MODES[2:])
    counts = [1, 2, 3, 0, 65535] if mode == "pio" else [1, 2, 3, 0, SDMA_START_BLOCKS]
    return {"op": "start", "index": index,
            "bs": rng.choice([512, 512, 1, 2, 3, 4, 64, 511, 513, 1024, 2048, 4095,
                              rng.randrange(1, 4096)]),
            "count": rng.choice(counts) if multi else 1,
            "offset": rng.choice([0, 0, 1, 3, 511, rng.randrange(512)]),
            "block": rng.choice([0, rng.randrange(64), CARD_BLOCKS - 1, CARD_BLOCKS]),
            "mode": mode, "auto12": rng.random() < 0.4,
            "blkcnt_en": rng.random() < 0.9, "boundary": rng.randrange(8)}


@operation("pio", weight=4)
def _g_pio(rng: random.Random) -> Op:
    """Data port accesses of a transfer in progress (SDHC 2.2.8): a few, a
    whole 512-byte block at 4 bytes, or one more."""
    return {"op": "pio", "write": rng.random() < 0.4,
            "n": rng.choice([1, 2, 16, 127, 128, 129, 256]), "size": rng.choice([4, 4, 2, 1])}


#: The CSD's writable bits (PLS 5.3.2/5.3.3, byte 14 of the 16-byte register):
#: FILE_FORMAT_GRP, COPY, PERM_WRITE_PROTECT, TMP_WRITE_PROTECT, FILE_FORMAT.
CSD_WRITABLE = {"file_format_grp": 0x80, "copy": 0x40, "perm_wp": 0x20, "tmp_wp": 0x10,
                "file_format": 0x0C}


_PROGRAM_CSD = S.index("PROGRAM_CSD")


@operation("csd", weight=1)
def _g_csd(rng: random.Random) -> Op:
    """CMD27 with the card's CSD (read by CMD9) and writable bits changed;
    ``flip``: one read-only byte changed too (CSD_OVERWRITE, PLS 4.10.1)."""
    bits = list(CSD_WRITABLE.values())
    return {"op": "csd", "set": rng.choice([CSD_WRITABLE["tmp_wp"], 0, rng.choice(bits),
                                            CSD_WRITABLE["perm_wp"]]),
            "clear": rng.choice([0, 0, CSD_WRITABLE["tmp_wp"], rng.choice(bits)]),
            "flip": rng.choice([None, None, None, rng.randrange(15)])}


_KINDS = list(GENERATORS)
_WEIGHTS = [w for _, w in GENERATORS.values()]


def random_op(rng: random.Random) -> Op:
    kind = rng.choices(_KINDS, _WEIGHTS)[0]
    return GENERATORS[kind][0](rng)


def generate(rng: random.Random, max_len: int = 24) -> list[Op]:
    """A random input: usually the controller set up and the card brought to
    the transfer state first (deep state is where bugs hide), then random
    operations."""
    ops: list[Op] = []
    if rng.random() < 0.9:
        ops.append({"op": "setup", "freq": 400_000})
        if rng.random() < 0.9:
            ops.append(_g_init(rng) if rng.random() < 0.3 else
                       {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512})
    ops += [random_op(rng) for _ in range(rng.randrange(1, max_len))]
    return ops


def mutate(rng: random.Random, ops: list[Op], pool: list[list[Op]] | None = None,
           max_len: int = 64) -> list[Op]:
    """A variant of ``ops``: an operation inserted, deleted, replaced, one of
    its numbers changed, or a splice with another input of ``pool``."""
    out = [dict(o) for o in ops]
    for _ in range(rng.choice([1, 1, 2, 3])):
        what = rng.randrange(5)
        if what == 0 or not out:
            out.insert(rng.randrange(len(out) + 1), random_op(rng))
        elif what == 1 and len(out) > 1:
            del out[rng.randrange(len(out))]
        elif what == 2:
            out[rng.randrange(len(out))] = random_op(rng)
        elif what == 3:
            i = rng.randrange(len(out))
            fresh = GENERATORS[out[i]["op"]][0](rng)
            keys = [k for k in out[i] if k != "op"]
            if keys:
                k = rng.choice(keys)
                out[i][k] = fresh.get(k, out[i][k])
        elif pool:
            other = rng.choice(pool)
            cut = rng.randrange(len(out) + 1)
            out = out[:cut] + [dict(o) for o in other[rng.randrange(len(other) + 1):]]
    return out[:max_len]


def describe(op: Op) -> str:
    """One line: the kind, then its arguments."""
    args = " ".join(f"{k}={v:#x}" if isinstance(v, int) and not isinstance(v, bool) and v > 9
                    else f"{k}={v}" for k, v in op.items() if k != "op")
    return f"{op['op']} {args}".strip()


# -- running one operation ---------------------------------------------------------------

def _transfer(read: bool, bs: int, count: int, mode: str, *, data_seed: int = 1,
              adma: AdmaOptions | None = None) -> Transfer:
    n = bs * count
    data = None if read else bytes((data_seed * 37 + i * 7) & 0xFF for i in range(n))
    return Transfer(read=read, block_size=bs, block_count=count, mode=Mode(mode), data=data,
                    multi=count > 1, adma=adma or AdmaOptions())


def apply(d: HostDriver, t: Target, op: Op) -> None:
    """Run ``op`` through driver ``d`` on target ``t``.  A failed command is
    an answer like any other: :class:`DriverError` is swallowed; what the
    devices answered is compared by the target (the lockstep)."""
    try:
        _apply(d, t, op)
    except DriverError:
        pass


def normalise(op: Op) -> Op:
    """``op`` with every number in the range the driver and the Target take
    (the shrinker simplifies numbers toward 0 without knowing the ranges)."""
    o = dict(op)
    if "size" in o and o["size"] not in (1, 2, 4, 8):
        o["size"] = 1
    if o["op"] == "init":
        o["bus_width"] = 4 if o["bus_width"] == 4 else 1
        o["block_len"] = max(1, o["block_len"])
    elif o["op"] in ("rw", "adma"):
        o["count"] = max(1, o["count"])
        if o.get("pio_access") not in (None, 1, 2, 4):
            o["pio_access"] = 4
        b = o.get("boundary")
        if b is not None and (b < 4096 or b > 512 * 1024 or b & (b - 1)):
            o["boundary"] = 512 * 1024
        if o.get("max_segment") is not None and not 1 <= o["max_segment"] <= 65536:
            o["max_segment"] = 65536
        if o["op"] == "adma" and not o["descs"]:
            o["descs"] = [[0, 0, H.ADMA_VALID | H.ADMA_END]]
    elif o["op"] == "cmd" and "data" in o:
        o["data"] = dict(o["data"], bs=max(1, o["data"]["bs"]),
                         count=max(1, o["data"]["count"]))
    elif o["op"] == "start":
        if o["index"] not in {c[0] for c in start_commands(o)}:
            o["index"] = 17
            o.pop("app", None)
        o["bs"] = min(max(1, o["bs"]), 4095)
        o["count"] &= 0xFFFF
        o["boundary"] &= 7
        if o["mode"] not in START_MODES:
            o["mode"] = "pio"
        if o["mode"] != "pio":
            o["count"] = min(o["count"], SDMA_START_BLOCKS)
    elif o["op"] == "csd":
        o["set"] &= 0xFF
        o["clear"] &= 0xFF
    elif o["op"] == "lock":
        o.setdefault("pad", False)
        o.setdefault("bare", False)
        if o["pwd_len"] is not None:
            o["pwd_len"] &= 0xFF
    elif o["op"] == "pio":
        o["n"] = max(0, min(o["n"], 4096))
        if o["size"] not in (1, 2, 4):
            o["size"] = 4
    elif o["op"] == "clock" and o["ns"] is not None:
        o["ns"] = max(1, o["ns"])  # QEMU >= 10 refuses a step of 0
    return o


def _apply(d: HostDriver, t: Target, op: Op) -> None:
    op = normalise(op)
    run = operation.runners.get(op["op"])
    if run is None:
        raise ValueError(f"unknown fuzz operation {op['op']!r}")
    run(d, t, op)


@operation.runs("setup")
def _run_setup(d: HostDriver, t: Target, op: Op) -> None:
    d.setup(freq_hz=op["freq"])


@operation.runs("init")
def _run_init(d: HostDriver, t: Target, op: Op) -> None:
    d.init_card(bus_width=op["bus_width"], hcs=op["hcs"], block_len=op["block_len"],
                acmd41_tries=50)


@operation.runs("cmd")
def _run_cmd(d: HostDriver, t: Target, op: Op) -> None:
    _cmd(d, op)


@operation.runs("rw")
@operation.runs("adma")
def _run_rw(d: HostDriver, t: Target, op: Op) -> None:
    _rw(d, op)


@operation.runs("erase")
def _run_erase(d: HostDriver, t: Target, op: Op) -> None:
    d.erase(op["first"] & 0xFFFFFFFF, op["last"] & 0xFFFFFFFF, arg=op["arg"])


@operation.runs("lock")
def _run_lock(d: HostDriver, t: Target, op: Op) -> None:
    lock(d, op)


@operation.runs("reset")
def _run_reset(d: HostDriver, t: Target, op: Op) -> None:
    d.reset(op["what"])


@operation.runs("clock")
def _run_clock(d: HostDriver, t: Target, op: Op) -> None:
    t.clock_step(op["ns"])


@operation.runs("irq")
def _run_irq(d: HostDriver, t: Target, op: Op) -> None:
    d.wr(H.NORINTSTSEN, op["norsts"])
    d.wr(H.ERRINTSTSEN, op["errsts"])
    d.wr(H.NORINTSIGEN, op["norsig"])
    d.wr(H.ERRINTSIGEN, op["errsig"])


@operation.runs("write")
def _run_write(d: HostDriver, t: Target, op: Op) -> None:
    t.write(op["off"], op["size"], op["value"])


@operation.runs("read")
def _run_read(d: HostDriver, t: Target, op: Op) -> None:
    t.read(op["off"], op["size"])


@operation.runs("mem")
def _run_mem(d: HostDriver, t: Target, op: Op) -> None:
    if op["data"]:
        t.mem_write(d.dma_base + op["off"], bytes.fromhex(op["data"]))


@operation.runs("power")
def _run_power(d: HostDriver, t: Target, op: Op) -> None:
    if op["on"]:
        d.power_on(op["volt"])
    else:
        d.power_off()


@operation.runs("sdclk")
def _run_sdclk(d: HostDriver, t: Target, op: Op) -> None:
    if op["freq"]:
        d.set_clock(op["freq"])
    else:
        d.clock_off()


@operation.runs("switch")
def _run_switch(d: HostDriver, t: Target, op: Op) -> None:
    d.switch_function(op["mode"], {op["group"]: op["value"]})


@operation.runs("hostctl")
def _run_hostctl(d: HostDriver, t: Target, op: Op) -> None:
    d.wr(H.HOSTCTL, op["value"])


@operation.runs("blkgap")
def _run_blkgap(d: HostDriver, t: Target, op: Op) -> None:
    d.wr(H.BLKGAP, op["value"])


@operation.runs("force")
def _run_force(d: HostDriver, t: Target, op: Op) -> None:
    t.write(H.FEAER.offset, 4 if op["size"] == 4 else 2, op["value"])


@operation.runs("medium")
def _run_medium(d: HostDriver, t: Target, op: Op) -> None:
    set_medium(t, bool(op["inserted"]))


@operation.runs("probe")
def _run_probe(d: HostDriver, t: Target, op: Op) -> None:
    probe(d, t, status=bool(op.get("status")), written=bool(op.get("written")))


@operation.runs("start")
def _run_start(d: HostDriver, t: Target, op: Op) -> None:
    if op.get("app"):  # its CMD55 first (PLS 4.3.9), addressed to the card
        d.cmd(APP_CMD, (d.card.rca & 0xFFFF) << 16)
    start(t, op, d.dma_base)


@operation.runs("csd")
def _run_csd(d: HostDriver, t: Target, op: Op) -> None:
    program_csd(d, op)


@operation.runs("migrate")
def _run_migrate(d: HostDriver, t: Target, op: Op) -> None:
    """A migration point (issue #34): the explore group's replay moves QEMU
    to a new process here in a migration run (ctx.migrate_point); everywhere
    else, the model included, the run goes on unmigrated."""


@operation.runs("pio")
def _run_pio(d: HostDriver, t: Target, op: Op) -> None:
    _pio(t, op)


def _cmd(d: HostDriver, op: Op) -> None:
    """``op``'s SD command (or ACMD), with its data transfer if it has one."""
    data = op.get("data")
    tr = None if data is None else _transfer(data["read"], data["bs"], data["count"],
                                             data["mode"])
    table = S.SD_APP_COMMANDS if op["app"] else S.SD_COMMANDS
    spec = table.get(op["index"])
    resp = S.Resp(op["resp"]) if "resp" in op else (spec.resp if spec else S.Resp.R1)
    arg = op["arg"]
    if op.get("rca"):  # addressed by the card's RCA (PLS 4.7.4: arg bits 31:16),
        # or (``rca_xor``) by an RCA that differs from it in those bits
        arg = (((d.card.rca ^ op.get("rca_xor", 0)) & 0xFFFF) << 16) | (arg & 0xFFFF)
    if op["app"]:
        d.acmd(op["index"], arg, resp, tr)
    else:
        d.cmd(op["index"], arg, resp, tr)


def _pio(t: Target, op: Op) -> None:
    """``op["n"]`` Buffer Data Port accesses of ``op["size"]`` bytes."""
    for i in range(op["n"]):
        if op["write"]:
            t.write(H.BDATA.offset, op["size"], (0x5A + 7 * i) & ((1 << 8 * op["size"]) - 1))
        else:
            t.read(H.BDATA.offset, op["size"])


def start(t: Target, op: Op, base: int = DMA_BASE) -> None:
    """Issue ``op``'s data command through the registers (SDHC 3.7.2.1:
    block size with the SDMA boundary, block count, argument, transfer
    mode, command) and return at once; SDMA uses the fuzzer's data area
    (at ``base``: the driver's, in the board's RAM), ADMA a descriptor table
    for it at the area's start (:func:`adma_table`, or ``descs``' own,
    :func:`descriptor_table`, their addresses absolute with ``abs``).  DMA
    that points anywhere (issue #34): ``sdma_addr`` is the SDMA System
    Address itself, ``table_addr`` the ADMA System Address itself (no table
    written: the engine reads whatever is there)."""
    _index, read, multi = next(c for c in start_commands(op) if c[0] == op["index"])
    dma = op["mode"] != "pio"
    if op["mode"] == "sdma":
        addr = op.get("sdma_addr")
        t.write(H.SDMASYSAD.offset, 4, base + 0x10000 if addr is None else addr & 0xFFFFFFFF)
    elif dma and op.get("table_addr") is not None:
        t.write(H.ADMASYSADDR.offset, 4, op["table_addr"] & 0xFFFFFFFF)
        t.write(H.ADMASYSADDR.offset + 4, 4, 0)
    elif dma and op.get("descs") and op["mode"] in ("adma1", "adma2", "adma64"):
        t.mem_write(base, descriptor_table(op["mode"], op["descs"], 0 if op.get("abs")
                                           else base))
        t.write(H.ADMASYSADDR.offset, 4, base)
        t.write(H.ADMASYSADDR.offset + 4, 4, 0)
    elif dma:
        t.mem_write(base, adma_table(op["mode"], op["bs"] * op["count"], base,
                                     link=bool(op.get("link"))))
        t.write(H.ADMASYSADDR.offset, 4, base)
        t.write(H.ADMASYSADDR.offset + 4, 4, 0)
    if dma:
        host = t.read(H.HOSTCTL.offset, 1)
        t.write(H.HOSTCTL.offset, 1, (host & ~H.HOSTCTL_DMA_MASK) | _START_DMASEL[op["mode"]])
    t.write(H.BLKSIZE.offset, 2, op["bs"] | op["boundary"] << H.BLKSIZE_BOUNDARY_SHIFT)
    t.write(H.BLKCNT.offset, 2, op["count"])
    t.write(H.ARGUMENT.offset, 4, (op["block"] * 512 + op["offset"]) & 0xFFFFFFFF)
    trnmod = ((H.TRNMOD_READ if read else 0) | (H.TRNMOD_MULTI if multi else 0)
              | (H.TRNMOD_BLKCNT_EN if op["blkcnt_en"] else 0)
              | (H.TRNMOD_ACMD12 if op["auto12"] else 0)
              | (H.TRNMOD_DMA if dma else 0))
    t.write(H.TRNMOD.offset, 2, trnmod)
    t.write(H.CMDREG.offset, 2, H.cmdreg(op["index"], H.RSP_48, crc=True, idx=True,
                                         data=True))


def start_commands(op: Op) -> tuple[tuple[int, bool, bool], ...]:
    """The commands ``op`` (a ``start``) may issue: an ACMD when ``app``."""
    return START_APP_COMMANDS if op.get("app") else START_COMMANDS


def descriptor_table(mode: str, descs: list[list[int]], base: int = DMA_BASE) -> bytes:
    """An ADMA table of a ``start`` with ``descs`` (``[offset from base,
    length, attribute]`` each, SDHC 1.13.4), ADMA2 32- or 64-bit (``mode``);
    ADMA1 (SDHC 2.00 1.13.3): a Set descriptor with the length, then the
    descriptor with the 4 KiB aligned address, for each."""
    if mode == "adma1":
        return b"".join(H.adma1_desc(n, H.ADMA_VALID | H.ADMA_ACT_SET)
                        + H.adma1_desc((base + a) & 0xFFFFF000, attr)
                        for a, n, attr in descs)
    pack = H.adma2_desc64 if mode == "adma64" else H.adma2_desc32
    return b"".join(pack((base + a) & 0xFFFFFFFF, n & 0xFFFF, attr & 0xFF)
                    for a, n, attr in descs)


def adma_table(mode: str, length: int, base: int = DMA_BASE, *, link: bool = False) -> bytes:
    """The descriptor table of a ``start`` in ADMA ``mode`` (SDHC 1.13):
    one valid Tran-End descriptor for ``length`` bytes at the data area
    (0: 65536); ADMA1's after a Set descriptor with the length, its
    address 4 KiB aligned (SDHC 2.00 1.13.3).  ``link`` (the op's key): one
    valid Link descriptor to the table itself instead, a transfer that
    moves nothing until the guest rewrites the table (1.13.4 Link)."""
    if link:
        attr = H.ADMA_VALID | H.ADMA_ACT_LINK
        return {"adma1": H.adma1_desc(base, attr), "adma64": H.adma2_desc64(base, 0, attr)
                }.get(mode, H.adma2_desc32(base, 0, attr))
    data, tran = base + 0x10000, H.ADMA_VALID | H.ADMA_END | H.ADMA_ACT_TRAN
    if mode == "adma1":
        return (H.adma1_desc(length, H.ADMA_VALID | H.ADMA_ACT_SET)
                + H.adma1_desc(data, tran))
    if mode == "adma64":
        return H.adma2_desc64(data, length, tran)
    return H.adma2_desc32(data, length, tran)


def program_csd(d: HostDriver, op: Op) -> None:
    """What a guest does to write-protect a card or mark it a copy (PLS
    4.3.3 CMD27, 5.3): CMD7 to stand-by, CMD9 for the CSD, CMD7 back, then
    CMD27 with that CSD, ``set`` and ``clear`` applied to its byte 14, byte
    ``flip`` inverted when given, and the CRC7 of the first 15 bytes."""
    d.deselect()
    r = d.send_csd()
    d.select()
    if r.error:
        return
    csd = bytearray(r.r2.to_bytes(16, "big"))
    csd[14] = (csd[14] | op["set"]) & ~op["clear"] & 0xFF
    if op.get("flip") is not None:
        csd[op["flip"] % 15] ^= 0xFF
    csd[15] = S.crc7(bytes(csd[:15])) << 1 | 1
    d.cmd(_PROGRAM_CSD, 0, data=Transfer(read=False, block_size=16, block_count=1,
                                     mode=Mode.PIO, data=bytes(csd)))


def lock(d: HostDriver, op: Op) -> None:
    """CMD16 with the structure's length, CMD42 with the lock card data
    structure (PLS 4.3.7: flags, PWD_LEN, PWD; the flags byte alone when
    ``bare``), padded to a 512-byte block when ``pad``, CMD16 back."""
    flags = op["flags"] & 0xFF
    structure = bytes([flags]) if op.get("bare") else d.lock_block(
        flags, bytes.fromhex(op["pwd"]), pwd_len=op["pwd_len"])
    if not op.get("pad"):
        d.lock_unlock(structure)
        return
    pre = d.cmd(SET_BLOCKLEN, len(structure))
    if not pre.error:
        d.lock_unlock(structure.ljust(512, b"\0"), set_blocklen=False)
    d.cmd(SET_BLOCKLEN, d.card.block_len)


def set_medium(t: Target, inserted: bool) -> None:
    """Insert or eject the card's medium on ``t``: on both sides of a
    lockstep target (it has ``model`` and ``qemu``), else on ``t`` itself;
    a side without media changes (a recording) is left as it is."""
    inner: Any = t
    sides = [inner.model, inner.qemu] if hasattr(t, "model") and hasattr(t, "qemu") else [t]
    for side in sides:
        change = getattr(side, "set_card_inserted", None)
        if callable(change):
            change(inserted)


#: What a guest can read of the controller without changing it (every
#: register but BDATA, whose read moves data, and the read-only capability
#: words), read after an explored operation: the lockstep compares each.
PROBED = (H.SDMASYSAD, H.BLKSIZE, H.BLKCNT, H.ARGUMENT, H.TRNMOD, H.CMDREG, H.RSPREG0,
          H.RSPREG1, H.RSPREG2, H.RSPREG3, H.PRNSTS, H.HOSTCTL, H.PWRCON, H.BLKGAP, H.WAKCON,
          H.CLKCON, H.TIMEOUTCON, H.SWRST, H.NORINTSTS, H.ERRINTSTS, H.NORINTSTSEN,
          H.ERRINTSTSEN, H.NORINTSIGEN, H.ERRINTSIGEN, H.ACMD12ERRSTS, H.HOSTCTL2, H.ADMAERR,
          H.ADMASYSADDR, H.SLOT_INT_STATUS)


def probe(d: HostDriver, t: Target, *, status: bool = False, written: bool = False) -> None:
    """Read what the last operation may have changed and the driver did not
    read itself: every side-effect-free controller register (issue #19 item
    3), the DMA arena where the target compares it, with ``status`` the
    card's status through CMD13 (PLS 4.10.1; the caller asks only where the
    card is addressed and the command line free, so the probe is itself a
    well-formed command), and with ``written`` the card's count of blocks
    written by the last write command through ACMD22 (PLS 4.3.14; asked
    where that count changed and the card is in the transfer state)."""
    for reg in PROBED:
        if reg.width == 8:
            t.read(reg.offset, 4)
            t.read(reg.offset + 4, 4)
        else:
            t.read(reg.offset, reg.width)
    watched = getattr(t, "compare_watched", None)
    if callable(watched):
        watched()
    if status:
        try:
            d.send_status()
        except DriverError:
            pass
    if written:
        try:
            d.send_num_wr_blocks()
        except DriverError:
            pass


def _rw(d: HostDriver, op: Op) -> None:
    bs = op.get("bs") or d.card.block_len or 512
    count = max(1, op["count"])
    # Within the driver's data area; narrow PIO accesses cost a step per byte.
    limit = 0x20000 if op.get("mode") != "pio" else 0x800 * op.get("pio_access", 4)
    if bs * count > limit:
        count = max(1, limit // bs)
    if op["op"] == "adma":
        base = d.dma_base
        descs = [Adma2Desc((base + a) & 0xFFFFFFFF, n, attr) for a, n, attr in op["descs"]]
        opts = AdmaOptions(descriptors=descs, segments=[(base + 0x10000, bs * count)])
        if op.get("width64"):
            d.wr(H.HOSTCTL, (d.rd(H.HOSTCTL) & ~H.HOSTCTL_DMA_MASK) | H.HOSTCTL_DMA_ADMA2_64)
        tr = _transfer(op["read"], bs, count, "adma2", adma=opts)
        index = (17 if count == 1 else 18) if op["read"] else (24 if count == 1 else 25)
        d.cmd(index, d.address(op["block"], bs), data=tr)
        return
    buffer = d.data_area + op["skew"] if op["skew"] else None
    adma = AdmaOptions(max_segment=op["max_segment"])
    common: dict[str, Any] = dict(mode=Mode(op["mode"]), block_size=bs, stop=op["stop"],
                                  buffer=buffer, pio_access=op["pio_access"],
                                  sdma_boundary=op["boundary"], adma=adma)
    block = op["block"] & 0xFFFFFFFF
    if op["read"]:
        d.read_blocks(block, count, **common)
    else:
        data = bytes((block * 13 + i * 5) & 0xFF for i in range(bs * count))
        d.write_blocks(block, data, **common)
