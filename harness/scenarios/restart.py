"""A transfer that starts without a command after one that stopped part-way.

The shape of CVE-2021-3409: a transfer ends before its last block (an ADMA
Length Mismatch, SDHC 2.2.30; a data error, an ADMA data access that fails,
2.2.18; Stop At Block Gap, 2.2.14; a DAT line reset, 2.2.17), the guest
changes Block Size and Block Count (2.2.2, 2.2.3: smaller, the same,
larger), and data moves again with no command issued: a write of SDMA
System Address's top byte (2.2.1: QEMU starts an SDMA transfer whenever
Block Count and Block Size are non-zero and DMA Select is SDMA, ledger
``sdhci.sdma-sysad-starts-transfer``) or a Continue Request after the gap
stop (2.2.14).  What carries over is the controller's buffer position:
QEMU sets it to 0 when Block Size changes, on a DAT line reset and after a
failed ADMA data access, and keeps it otherwise (an ADMA Length Mismatch
leaves a partial block in the buffer), so a restart with the same size
goes on from there.  Every register after each step, the DMA arena with its
guard zones and the card image are compared by the lockstep.

The inputs are operation sequences of :mod:`harness.driver.ops`, replayed
by ``sdqtest explore`` as table inputs of its ``restart`` kind
(:mod:`harness.explore.restart`: the read ones, which its corpus keeps and
the explore group replays) and here as scenarios of group ``restart`` (the
write ones, one per way a transfer ends).
"""

from __future__ import annotations

from harness.driver.host import HostDriver
from harness.driver.ops import DMA_BASE, Op, apply
from harness.hwdefs import sdhci as H
from harness.scenarios.registry import Context, Scenario, add
from harness.target import Target

GROUP = "restart"
#: How the first transfer ends part-way.
ENDS = ("mismatch", "error", "gap", "dat-reset")
#: How each of :data:`ENDS` stops the first transfer (SDHC sections).
_ENDED = {"mismatch": "an ADMA Length Mismatch (2.2.30)", "error": "a data error (2.2.18)",
          "gap": "Stop At Block Gap (2.2.14)", "dat-reset": "a DAT line reset (2.2.17)"}
#: The first transfer's Block Size: half the card's block, so that a larger
#: one is still within sdhci-pci's buffer (512 bytes: Capabilities' Max Block
#: Length 0, SDHC 2.2.25; QEMU caps Block Size there).
FIRST_BS = 256
#: The Block Size written before the restart.
RESIZES = {"smaller": 128, "same": 256, "larger": 512}
#: Where the restarted SDMA transfer writes or reads: the data area of a
#: ``start`` (``DMA_BASE + 0x10000``), inside the DMA arena the probes compare
#: with its guard zones (a page after it: 1024 bytes moved at most here).
SDMA_TARGET = DMA_BASE + 0x10000
#: The first byte past the explore machine's RAM (128 MiB): a failing access.
_HOLE = 128 << 20

_SETUP: Op = {"op": "setup", "freq": 400_000}
_INIT: Op = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}
_TICK: Op = {"op": "clock", "ns": 1_000_000}
_PROBE: Op = {"op": "probe", "status": False}
_TRAN = H.ADMA_VALID | H.ADMA_ACT_TRAN


def _start(index: int, mode: str, **more: object) -> Op:
    return {"op": "start", "index": index, "bs": FIRST_BS, "count": 4, "offset": 0, "block": 6,
            "mode": mode, "auto12": False, "blkcnt_en": True, "boundary": 0, **more}


def _pio(write: bool, n: int) -> Op:
    return {"op": "pio", "write": write, "n": n, "size": 4}


