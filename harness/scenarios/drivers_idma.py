"""The Allwinner SMHC's internal DMA in a recording: descriptor chains rebuilt.

Linux's sunxi-mmc keeps one descriptor array in coherent memory, writes its
address to SD_DLBA when it (re)initialises the host, and before each data
command fills one descriptor per scatter-list entry
(``drivers/mmc/host/sunxi-mmc.c``, ``sunxi_mmc_init_idma_des``).  The trace
(``allwinner_sdhost_process_desc``) shows each descriptor the controller
processed: its address and its buffer size (QEMU reports the variant's largest
for a size field of 0); the buffers' addresses and the descriptors' flags are
not in it.  The conversion therefore

* makes an SD_DLBA write ``w4 0x0084 @table``: the replay's descriptor area;
* puts before each command issued with DATA_TRANS an ``idma`` object: the
  buffers' sizes in the order processed, each buffer placed page by page in the
  driver's DMA arena (``[arena offset, size]``), and for a write the data it carried
  (from the card image after the boot, as for SDHCI's ADMA2);

and the replay writes the descriptors as Linux's ``sunxi_mmc_init_idma_des``
does (:func:`descriptor_words`): OWN, CH and DIC on each, FD on the first, LD and
ER instead of DIC on the last, the size field 0 for a buffer of the largest size,
the next descriptor's address in DES3 (0 on the last).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness import images
from harness.hwdefs import allwinner as A
from harness.scenarios.drivers_convert import PAGE, ConvertContext, encode_data
from harness.scenarios.drivers_hosts import SUNXI
from harness.scenarios.drivers_pio import write_op
from harness.scenarios.drivers_trace import Event, IdmaDescriptor, TraceAccess, TraceCommand

_DES = A.DES0.field
OWN, CH, DIC, FD, LD, ER = (_DES(n).mask for n in ("OWN", "CH", "DIC", "FD", "LD", "ER"))
DATA_TRANS = A.SD_CMDR.mask("DATA_TRANS")
#: Linux's sun7i-a20 configuration (the H3's compatible): 16 size bits.
MAX_LEN = 1 << 16


def descriptor_words(sizes: Sequence[int], desc: int, bufs: Sequence[int]) -> bytes:
    """The chain of ``sunxi_mmc_init_idma_des`` at ``desc``, buffers at ``bufs``."""
    out = b""
    for i, (n, buf) in enumerate(zip(sizes, bufs, strict=True)):
        last = i == len(sizes) - 1
        des0 = OWN | CH | (FD if i == 0 else 0) | ((LD | ER) if last else DIC)
        nxt = 0 if last else desc + (i + 1) * A.DESC_SIZE
        words = (des0, 0 if n == MAX_LEN else n, buf, nxt)
        out += b"".join(w.to_bytes(4, "little") for w in words)
    return out


def _descriptors(events: Sequence[Event], i: int) -> list[IdmaDescriptor]:
    """The descriptors processed for the command issued at ``i``: until the next issue."""
    out: list[IdmaDescriptor] = []
    for ev in events[i + 2:]:
        if isinstance(ev, TraceCommand):
            break
        if isinstance(ev, IdmaDescriptor):
            out.append(ev)
    return out


def idma_op(events: Sequence[Event], i: int, ctx: ConvertContext) -> dict[str, Any]:
    """The ``idma`` object of the data command issued at ``i``."""
    issue = events[i]
    assert isinstance(issue, TraceAccess)
    cmd = issue.value & 0x3F
    descs = _descriptors(events, i)
    placed: list[list[int]] = []
    cursor = 0
    for d in descs:
        placed.append([cursor, d.size])
        cursor = (cursor + d.size + PAGE - 1) & ~(PAGE - 1)
    op: dict[str, Any] = {"idma": placed, "cmd": cmd}
    if issue.value & A.SD_CMDR.mask("TRANS_DIR"):
        nxt = events[i + 1]
        arg = nxt.arg if isinstance(nxt, TraceCommand) else 0
        first = arg // images.BLOCK if ctx.byte_addressed else arg
        total = sum(d.size for d in descs)
        data = ctx.image[first * images.BLOCK:first * images.BLOCK + total]
        for b in range(first, first + total // images.BLOCK):
            ctx.written[b] = ctx.written.get(b, 0) + 1
        op["block"] = first
        op["data"] = encode_data(data, first, ctx.recipe, ctx.fills)
    return op


def special(events: Sequence[Event], i: int, a: TraceAccess,
            ctx: ConvertContext) -> list[Any] | None:
    """The Allwinner's writes that are no plain write (see the module docstring)."""
    if a.offset == A.SD_DLBA.offset:
        return [f"w4 {a.offset:#06x} @table  # SD_DLBA"]
    cmd = SUNXI.command(a.offset, a.size, a.value)
    if cmd is None or not a.value & DATA_TRANS or not _descriptors(events, i):
        return None  # no DMA: PIO through SD_FIFO (U-Boot's)
    return [idma_op(events, i, ctx), *write_op(events, i, [a], ctx, SUNXI)]
