"""Migration points: the machine moved to another QEMU process mid-run.

Each scenario has one migration point (``ctx.migrate_point``), named by
``params["point"]``, at a place where the device holds state a guest relies
on: idle, card selected, half-way through a PIO block, an SDMA transfer
stopped at a buffer boundary, an ADMA2 chain in progress, interrupts
pending, card locked, an erase group set before CMD38, after a CMD6 switch,
UHS mode selected and tuning done.
What happens afterwards must be what would have happened without the
migration: the model, which does not migrate, is the oracle.  Outside a
migration run (``sdqtest check`` of another group) the point does nothing.

A point inside a transfer the host driver runs in one call is placed by
:class:`MigrateOn`, a Target that forwards every operation and migrates
when a given register access has happened (or is about to).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.driver import host as D
from harness.driver.results import Mode
from harness.hwdefs import sdhci as H
from harness.scenarios.common import expect_pattern, ready, test_data
from harness.scenarios.registry import Context, has_property, scenario
from harness.target import Target

GROUP = "migration"
#: Every migration point, in the order the scenarios are registered.
POINTS: list[str] = []

#: ``when(op, args)``: true for the register access the point is tied to.
Trigger = Callable[[str, tuple[Any, ...]], bool]


class MigrateOn:
    """A Target forwarding to ``inner`` that calls ``ctx.migrate_point(label)``
    once: right after the ``nth`` access ``when`` accepts once :attr:`armed`
    (or right before it, ``before``).  Other attributes (``compare_memory``,
    ...) are the inner target's."""

    def __init__(self, inner: Target, ctx: Context, label: str, when: Trigger,
                 nth: int = 1, *, before: bool = False) -> None:
        self.inner, self.ctx, self.label = inner, ctx, label
        self.when, self.nth, self.before = when, nth, before
        self.name = inner.name
        self.seen = 0
        self.done = False
        self.armed = False

    def _hit(self, op: str, args: tuple[Any, ...]) -> bool:
        if self.done or not self.armed or not self.when(op, args):
            return False
        self.seen += 1
        if self.seen == self.nth:
            self.done = True
            return True
        return False

    def _run(self, op: str, *args: Any) -> Any:
        hit = self._hit(op, args)
        if hit and self.before:
            self.ctx.migrate_point(self.label)
        out = getattr(self.inner, op)(*args)
        if hit and not self.before:
            self.ctx.migrate_point(self.label)
        return out

    def read(self, offset: int, size: int) -> int:
        return int(self._run("read", offset, size))

    def write(self, offset: int, size: int, value: int) -> None:
        self._run("write", offset, size, value)

    def mem_read(self, addr: int, length: int) -> bytes:
        return bytes(self.inner.mem_read(addr, length))

    def mem_write(self, addr: int, data: bytes) -> None:
        self.inner.mem_write(addr, data)

    def clock_step(self, ns: int | None = None) -> int:
        return self.inner.clock_step(ns)

    def irq_level(self) -> bool:
        return self.inner.irq_level()

    def image_read(self, offset: int, length: int) -> bytes:
        return self.inner.image_read(offset, length)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _reg(op: str, offset: int) -> Trigger:
    return lambda o, args: o == op and args[0] == offset


def _point(name: str, **kw: Any) -> Callable[[Callable[[Target, Context], None]],
                                             Callable[[Target, Context], None]]:
    POINTS.append(name)
    return scenario(f"migrate-{name}", GROUP, needs_clock=True, params={"point": name},
                    migrates=True, **kw)


@_point("idle")
def _idle(t: Target, ctx: Context) -> None:
    """Controller set up, card powered and idle (before CMD0): migrate, then
    initialise the card and read."""
    d = D.HostDriver(t)
    d.setup()
    ctx.migrate_point("idle")
    d.init_card(bus_width=4)
    r = d.read_blocks(2, 2)
    expect_pattern(ctx, r.data, 2, "read after migrating an idle card")


@_point("card-selected")
def _selected(t: Target, ctx: Context) -> None:
    """Card initialised, selected, 4-bit bus: migrate, then status, CSD
    (after deselect) and a read."""
    d = ready(t)
    ctx.migrate_point("card-selected")
    d.send_status()
    r = d.read_blocks(7, 1)
    expect_pattern(ctx, r.data, 7, "read after migrating a selected card")
    d.deselect()
    d.send_csd()
    d.select()


@_point("mid-pio-read")
def _mid_pio_read(t: Target, ctx: Context) -> None:
    """A 4-block PIO read, migrated with the second block half read from the
    data port (the buffer holds the rest of it)."""
    m = MigrateOn(t, ctx, "mid-pio-read", _reg("read", H.BDATA.offset), nth=128 + 64)
    d = ready(m)
    m.armed = True
    r = d.read_blocks(11, 4)
    expect_pattern(ctx, r.data, 11, "PIO read across the migration")
    ctx.expect(m.done, "the PIO read reached its migration point")


@_point("mid-pio-write")
def _mid_pio_write(t: Target, ctx: Context) -> None:
    """A 4-block PIO write, migrated with the second block half written to
    the data port; read back after."""
    m = MigrateOn(t, ctx, "mid-pio-write", _reg("write", H.BDATA.offset), nth=128 + 64)
    d = ready(m)
    data = test_data(4 * 512, 21)
    m.armed = True
    d.write_blocks(30, data)
    back = d.read_blocks(30, 4)
    ctx.expect(back.data == data, "data written across the migration reads back")
    ctx.expect(m.done, "the PIO write reached its migration point")
    t.image_read(30 * 512, 4 * 512)


