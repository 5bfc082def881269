"""Shared helpers for the SDHCI model tests: a scripted stub card, a model
target with it, and a few register-level driver steps written from the SD
Host Controller Simplified Specification 3.00 (not from the model)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from harness.hwdefs import sdhci as H
from harness.machine import Machine, PropValue
from harness.model.deviations import Strictness
from harness.model.target import ModelTarget
from harness.profile import NEWEST, BuildProfile

HAVE_SDCARD = importlib.util.find_spec("harness.model.sdcard") is not None

IDLE, TRAN, SENDING, RECEIVING = "idle", "tran", "sending", "receiving"


class _NoDeviations:
    """A stub card consults no deviation list."""

    consulted: set[str] = set()


class StubCard:
    """A byte-addressed card: CMD17/18 read and CMD24/25 write ``image`` from
    the argument's byte address; CMD12 stops; CMD13 reports status; any other
    command gets no response (a timeout at the controller)."""

    def __init__(self, size: int = 1 << 20, readonly: bool = False) -> None:
        self.image = bytearray((bytes(range(251)) * (size // 251 + 1))[:size])
        self.inserted = True
        self.readonly = readonly
        self.state = TRAN
        self.pos = 0
        self.single_left = 0
        self.multi = False
        self.commands: list[tuple[int, int]] = []
        self.blocklen = 512
        self.fatal: str | None = None
        self.fatal_key: str | None = None
        self.dev = _NoDeviations()
        self.voltages: list[int] = []

    def reset(self) -> None:
        self.state = TRAN
        self.pos = 0

    @staticmethod
    def _r1(status: int = 0x900) -> bytes:
        return status.to_bytes(4, "big")

    def do_command(self, cmd: int, arg: int) -> bytes:
        if not self.inserted:
            return b""
        self.commands.append((cmd, arg))
        if cmd == 17 or cmd == 18:
            self.state, self.pos, self.multi = SENDING, arg, cmd == 18
            self.single_left = self.blocklen
            return self._r1()
        if cmd == 24 or cmd == 25:
            self.state, self.pos, self.multi = RECEIVING, arg, cmd == 25
            self.single_left = self.blocklen
            return self._r1()
        if cmd == 12:
            self.state = TRAN
            return self._r1()
        if cmd == 13:
            return self._r1()
        if cmd == 16:
            self.blocklen = arg
            return self._r1()
        if cmd == 2 or cmd == 9:
            return bytes(range(1, 17))
        return b""

    def data_ready(self) -> bool:
        return self.state == SENDING

    def set_voltage(self, millivolts: int) -> None:
        self.voltages.append(millivolts)

    @property
    def dat_lines(self) -> int:
        return 0xF

    @property
    def cmd_line(self) -> bool:
        return True

    def receive_ready(self) -> bool:
        return self.state == RECEIVING

    def read_data(self, length: int) -> bytes:
        if self.state != SENDING:
            return bytes(length)
        n = length if self.multi else min(length, self.single_left)
        size = len(self.image)
        start = self.pos % size
        if start + n <= size:
            out = bytes(self.image[start:start + n])
        else:
            out = bytes(((self.image[start:] + self.image) * (1 + n // size))[:n])
        self.pos += n
        if not self.multi:
            self.single_left -= n
            if self.single_left == 0:
                self.state = TRAN
        return out + bytes(length - n)

    def write_data(self, data: bytes) -> None:
        if self.state != RECEIVING:
            return
        n = len(data) if self.multi else min(len(data), self.single_left)
        if not self.readonly:
            for i in range(n):
                self.image[(self.pos + i) % len(self.image)] = data[i]
        self.pos += n
        if not self.multi:
            self.single_left -= n
            if self.single_left == 0:
                self.state = TRAN

    def image_read(self, offset: int, length: int) -> bytes:
        return bytes(self.image[offset:offset + length])


def stub_target(*, card: StubCard | None = None, profile: BuildProfile | None = None,
                strict: Strictness = False, sdhci: Mapping[str, PropValue] | None = None
                ) -> tuple[ModelTarget, StubCard]:
    """A model target with a stub card; ``sdhci`` are sdhci-pci properties
    by QEMU name."""
    card = card or StubCard()
    t = ModelTarget(Machine(sdhci=sdhci or {}), card=card, profile=profile or NEWEST,
                    strict=strict)
    return t, card


ALL_NIS = 0x01FF
ALL_EIS = 0x03FF


def power_up(t: ModelTarget, *, sig: bool = True) -> None:
    """Bus power 3.3V, internal and SD clock on, all status (and signal)
    enables set (SD Host Controller Spec 3.00, 3.2-3.3)."""
    t.write(H.PWRCON.offset, 1, H.PWRCON_VOLT_33 | H.PWRCON_POWER_ON)
    t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN)
    t.write(H.CLKCON.offset, 2, H.CLKCON_INTCLK_EN | H.CLKCON_SDCLK_EN)
    t.write(H.NORINTSTSEN.offset, 4, ALL_NIS | ALL_EIS << 16)
    if sig:
        t.write(H.NORINTSIGEN.offset, 4, ALL_NIS | ALL_EIS << 16)


def clear_status(t: ModelTarget) -> None:
    t.write(H.NORINTSTS.offset, 4, 0xFFFFFFFF)


def nis(t: ModelTarget) -> int:
    return t.read(H.NORINTSTS.offset, 2)


def eis(t: ModelTarget) -> int:
    return t.read(H.ERRINTSTS.offset, 2)


def prnsts(t: ModelTarget) -> int:
    return t.read(H.PRNSTS.offset, 4)


def command(t: ModelTarget, index: int, arg: int = 0, rsp: int = H.RSP_48, *,
            data: bool = False, trnmod: int | None = None) -> None:
    """ARGUMENT, then TRNMOD+CMDREG as one 32-bit write (issues the command)."""
    t.write(H.ARGUMENT.offset, 4, arg)
    value = H.cmdreg(index, rsp, crc=rsp != H.RSP_NONE, idx=rsp == H.RSP_48, data=data) << 16
    t.write(H.TRNMOD.offset, 4, value | (trnmod or 0))


def setup_blocks(t: ModelTarget, block_size: int, count: int, boundary: int = 4096) -> None:
    t.write(H.BLKSIZE.offset, 4, H.blksize_value(block_size, boundary) | count << 16)


def pio_read(t: ModelTarget, block_size: int, count: int, addr: int, *,
             width: int = 4) -> bytes:
    """Read ``count`` blocks through the Buffer Data Port (3.7.2)."""
    setup_blocks(t, block_size, count)
    multi = count > 1
    mode = H.TRNMOD_READ | H.TRNMOD_BLKCNT_EN | (H.TRNMOD_MULTI if multi else 0)
    if multi:
        mode |= H.TRNMOD_ACMD12
    command(t, 18 if multi else 17, addr, data=True, trnmod=mode)
    out = bytearray()
    for _ in range(count):
        assert nis(t) & H.NIS_RBUFRDY
        t.write(H.NORINTSTS.offset, 2, H.NIS_RBUFRDY)
        got = 0
        while got < block_size:
            n = _chunk(got, block_size - got, width)
            v = t.read(H.BDATA.offset + (got & 3), n)
            out += v.to_bytes(n, "little")
            got += n
    assert nis(t) & H.NIS_TRNSCMPL
    return bytes(out)


def _chunk(done: int, remaining: int, width: int) -> int:
    """Access size for the next Buffer Data Port access: at most ``width``,
    within the remaining bytes, not past the port's 4-byte window."""
    n = min(width, remaining, 4 - (done & 3))
    while n not in (1, 2, 4):
        n -= 1
    return n


def pio_write(t: ModelTarget, data: bytes, block_size: int, addr: int, *,
              width: int = 4) -> None:
    """Write ``data`` (whole blocks) through the Buffer Data Port (3.7.1)."""
    count = len(data) // block_size
    setup_blocks(t, block_size, count)
    multi = count > 1
    mode = H.TRNMOD_BLKCNT_EN | (H.TRNMOD_MULTI | H.TRNMOD_ACMD12 if multi else 0)
    command(t, 25 if multi else 24, addr, data=True, trnmod=mode)
    pos = 0
    for _ in range(count):
        assert nis(t) & H.NIS_WBUFRDY
        t.write(H.NORINTSTS.offset, 2, H.NIS_WBUFRDY)
        got = 0
        while got < block_size:
            n = _chunk(got, block_size - got, width)
            t.write(H.BDATA.offset + (got & 3), n,
                    int.from_bytes(data[pos:pos + n], "little"))
            pos += n
            got += n
    assert nis(t) & H.NIS_TRNSCMPL
