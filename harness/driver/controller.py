"""Controller-level host driver: reset, power, clock, interrupts, commands
and the three data paths (SD Host Controller Simplified Spec 3.00, ch. 3).

Everything goes through a :class:`~harness.target.Target`, so the same code
drives the model and QEMU.  Every wait is bounded: poll = read a register,
and when the condition does not hold yet, ``clock_step`` a small amount.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.driver.adma import DMA_SELECT, AdmaPlan, plan_adma2
from harness.driver.arena import DmaArena
from harness.driver.layout import layout_for
from harness.driver.results import (
    RESPONSE_ENCODING,
    CommandResult,
    DriverTimeout,
    Mode,
    Observation,
    Transfer,
)
from harness.hwdefs import sdhci as H
from harness.hwdefs.fields import Register
from harness.hwdefs.sd import Resp
from harness.target import ClockUnavailable, Target, board_of

#: Normal interrupt statuses the driver enables by default (2.2.19): all
#: but Card Interrupt, whose status a driver cannot clear while enabled.
DEFAULT_NORMAL_STATUS = H.NORINTSTSEN.mask(
    "CMDCMPL", "TRNSCMPL", "BLKGAP", "DMAINT", "WBUFRDY", "RBUFRDY", "CARDINS", "CARDREM"
)
#: Error interrupt statuses enabled by default (2.2.20): the standard ones.
DEFAULT_ERROR_STATUS = H.ERRINTSTSEN.mask(
    "CMDTOUT", "CMDCRC", "CMDEND", "CMDIDX", "DATTOUT", "DATCRC", "DATEND", "CURLIM",
    "ACMDERR", "ADMAERR",
)
#: Error bits that concern the CMD line (2.2.18): they call for a CMD reset.
CMD_LINE_ERRORS = H.EIS_CMDTOUT | H.EIS_CMDCRC | H.EIS_CMDEND | H.EIS_CMDIDX
#: Transient normal statuses a command may leave behind.
TRANSIENT_STATUS = (
    H.NIS_CMDCMPL | H.NIS_TRNSCMPL | H.NIS_BLKGAP | H.NIS_DMAINT | H.NIS_WBUFRDY | H.NIS_RBUFRDY
)
#: Registers a snapshot reads (never BDATA, whose reads have side effects).
SNAPSHOT_REGISTERS: tuple[Register, ...] = (
    H.SDMASYSAD, H.BLKSIZE, H.BLKCNT, H.ARGUMENT, H.TRNMOD, H.CMDREG,
    H.RSPREG0, H.RSPREG1, H.RSPREG2, H.RSPREG3, H.PRNSTS, H.HOSTCTL, H.PWRCON,
    H.BLKGAP, H.WAKCON, H.CLKCON, H.TIMEOUTCON, H.NORINTSTS, H.ERRINTSTS,
    H.NORINTSTSEN, H.ERRINTSTSEN, H.NORINTSIGEN, H.ERRINTSIGEN, H.ACMD12ERRSTS,
    H.HOSTCTL2, H.ADMAERR,
)
#: Where the driver's DMA area starts in guest RAM: 16 MiB in, clear of
#: whatever firmware or boot ROM a machine loads at the start of RAM.
DMA_OFFSET = 0x0100_0000
_STATUS32 = H.NORINTSTS.offset  # NORINTSTS | ERRINTSTS << 16 in one 32-bit read


class Controller:
    """An SD host controller driven through ``target``.

    ``dma_base`` is guest memory the driver may use: ADMA descriptor tables
    from ``dma_base`` (64 KiB) and the default data buffer from
    ``dma_base + 0x10000``; by default :data:`DMA_OFFSET` into the guest's
    RAM (a board's RAM may start elsewhere than 0: :func:`harness.target.board_of`).
    ``timeout_steps`` bounds every wait (polls),
    ``poll_ns`` is the virtual time stepped between polls.  With ``recover``
    the driver resets the CMD/DAT lines after an error, so the next command
    starts clean (the reset is listed in ``CommandResult.recovered``).

    On a target that compares memory, the buffers and descriptor tables form
    a :class:`~harness.driver.arena.DmaArena`, compared after every data
    command, however it ended.
    """

    def __init__(
        self,
        target: Target,
        *,
        dma_base: int | None = None,
        timeout_steps: int = 2000,
        poll_ns: int = 10_000,
        recover: bool = True,
    ) -> None:
        self.target = target
        #: The board whose controller this is (None: sdhci-pci on a PC).
        self.board = board_of(target)
        #: Where the guest's RAM starts (a board's may not start at 0).
        self.ram_base = 0 if self.board is None else self.board.ram_base
        #: Where the registers a vendor layout moves are (harness.driver.layout).
        self.layout = layout_for(self.board)
        if dma_base is None:
            dma_base = DMA_OFFSET + self.ram_base
        self.dma_base = dma_base
        self.desc_area = dma_base
        self.data_area = dma_base + 0x10000
        self.timeout_steps = timeout_steps
        self.poll_ns = poll_ns
        self.recover = recover
        self.clock_available = True
        #: The Capabilities register as last read (None: not read yet).
        self.caps: int | None = None
        #: Every command result, in order.
        self.history: list[CommandResult] = []
        self.arena = DmaArena(target)

    # -- register access ---------------------------------------------------

    def rd(self, reg: Register, size: int | None = None, *, byte: int = 0) -> int:
        """Read ``reg`` (its own width unless ``size``; at most 4 bytes)."""
        n = size if size is not None else min(reg.width, 4)
        return self.target.read(reg.offset + byte, n)

    def wr(self, reg: Register, value: int, size: int | None = None, *, byte: int = 0) -> None:
        """Write ``reg`` (its own width unless ``size``; at most 4 bytes)."""
        n = size if size is not None else min(reg.width, 4)
        self.target.write(reg.offset + byte, n, value & ((1 << (8 * n)) - 1))

    def status(self) -> int:
        """NORINTSTS | ERRINTSTS << 16, in one 32-bit read."""
        return self.target.read(_STATUS32, 4)

    def clear_status(self, normal: int, error: int = 0) -> None:
        """Write 1 to clear (2.2.17, 2.2.18); ERRINT itself is read only."""
        normal &= ~H.NIS_ERRINT & 0xFFFF
        if normal:
            self.wr(H.NORINTSTS, normal)
        if error & 0xFFFF:
            self.wr(H.ERRINTSTS, error & 0xFFFF)

    def step(self, ns: int | None) -> None:
        """Advance virtual time; a target without a clock just gets re-read."""
        if not self.clock_available:
            return
        try:
            self.target.clock_step(ns)
        except ClockUnavailable:
            self.clock_available = False

    def wait(
        self,
        read: Callable[[], int],
        done: Callable[[int], bool],
        *,
        steps: int | None = None,
        step_ns: int | None = None,
    ) -> tuple[int, bool]:
        """Poll ``read`` until ``done``; ``(last value, whether done)``."""
        n = self.timeout_steps if steps is None else steps
        ns = self.poll_ns if step_ns is None else step_ns
        v = read()
        for _ in range(n):
            if done(v):
                return v, True
            self.step(ns)
            v = read()
        return v, done(v)

    def wait_status(self, stage: str, mask: int, res: CommandResult | None = None) -> Observation:
        """Wait until any NORINTSTS bit of ``mask`` or ERRINT is set."""
        want = mask | H.NIS_ERRINT
        v, ok = self.wait(self.status, lambda s: bool(s & want))
        obs = Observation(stage, v, self.target.irq_level(), ok)
        if res is not None:
            res.observations.append(obs)
            res.norintsts |= obs.norintsts
            res.errintsts |= obs.errintsts
            if not ok and res.timeout is None:
                res.timeout = stage
        return obs

    def wait_prnsts(self, mask: int, value: int | None = None) -> tuple[int, bool]:
        """Wait until PRNSTS & ``mask`` equals ``value`` (default: all set)."""
        want = mask if value is None else value
        return self.wait(lambda: self.rd(H.PRNSTS), lambda x: x & mask == want)

    def snapshot(self) -> dict[str, int]:
        """Name -> value of the side-effect-free registers, plus ``IRQ``."""
        snap = {r.name: self.rd(r) for r in SNAPSHOT_REGISTERS}
        snap["IRQ"] = int(self.target.irq_level())
        return snap

    # -- controller set-up (3.1 - 3.3) -------------------------------------

    def reset(self, what: int = H.SWRST_ALL) -> None:
        """Software reset (2.2.16): write, then wait for the bits to clear."""
        self.wr(H.SWRST, what)
        v, ok = self.wait(lambda: self.rd(H.SWRST), lambda x: not (x & what))
        if not ok:
            raise DriverTimeout(f"SWRST {what:#x} did not clear ({v:#x})",
                                snapshot=self.snapshot())

    def capabilities(self) -> int:
        """The 64-bit Capabilities register (2.2.25-26), read as two dwords."""
        lo = self.target.read(H.CAPAB.offset, 4)
        hi = self.target.read(H.CAPAB.offset + 4, 4)
        self.caps = lo | (hi << 32)
        return self.caps

    def supports(self, mode: Mode) -> bool:
        """Whether the Capabilities last read report ``mode`` (2.2.26: SDMA
        Support, ADMA2 Support); unknown (not read yet) counts as supported."""
        field = {Mode.SDMA: "SDMA", Mode.ADMA2: "ADMA2"}.get(mode)
        return field is None or self.caps is None or bool(self.caps & H.CAPAB.mask(field))

    def spec_version(self) -> int:
        """HCVER Specification Version Number: 0 = 1.00, 1 = 2.00, 2 = 3.00."""
        return H.HCVER.field("SPECVER").get(self.rd(H.HCVER))

    def power_on(self, voltage: int = H.PWRCON_VOLT_33) -> int:
        """Select the bus voltage, then set SD Bus Power (3.3); returns PWRCON."""
        self.wr(H.PWRCON, voltage)
        self.wr(H.PWRCON, voltage | H.PWRCON_POWER_ON)
        return self.rd(H.PWRCON)

    def power_off(self) -> None:
        self.wr(H.PWRCON, 0)

    def clock_divider(self, freq_hz: int) -> int:
        """SDCLK Frequency Select for at most ``freq_hz`` (2.2.14): a power of
        two divisor in v2 mode, a 10-bit divided clock in v3 mode."""
        base = H.CAPAB.field("BASECLKFREQ").get(self.capabilities()) * 1_000_000
        if base == 0 or freq_hz <= 0 or freq_hz >= base:
            return 0
        if self.spec_version() >= 2:
            lo, hi = H.CLKCON.field("SDCLKFSEL"), H.CLKCON.field("SDCLKFSEL_HI")
            n = min((1 << (lo.width + hi.width)) - 1, -(-base // (2 * freq_hz)))
            return lo.put(hi.put(0, n >> lo.width), n)
        div = 1
        while base // div > freq_hz and div < 256:
            div <<= 1
        return H.CLKCON.field("SDCLKFSEL").put(0, div // 2)

    def clock_on(self, freq_hz: int = 400_000) -> int:
        """Internal clock on, wait Internal Clock Stable, then SD clock on
        (3.2.1); returns CLKCON."""
        fsel = self.clock_divider(freq_hz)
        self.wr(H.CLKCON, fsel | H.CLKCON_INTCLK_EN)
        v, ok = self.wait(lambda: self.rd(H.CLKCON), lambda x: bool(x & H.CLKCON_INTCLK_STABLE))
        if not ok:
            raise DriverTimeout(f"internal clock not stable (CLKCON={v:#06x})",
                                snapshot=self.snapshot())
        self.wr(H.CLKCON, fsel | H.CLKCON_INTCLK_EN | H.CLKCON_SDCLK_EN)
        return self.rd(H.CLKCON)

    def clock_off(self) -> None:
        """SD clock off, then internal clock off (3.2.2)."""
        v = self.rd(H.CLKCON)
        self.wr(H.CLKCON, v & ~H.CLKCON_SDCLK_EN)
        self.wr(H.CLKCON, v & ~(H.CLKCON_SDCLK_EN | H.CLKCON_INTCLK_EN))

    def set_clock(self, freq_hz: int) -> int:
        """Change SDCLK: stop it, reprogram, restart (3.2.3)."""
        self.clock_off()
        return self.clock_on(freq_hz)

    def enable_interrupts(
        self,
        normal: int = DEFAULT_NORMAL_STATUS,
        error: int = DEFAULT_ERROR_STATUS,
        *,
        signal_normal: int = 0,
        signal_error: int = 0,
    ) -> None:
        """Status enables (2.2.19-20) and signal enables (2.2.21-22)."""
        self.wr(H.NORINTSTSEN, normal)
        self.wr(H.ERRINTSTSEN, error)
        self.wr(H.NORINTSIGEN, signal_normal)
        self.wr(H.ERRINTSIGEN, signal_error)

    def set_data_timeout(self, value: int = 0xE) -> None:
        """Data Timeout Counter Value (2.2.15)."""
        self.wr(H.TIMEOUTCON, value & 0xF)

    def set_bus_width(self, width: int) -> None:
        """Host side of the bus width: HOSTCTL Data Transfer Width (2.2.10)."""
        v = self.layout.host_control(self) & ~(H.HOSTCTL_WIDTH4 | H.HOSTCTL_WIDTH8)
        if width == 4:
            v |= H.HOSTCTL_WIDTH4
        elif width == 8:
            v |= H.HOSTCTL_WIDTH8
        elif width != 1:
            raise ValueError(f"bus width {width}")
        self.layout.set_host_control(self, v)

    def set_high_speed(self, on: bool) -> None:
        v = self.layout.host_control(self) & ~H.HOSTCTL_HISPD
        self.layout.set_host_control(self, v | (H.HOSTCTL_HISPD if on else 0))

    def select_dma(self, sel: int) -> None:
        """HOSTCTL DMA Select (2.2.10); written only when it changes."""
        v = self.layout.host_control(self)
        if v & H.HOSTCTL_DMA_MASK != sel:
            self.layout.set_host_control(self, (v & ~H.HOSTCTL_DMA_MASK) | sel)

    def setup(self, *, freq_hz: int = 400_000) -> None:
        """Reset all, enable statuses, power on at 3.3 V, start the clock."""
        self.reset(H.SWRST_ALL)
        self.enable_interrupts()
        self.set_data_timeout()
        self.power_on()
        self.clock_on(freq_hz)
        self.open_arena()

    def open_arena(self) -> None:
        """Fill the arena's first regions: the start of the descriptor area
        and of the default data buffer, with their guards."""
        if not self.arena.regions:
            self.arena.reserve(self.desc_area, 0x100)
            self.arena.reserve(self.data_area, 0x200)

    # -- commands (3.7.1) --------------------------------------------------

    def command(
        self,
        cmd: int,
        arg: int = 0,
        resp: Resp = Resp.R1,
        data: Transfer | None = None,
        *,
        cmd_type: int = H.CMD_TYPE_NORMAL,
        crc_check: bool | None = None,
        index_check: bool | None = None,
        wait_busy: bool = True,
        trnmod: int | None = None,
    ) -> CommandResult:
        """Send command ``cmd`` and run its data phase, if any.

        ``cmd_type`` is CMDREG's Command Type (abort for CMD12 during a
        transfer); ``crc_check`` / ``index_check`` override the response
        type's checks; ``trnmod`` writes TRNMOD even for a command without
        data (by default TRNMOD is written only with ``data``, 3.7.1.1 (5)).

        The sequence is 3.7.1.1 (issue) and 3.7.1.2 (completion), then 3.7.2
        for data (PIO 3.7.2.1-2, SDMA 3.7.2.3, ADMA 3.7.2.4).  Responses are
        read after Command Complete; statuses are cleared as they are handled.
        With ``data``, the DMA arena is compared when the command returns.
        """
        res = self._command(cmd, arg, resp, data, cmd_type=cmd_type, crc_check=crc_check,
                            index_check=index_check, wait_busy=wait_busy, trnmod=trnmod)
        if data is not None:
            self.arena.compare()
        return res

    def _command(
        self,
        cmd: int,
        arg: int,
        resp: Resp,
        data: Transfer | None,
        *,
        cmd_type: int,
        crc_check: bool | None,
        index_check: bool | None,
        wait_busy: bool,
        trnmod: int | None,
    ) -> CommandResult:
        rsp, crc, idx = RESPONSE_ENCODING[resp]
        crc = crc if crc_check is None else crc_check
        idx = idx if index_check is None else index_check
        creg = H.cmdreg(cmd, rsp, crc=crc, idx=idx, data=data is not None,
                        cmd_type=cmd_type)
        res = CommandResult(cmd, arg & 0xFFFFFFFF, resp, creg, None)
        self.history.append(res)

        # 3.7.1.1: wait for the inhibits.
        need_dat = (data is not None or resp is Resp.R1B) and cmd_type != H.CMD_TYPE_ABORT
        inhibit = H.PRNSTS_CMDINHIBIT | (H.PRNSTS_DATINHIBIT if need_dat else 0)
        _, ok = self.wait_prnsts(inhibit, 0)
        if not ok:
            res.timeout = "inhibit"
            return self._fail(res, data)

        plan: AdmaPlan | None = None
        if data is not None:
            res.trnmod, plan = self._setup_data(data)
        self.wr(H.ARGUMENT, arg)
        if data is None and trnmod is not None:
            res.trnmod = trnmod
        self.layout.issue(self, res.trnmod, creg)

        obs = self.wait_status("cmd", H.NIS_CMDCMPL, res)
        res.irq = obs.irq
        if not obs.ok or obs.errintsts:
            res.response = self._responses()
            return self._fail(res, data)
        res.response = self._responses()
        self.clear_status(H.NIS_CMDCMPL)

        if data is None:
            return self._no_data(res, resp, wait_busy)
        return self._data_phase(res, data, plan)

    def _no_data(self, res: CommandResult, resp: Resp, wait_busy: bool) -> CommandResult:
        """The end of a command without data: its busy (R1b) waited for when
        asked, by Transfer Complete (2.2.17) or the DAT line."""
        if resp is Resp.R1B and wait_busy and not self.layout.busy_irq:
            # No Transfer Complete after busy (Linux SDHCI_QUIRK_NO_BUSY_IRQ):
            # wait for the DAT line instead (Command Inhibit (DAT), 2.2.9).
            _, ok = self.wait_prnsts(H.PRNSTS_DATINHIBIT, 0)
            if not ok:
                res.timeout = "busy"
                return self._fail(res, None)
        elif resp is Resp.R1B and wait_busy:
            o = self.wait_status("busy", H.NIS_TRNSCMPL, res)
            if not o.ok or o.errintsts:
                return self._fail(res, None)
            self.clear_status(H.NIS_TRNSCMPL)
        self._leftovers(res)
        return res

    def _data_phase(self, res: CommandResult, data: Transfer,
                    plan: AdmaPlan | None) -> CommandResult:
        """The data of a command that has its response (3.7.2: PIO, SDMA, ADMA)."""
        if data.mode is Mode.PIO:
            self._pio(res, data)
        elif data.mode is Mode.SDMA:
            self._sdma(res, data)
        else:
            assert plan is not None
            self._adma(res, data, plan)
        if res.error:
            return self._fail(res, data)
        if data.auto_cmd == 12:
            res.auto_cmd12_response = self.rd(H.RSPREG3)
        if data.read and data.mode is not Mode.PIO:
            res.data = self._dma_read_back(data, plan)
        self._leftovers(res)
        return res

    def _responses(self) -> tuple[int, int, int, int]:
        return (self.rd(H.RSPREG0), self.rd(H.RSPREG1), self.rd(H.RSPREG2), self.rd(H.RSPREG3))

    def _leftovers(self, res: CommandResult) -> None:
        """Clear transient statuses still set, noting them as observed."""
        s = self.status()
        left = s & TRANSIENT_STATUS
        if left:
            res.observations.append(Observation("leftover", s, self.target.irq_level(), True))
            res.norintsts |= s & 0xFFFF
            self.clear_status(left)

    def _fail(self, res: CommandResult, data: Transfer | None) -> CommandResult:
        """Record the registers, clear the error and reset the lines (3.10)."""
        res.snapshot = self.snapshot()
        s = self.status()
        res.norintsts |= s & 0xFFFF
        res.errintsts |= s >> 16
        if res.errintsts & H.EIS_ACMDERR:
            res.acmd12errsts = self.rd(H.ACMD12ERRSTS)
        if data is not None and data.mode is Mode.ADMA2:
            res.admaerr = self.rd(H.ADMAERR)
        self.clear_status(s & 0xFFFF & ~H.NIS_CARDINT, s >> 16)
        if self.recover:
            if res.errintsts & CMD_LINE_ERRORS or res.timeout in ("cmd", "inhibit"):
                self.reset(H.SWRST_CMD)
                res.recovered.append("cmd")
            if data is not None or res.resp_type is Resp.R1B:
                self.reset(H.SWRST_DAT)
                res.recovered.append("dat")
                # A DAT reset need not clear Block Count; a stale count would
                # let the next SDMASYSAD write start a transfer (2.2.1).
                self.wr(H.BLKCNT, 0)
                res.recovered.append("blkcnt")
        return res

    # -- data (3.7.2) ------------------------------------------------------

    def _setup_data(self, t: Transfer) -> tuple[int, AdmaPlan | None]:
        """Program addresses, block size/count; return TRNMOD and the plan."""
        if t.pio_access not in (1, 2, 4):
            raise ValueError(f"PIO access size {t.pio_access}")
        if not t.read:
            if t.data is None or len(t.data) != t.length:
                raise ValueError(f"write needs {t.length} bytes of data")
        buf = self.data_area if t.buffer is None else t.buffer
        plan: AdmaPlan | None = None
        trnmod = 0
        self.open_arena()
        self.arena.begin()
        if t.mode is Mode.SDMA:
            self.arena.place(buf, t.length, "SDMA buffer")
            if not t.read:
                assert t.data is not None
                self.target.mem_write(buf, t.data)
            self.select_dma(H.HOSTCTL_DMA_SDMA)
            # Address before block count: a write to SDMASYSAD may start SDMA.
            self.wr(H.SDMASYSAD, buf)
            trnmod |= H.TRNMOD_DMA
        elif t.mode is Mode.ADMA2:
            plan = plan_adma2(self.desc_area, buf, t.length, t.adma)
            for i, (addr, blob) in enumerate(plan.tables):
                self.arena.place(addr, len(blob),
                                 f"ADMA2 descriptor table {i + 1}/{len(plan.tables)}")
            for i, (addr, n) in enumerate(plan.segments):
                self.arena.place(addr, n, f"ADMA2 data segment {i + 1}/{len(plan.segments)}")
            for addr, blob in plan.tables:
                self.target.mem_write(addr, blob)
            if not t.read:
                assert t.data is not None
                pos = 0
                for addr, n in plan.segments:
                    chunk = t.data[pos:pos + n]
                    if chunk:
                        self.target.mem_write(addr, chunk)
                    pos += n
            self.select_dma(DMA_SELECT[t.adma.format])
            self.wr(H.ADMASYSADDR, plan.table_addr, 4)
            trnmod |= H.TRNMOD_DMA
        if t.auto_cmd == 23:
            self.wr(H.SDMASYSAD, t.block_count if t.auto_cmd23_arg is None else t.auto_cmd23_arg)
        self.wr(H.BLKSIZE, H.blksize_value(t.block_size, t.sdma_boundary))
        self.wr(H.BLKCNT, t.block_count)
        if t.read:
            trnmod |= H.TRNMOD_READ
        if t.is_multi:
            trnmod |= H.TRNMOD_MULTI
        if t.block_count_enable:
            trnmod |= H.TRNMOD_BLKCNT_EN
        if t.auto_cmd == 12:
            trnmod |= H.TRNMOD_ACMD12
        elif t.auto_cmd == 23:
            trnmod |= H.TRNMOD_ACMD23
        elif t.auto_cmd:
            raise ValueError(f"auto_cmd {t.auto_cmd}: 0, 12 or 23")
        return trnmod, plan

    def _pio_chunk(self, pos: int, left: int, access: int, full_tail: bool) -> int:
        if full_tail:
            return access
        for size in (4, 2, 1):
            if size <= access and size <= left and pos % size == 0:
                return size
        return 1

    def _pio(self, res: CommandResult, t: Transfer) -> None:
        """Block by block through the Buffer Data Port (3.7.2.1 / 3.7.2.2)."""
        bit = H.NIS_RBUFRDY if t.read else H.NIS_WBUFRDY
        name = "rbufrdy" if t.read else "wbufrdy"
        out = bytearray()
        src = t.data or b""
        for b in range(t.block_count):
            o = self.wait_status(f"{name}[{b}]", bit, res)
            if not o.ok or o.errintsts:
                res.data = bytes(out) if t.read else None
                return
            self.clear_status(bit)
            # The Buffer Read / Write Enable in PRNSTS says the buffer is
            # really there (2.2.9); a bounded wait, reported when it is not.
            enable = H.PRNSTS_BUFRDRDY if t.read else H.PRNSTS_BUFWRRDY
            _, ok = self.wait_prnsts(enable)
            if not ok:
                res.timeout = f"{'bufrdrdy' if t.read else 'bufwrrdy'}[{b}]"
                res.data = bytes(out) if t.read else None
                return
            self._pio_block(t, b, out, src)
        if t.read:
            res.data = bytes(out)
        o = self.wait_status("trnscmpl", H.NIS_TRNSCMPL, res)
        if o.ok and not o.errintsts:
            self.clear_status(H.NIS_TRNSCMPL)

    def _pio_block(self, t: Transfer, b: int, out: bytearray, src: bytes) -> None:
        """Move block ``b`` through the Buffer Data Port in ``t.pio_access``
        accesses (reads are appended to ``out``, writes taken from ``src``)."""
        if self._pio_burst(t, b, out, src):
            return
        pos = 0
        bs = t.block_size
        while pos < bs:
            size = self._pio_chunk(pos, bs - pos, t.pio_access, t.pio_full_tail)
            take = min(size, bs - pos)
            off = H.BDATA.offset + (pos % 4 if size < 4 else 0)
            if t.read:
                v = self.target.read(off, size)
                out += v.to_bytes(size, "little")[:take]
            else:
                chunk = src[b * bs + pos:b * bs + pos + take].ljust(size, b"\0")
                self.target.write(off, size, int.from_bytes(chunk, "little"))
            pos += take

    def _pio_burst(self, t: Transfer, b: int, out: bytearray, src: bytes) -> bool:
        """:meth:`_pio_block` where every access of the block is the same
        aligned dword (4-byte accesses, a block a multiple of 4), through a
        target that takes a burst of them (``read_burst``/``write_burst``:
        the optimistic lockstep queues them in one go; each is still its own
        access and its own step).  False: nothing done, go access by access."""
        bs = t.block_size
        if bs % 4 or bs < 8 or self._pio_chunk(0, bs, t.pio_access, t.pio_full_tail) != 4:
            return False
        n = bs // 4
        if t.read:
            burst = getattr(self.target, "read_burst", None)
            if burst is None:
                return False
            for v in burst(H.BDATA.offset, 4, n):
                out += v.to_bytes(4, "little")
            return True
        wburst = getattr(self.target, "write_burst", None)
        if wburst is None:
            return False
        block = src[b * bs:(b + 1) * bs].ljust(bs, b"\0")
        wburst(H.BDATA.offset, 4, [int.from_bytes(block[i:i + 4], "little")
                                   for i in range(0, bs, 4)])
        return True

    def _sdma(self, res: CommandResult, t: Transfer) -> None:
        """SDMA (3.7.2.3): at each DMA Interrupt write the next boundary's
        address to SDMASYSAD, until Transfer Complete."""
        addr = self.data_area if t.buffer is None else t.buffer
        boundary = t.sdma_boundary
        for _ in range(t.length // boundary + 4):
            o = self.wait_status("sdma", H.NIS_TRNSCMPL | H.NIS_DMAINT, res)
            if not o.ok or o.errintsts:
                return
            if o.norintsts & H.NIS_DMAINT:
                res.dma_interrupts += 1
            if o.norintsts & H.NIS_TRNSCMPL:
                self.clear_status(o.norintsts & (H.NIS_TRNSCMPL | H.NIS_DMAINT))
                return
            self.clear_status(H.NIS_DMAINT)
            addr = (addr & ~(boundary - 1)) + boundary
            self.wr(H.SDMASYSAD, addr)
        res.timeout = "sdma-rounds"

    def _adma(self, res: CommandResult, t: Transfer, plan: AdmaPlan) -> None:
        """ADMA2 (3.7.2.4): wait Transfer Complete; count DMA Interrupts from
        descriptors with the Int attribute; report ADMAERR."""
        for _ in range(len(plan.descriptors) + 4):
            o = self.wait_status("adma", H.NIS_TRNSCMPL | H.NIS_DMAINT, res)
            if not o.ok or o.errintsts:
                return
            if o.norintsts & H.NIS_DMAINT:
                res.dma_interrupts += 1
            if o.norintsts & H.NIS_TRNSCMPL:
                self.clear_status(o.norintsts & (H.NIS_TRNSCMPL | H.NIS_DMAINT))
                res.admaerr = self.rd(H.ADMAERR)
                return
            self.clear_status(H.NIS_DMAINT)
        res.timeout = "adma-rounds"

    def _dma_read_back(self, t: Transfer, plan: AdmaPlan | None) -> bytes:
        if plan is None:
            buf = self.data_area if t.buffer is None else t.buffer
            return self.target.mem_read(buf, t.length)
        out = bytearray()
        for addr, n in plan.segments:
            want = min(n, t.length - len(out))
            if want <= 0:
                break
            out += self.target.mem_read(addr, want)
        return bytes(out)