@_point("sdma-boundary")
def _sdma_boundary(t: Target, ctx: Context) -> None:
    """A 16-block SDMA read crossing 4 KiB buffer boundaries, migrated after
    the command is issued, before the driver has seen its statuses.  (QEMU
    stops an SDMA transfer at a boundary only when it starts page aligned;
    the host driver's wait for that stop times out on model and QEMU alike,
    so the point is the transfer with its DMA statuses pending.)"""
    issued = [False]

    def status_after_cmd(op: str, args: tuple[Any, ...]) -> bool:
        if op == "write" and args[0] == H.CMDREG.offset:
            issued[0] = True
        return issued[0] and op == "read" and args[0] == H.NORINTSTS.offset

    m = MigrateOn(t, ctx, "sdma-boundary", status_after_cmd, before=True)
    d = ready(m)
    m.armed = True
    buf = d.dma_base + 4096 - 512  # the first boundary after one block
    r = d.read_blocks(40, 16, mode=Mode.SDMA, buffer=buf, sdma_boundary=4096)
    expect_pattern(ctx, r.data, 40, "SDMA read across the migration")


@_point("adma2-in-progress")
def _adma2(t: Target, ctx: Context) -> None:
    """A 32-block ADMA2 read, migrated right after the command is issued
    (chain in progress, completion not yet seen by the driver)."""
    m = MigrateOn(t, ctx, "adma2-in-progress", _reg("write", H.CMDREG.offset))
    d = ready(m)
    m.armed = True
    r = d.read_blocks(64, 32, mode=Mode.ADMA2)
    expect_pattern(ctx, r.data, 64, "ADMA2 read across the migration")


@_point("irq-pending")
def _irq_pending(t: Target, ctx: Context) -> None:
    """Command Complete raised and signalled (line high), not acknowledged:
    migrate, then the driver sees and clears it."""
    m = MigrateOn(t, ctx, "irq-pending", _reg("write", H.CMDREG.offset))
    d = ready(m)
    m.armed = True
    d.send_status()
    t.irq_level()
    d.send_status()


@_point("card-locked")
def _locked(t: Target, ctx: Context) -> None:
    """Password set and card locked: migrate, then what a locked card
    refuses, unlock, read, clear the password."""
    d = ready(t)
    pw = b"mig-pw"
    d.lock_unlock(d.lock_block(D.LOCK_SET_PWD | D.LOCK_LOCK, pw))
    d.send_status()
    ctx.migrate_point("card-locked")
    d.send_status()
    d.read_blocks(0, 1)
    d.lock_unlock(d.lock_block(0, pw))
    d.read_blocks(0, 1)
    d.lock_unlock(d.lock_block(D.LOCK_CLR_PWD, pw))
    d.send_status()


@_point("erase-group-set")
def _erase(t: Target, ctx: Context) -> None:
    """CMD32 and CMD33 accepted: migrate, then CMD38 (the erase group must
    survive) and read the erased blocks back (0x00 or 0xFF is the machine
    type's compat default: erase-blocks-as-zero)."""
    d = ready(t)
    first, last = d.address(100), d.address(107)
    d.cmd(D.ERASE_WR_BLK_START, first)
    d.cmd(D.ERASE_WR_BLK_END, last)
    ctx.migrate_point("erase-group-set")
    d.cmd(D.ERASE, 0)
    d.send_status()
    d.read_blocks(99, 10)
    t.image_read(99 * 512, 10 * 512)


@_point("after-cmd6")
def _after_cmd6(t: Target, ctx: Context) -> None:
    """CMD6 switched to high speed: migrate, then query the functions again,
    read the SCR (its spec version is the machine type's compat default:
    spec_version) and the SD status."""
    d = ready(t)
    d.switch_function(1, {1: 1})
    ctx.migrate_point("after-cmd6")
    d.switch_function(0)
    d.read_scr()
    d.read_sd_status()
    d.read_blocks(3, 2)
    d.write_blocks(50, test_data(512, 5))


@_point("uhs-tuned", sdhci={"sd-spec-version": 3, "uhs": 1},
        requires=(has_property("sdhci-pci", "uhs"),))
def _uhs_tuned(t: Target, ctx: Context) -> None:
    """A v3 UHS-I controller with Host Control 2 set (UHS mode SDR25, driver
    strength, asynchronous interrupt) and tuning executed (CMD19 with
    Execute Tuning; QEMU then sets Sampling Clock Select): migrate, then
    read Host Control 2 back (SD Host Controller 2.2.24) and tune again."""
    d = ready(t)
    hostctl2 = (H.HOSTCTL2.field("UHSMODE").value(1) | H.HOSTCTL2.field("DRVSTR").value(1)
                | H.HOSTCTL2.mask("ASYNCINTEN"))
    d.wr(H.HOSTCTL2, hostctl2)
    d.wr(H.HOSTCTL2, hostctl2 | H.HOSTCTL2.mask("EXECTUNING"))
    d._read_data(D.SEND_TUNING_BLOCK, 0, 64)
    d.rd(H.HOSTCTL2)
    ctx.migrate_point("uhs-tuned")
    d.rd(H.HOSTCTL2)  # QEMU: 0 (quirk migration-loses-hostctl2)
    d._read_data(D.SEND_TUNING_BLOCK, 0, 64)
    d.send_status()