def ending(end: str, write: bool) -> list[Op]:
    """A CMD18 or CMD25 of 4 blocks of :data:`FIRST_BS` bytes that ends
    ``end`` part-way."""
    index = 25 if write else 18
    half = FIRST_BS // 8   # half a block, in 4-byte port accesses
    if end == "mismatch":   # End after 200 bytes: 200 bytes in the buffer, Length Mismatch
        return [_start(index, "adma2", descs=[[0x10000, 200, _TRAN | H.ADMA_END]]), _TICK]
    if end == "error":      # one block, then a data segment past RAM: the access fails
        return [_start(index, "adma2", abs=True,
                       descs=[[DMA_BASE + 0x10000, FIRST_BS, _TRAN],
                              [_HOLE, 200, _TRAN | H.ADMA_END]]), _TICK]
    if end == "gap":        # Stop At Block Gap half-way through the first block: a read
        # stops after the block read ahead (SDHC 2.2.14; QEMU reads one more), a write
        # after the block the guest finishes
        return [_start(index, "pio"), _pio(write, half),
                {"op": "blkgap", "value": H.BLKGAP_STOP},
                _pio(write, half if write else 3 * half), _TICK]
    if end == "dat-reset":  # half a block through the port, then the DAT line reset
        return [_start(index, "pio"), _pio(write, half), {"op": "reset", "what": H.SWRST_DAT}]
    raise ValueError(f"unknown end {end!r}")


def resize(size: str) -> Op:
    """Block Size ``size`` (:data:`RESIZES`) and Block Count 2, one write."""
    return {"op": "write", "off": H.BLKSIZE.offset, "size": 4, "value": 2 << 16 | RESIZES[size]}


#: DMA Select SDMA (4-bit bus kept), then SDMA System Address in one write.
SYSAD_RESTART: list[Op] = [
    {"op": "write", "off": H.HOSTCTL.offset, "size": 1,
     "value": H.HOSTCTL_WIDTH4 | H.HOSTCTL_DMA_SDMA},
    {"op": "write", "off": H.SDMASYSAD.offset, "size": 4, "value": SDMA_TARGET}]
#: Both lines reset one at a time (QEMU resets only for a single bit, ledger
#: ``sdhci.swrst-single-bit``), every status cleared (2.2.17-18: write 1 to
#: clear), then CMD12 takes the card back to the transfer state.
CLEAR: list[Op] = [{"op": "reset", "what": H.SWRST_DAT}, {"op": "reset", "what": H.SWRST_CMD},
                   {"op": "write", "off": H.NORINTSTS.offset, "size": 4, "value": 0xFFFF_FFFF},
                   {"op": "cmd", "index": 12, "arg": 0, "app": False}]


def _next_transfer() -> list[Op]:
    rw: Op = {"op": "rw", "read": False, "block": 9, "count": 2, "bs": 512, "mode": "pio",
              "stop": "auto", "pio_access": 4, "skew": 0, "boundary": 4096,
              "max_segment": 65536}
    return [rw, dict(rw, read=True)]


def inputs(end: str, write: bool) -> list[Op]:
    """``end`` then each resize and an SDMA System Address restart (and,
    after a gap stop, each resize and a Continue Request with the rest
    through the data port), each probed and cleared; then the next
    transfer, written and read back."""
    ops: list[Op] = [_SETUP, _INIT]
    for size in RESIZES:
        ops += [*ending(end, write), resize(size), *SYSAD_RESTART, _TICK, _PROBE, *CLEAR]
    if end == "gap":
        for size, bs in RESIZES.items():
            ops += [*ending(end, write), resize(size), {"op": "blkgap",
                                                         "value": H.BLKGAP_CONTINUE},
                    _TICK, _pio(write, 2 * bs // 4), _TICK, _PROBE, *CLEAR]
    return [*ops, *_next_transfer()]


def all_inputs() -> list[list[Op]]:
    return [inputs(end, write) for end in ENDS for write in (False, True)]


def _scenario(end: str, write: bool) -> Scenario:
    ops = inputs(end, write)

    def fn(target: Target, ctx: Context) -> None:
        d = HostDriver(target, timeout_steps=16)
        for op in ops:
            apply(d, target, op)

    way = "write" if write else "read"
    doc = (f"A {way} stopped part-way by {_ENDED[end]}, then Block Size made smaller, the "
           "same and larger and the transfer restarted with no command (SDMA System Address"
           f"{', Continue Request' if end == 'gap' else ''}): the shape of CVE-2021-3409.")
    return Scenario(f"restart-{end}-{way}", GROUP, fn, doc, needs_clock=True,
                    params={"absolute_dma": True})


# the read inputs are the explore kind's (its corpus keeps them, one per
# class): the group runs the writes, which the search cannot keep (its CMD13
# probe), so that the default check runs each input once
for _end in ENDS:
    add(_scenario(_end, True))
