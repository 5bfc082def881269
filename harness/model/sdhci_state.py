"""Register state, interrupt logic and the card bus of the SDHCI model.

The base of :class:`harness.model.sdhci.SDHCI`: every register as QEMU's
sdhci keeps it (widths included, so stores truncate the same way), the
interrupt line, transfer completion, and the operations on the SD bus.
"""

from __future__ import annotations

from typing import Protocol

from harness.errors import ModelConfigError
from harness.hwdefs import sdhci as H
from harness.ledger import boundaries
from harness.model.clock import TimerHandle, VirtualClock
from harness.model.compat import defaults_for
from harness.model.deviations import Deviations, Strictness
from harness.model.memory import GuestMemory
from harness.profile import NEWEST, BuildProfile, Version

U8, U16, U32, U64 = 0xFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF

#: sdhci's stop-at-block-gap states.
NOT_STOPPED, GAP_READ, GAP_WRITE = 0, 1, 2

#: Virtual time between ADMA continuation steps, and descriptors per step.
TRANSFER_DELAY_NS = 100
ADMA_DESCS_PER_STEP = 5
#: Timer-driven ADMA steps allowed between guest interactions (20 ms of
#: virtual time); see ``SdhciState._transfer_timer_fired``.
DEFAULT_STEP_BUDGET = 200_000
#: Delay before a card insertion is reported while a removal is pending.
INSERTION_DELAY_NS = 1_000_000_000


class SDHCIConfigError(ModelConfigError):
    """The device properties are rejected at realize, as QEMU rejects them."""


class SDBusCard(Protocol):
    """The card operations sdhci uses on its SD bus (hw/sd/core.c), and the
    line levels Present State reports (SDHC 3.00 2.2.9)."""

    @property
    def inserted(self) -> bool: ...

    @property
    def readonly(self) -> bool: ...

    def do_command(self, cmd: int, arg: int) -> bytes: ...

    def write_data(self, data: bytes) -> None: ...

    def read_data(self, length: int) -> bytes: ...

    def data_ready(self) -> bool: ...

    def set_voltage(self, millivolts: int) -> None:
        """The signalling voltage Host Control 2 selects (2.2.24): 3300 or 1800."""
        ...

    @property
    def dat_lines(self) -> int:
        """DAT[3:0] line levels, bit n = DATn (1: high)."""
        ...

    @property
    def cmd_line(self) -> bool:
        """CMD line level (True: high)."""
        ...


def _prop_int(value: int | str | None, default: int) -> int:
    """A property value as QEMU parses it (int, or decimal/0x text)."""
    if value is None:
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 0)
    except ValueError:
        return default


def check_capareg(sd_spec_version: int, capareg: int) -> None:
    """Reject what sdhci's realize rejects (sd-spec-version, capareg)."""
    if sd_spec_version not in (2, 3):
        raise SDHCIConfigError("sdhci: only SD host controller spec v2 and v3 are supported")
    cap = H.CAPAB
    if sd_spec_version >= 3 and cap.field("SLOTTYPE").get(capareg):
        raise SDHCIConfigError("sdhci: capareg slot type other than 0 is not supported")
    if sd_spec_version < 3:
        for name, what in (("TOCLKFREQ", "timeout"), ("BASECLKFREQ", "base")):
            freq = cap.field(name).get(capareg)
            if not (freq == 0 or 10 <= freq <= 63):
                raise SDHCIConfigError(
                    f"sdhci: capareg {what} clock frequency must be 0 or 10..63")
    if cap.field("MAXBLKLEN").get(capareg) >= 3:
        raise SDHCIConfigError("sdhci: capareg max block length must be 512, 1024 or 2048")


class SdhciState:
    """Registers, interrupt line and SD-bus plumbing of sdhci-pci."""

    #: Whether the line follows QEMU's (not re-evaluated on reads) rather
    #: than the specification's: asked of the deviations once, when first
    #: needed (:meth:`irq_level`).  While it is True the level is
    #: :attr:`irq`, which ``ModelTarget.irq_state`` reads directly.
    irq_follows_qemu: bool | None = None
    #: The ledger devices whose switches this controller consults (a vendor
    #: front end adds its own: ``s3c``).
    DEVICES: tuple[str, ...] = ("sdhci",)

    def __init__(self, clock: VirtualClock, card: SDBusCard | None, memory: GuestMemory, *,
                 profile: BuildProfile = NEWEST, sd_spec_version: int | str | None = None,
                 capareg: int | str | None = None, maxcurr: int | str | None = None,
                 uhs_mode: int | str | None = None, strict: Strictness = False,
                 machine: str | None = None) -> None:
        table = defaults_for(machine, profile, "sdhci-pci")
        self.clock = clock
        self.card = card
        self.memory = memory
        self.profile = profile
        self.qemu_version: Version = profile.version
        self.sd_spec_version = _prop_int(sd_spec_version, int(table["sd-spec-version"]))
        self.capareg = _prop_int(capareg, int(table["capareg"])) & U64
        self.maxcurr = _prop_int(maxcurr, int(table["maxcurr"])) & U64
        self.uhs_mode = _prop_int(uhs_mode, int(table["uhs"]))
        check_capareg(self.sd_spec_version, self.capareg)
        self.hcver = H.hcver(self.sd_spec_version)
        self.buf_maxsz = 512 << H.CAPAB.field("MAXBLKLEN").get(self.capareg)
        self.fifo = bytearray(self.buf_maxsz)
        self.deviations = Deviations(self.DEVICES, strict)
        self.strict = strict
        #: Set when QEMU would hang (busy loop) or abort (assertion) here.
        self.hung: str | None = None
        self._insert_timer: TimerHandle | None = None
        self._transfer_timer: TimerHandle | None = None
        #: An ADMA continuation that would only repeat itself (see do_adma).
        self.adma_parked = False
        self._park_deadline = 0
        #: Continuation steps run from the timer since the last register
        #: access or ``clock_step`` call, and the most the model runs.
        self.timer_steps = 0
        self.step_budget = DEFAULT_STEP_BUDGET
        self.irq = False
        #: Every change of :attr:`irq`, in order (True: raised); the target
        #: empties it (:meth:`harness.model.target.ModelTarget.irq_events`).
        self.irq_changes: list[bool] = []
        self._clear_registers()

    # -- state ------------------------------------------------------------

    def _clear_registers(self) -> None:
        """Every register the controller's reset clears (capabilities and
        version stay)."""
        self.sdmasysad = 0
        self.blksize = 0
        self.blkcnt = 0
        self.argument = 0
        self.trnmod = 0
        self.cmdreg = 0
        self.rspreg = [0, 0, 0, 0]
        #: RSPREG3 holds what QEMU never wrote: an Auto CMD12 the card did
        #: not answer leaves it uninitialised stack bytes (ModelTarget.reconcile).
        self.rspreg3_undefined = False
        self.prnsts = 0
        self.hostctl1 = 0
        self.pwrcon = 0
        self.blkgap = 0
        self.wakcon = 0
        self.clkcon = 0
        self.timeoutcon = 0
        self.admaerr = 0
        self.norintsts = 0
        self.errintsts = 0
        self.norintstsen = 0
        self.errintstsen = 0
        self.norintsigen = 0
        self.errintsigen = 0
        self.acmd12errsts = 0
        self.hostctl2 = 0
        self.admasysaddr = 0
        self.data_count = 0
        self.stopped_state = NOT_STOPPED
        self.sdma_paused = False
        self.adma1_length: int | None = None

    def qemu(self, key: str) -> bool:
        """Follow QEMU (True) or the specification (strict) for ``key``."""
        return self.deviations.qemu(key)

    @property
    def sdma_rework(self) -> bool:
        """QEMU 10.0+ SDMA behaviour (boundary ``sdhci.sdma-rework``: DMA
        Interrupt at every SDMA completion; SYSAD-started SDMA of one block
        uses the single-block path)."""
        return self.qemu_version >= boundaries.SDMA_REWORK.since

    @property
    def block_size(self) -> int:
        return self.blksize & H.BLKSIZE_SIZE_MASK

    def transferring(self) -> bool:
        """Read or Write Transfer Active."""
        return bool(self.prnsts & (H.PRNSTS_READ_ACTIVE | H.PRNSTS_WRITE_ACTIVE))

    # -- interrupts -------------------------------------------------------

    def slotint(self) -> bool:
        """The slot's interrupt signal (2.2.33): status AND signal enable, or
        an insertion/removal with its wakeup enabled."""
        return bool(
            (self.norintsts & self.norintsigen)
            or (self.errintsts & self.errintsigen)
            or ((self.norintsts & H.NIS_CARDINS) and (self.wakcon & H.WAKCON_CARDINS))
            or ((self.norintsts & H.NIS_CARDREM) and (self.wakcon & H.WAKCON_CARDREM)))

    def update_irq(self) -> bool:
        """Drive the INTx line from :meth:`slotint`; True when it is raised.
        A change of level is recorded in :attr:`irq_changes`."""
        level = self.slotint()
        if level != self.irq:
            self.irq_changes.append(level)
        self.irq = level
        return level

    def irq_level(self) -> bool:
        """INTx as QEMU leaves it, or as the specification defines it (strict).
        The deviation's answer is fixed for the run (the strictness is), so
        it is asked once: the lockstep asks for the level at every step."""
        follow = self.irq_follows_qemu
        if follow is None:
            follow = self.irq_follows_qemu = self.qemu("sdhci.irq-not-reevaluated")
        if follow:
            return self.irq
        return self.slotint()

    def set_nis(self, bit: int) -> None:
        """Set a normal interrupt status bit if its status enable is set."""
        if self.norintstsen & bit:
            self.norintsts |= bit

    def raise_error(self, bit: int) -> None:
        """Set an error status bit (and Error Interrupt) if enabled."""
        if self.errintstsen & bit:
            self.errintsts |= bit
            self.norintsts |= H.NIS_ERRINT

    # -- SD bus -----------------------------------------------------------

    def card_inserted(self) -> bool:
        return self.card is not None and bool(self.card.inserted)

    def card_readonly(self) -> bool:
        return self.card is not None and bool(self.card.readonly)

    def card_command(self, cmd: int, arg: int) -> bytes:
        if self.card is None:
            return b""
        return bytes(self.card.do_command(cmd & 0xFF, arg & U32))

    def card_read(self, length: int) -> bytes:
        """Read ``length`` bytes from the card (0x00 where it has none)."""
        if length <= 0:
            return b""
        if self.card is None:
            return bytes(length)
        read = getattr(self.card, "read_chunk", None) or self.card.read_data  # one chunk
        data = bytes(read(length))
        if len(data) < length:
            data += bytes(length - len(data))
        return data[:length]

    def card_write(self, data: bytes) -> None:
        if self.card is not None and data:
            self.card.write_data(bytes(data))

    def card_data_ready(self) -> bool:
        return self.card is not None and bool(self.card.data_ready())

    def dat_lines(self) -> int:
        """DAT[3:0] levels; an empty bus's pulled-up lines read high."""
        return 0xF if self.card is None else self.card.dat_lines & 0xF

    def cmd_line(self) -> bool:
        return True if self.card is None else bool(self.card.cmd_line)

    # -- transfers --------------------------------------------------------

    def end_transfer(self) -> None:
        """Finish a data transfer: Auto CMD12 if enabled (response into
        RSPREG3), clear the transfer state, Transfer Complete."""
        if self.trnmod & H.TRNMOD_ACMD12:
            resp = self.card_command(12, 0)
            if len(resp) >= 4:
                self.rspreg[3] = int.from_bytes(resp[:4], "big")
                self.rspreg3_undefined = False
            else:
                # QEMU copies its uninitialised response buffer when the card
                # does not answer: the value is undefined (the model keeps its
                # own and adopts QEMU's, see ModelTarget.reconcile).
                self.rspreg3_undefined = True
        self.prnsts &= ~(H.PRNSTS_READ_ACTIVE | H.PRNSTS_WRITE_ACTIVE | H.PRNSTS_DATLINEACTIVE
                         | H.PRNSTS_DATINHIBIT | H.PRNSTS_BUFWRRDY | H.PRNSTS_BUFRDRDY)
        self.sdma_paused = False
        self.set_nis(H.NIS_TRNSCMPL)
        self.update_irq()

    def data_transfer(self) -> None:
        """Start or continue the transfer set up by TRNMOD and HOSTCTL."""
        raise NotImplementedError

    def cancel_transfer_timer(self) -> None:
        self.adma_parked = False
        if self._transfer_timer is not None:
            self._transfer_timer.cancel()
            self._transfer_timer = None

    def transfer_pending(self) -> bool:
        if self.adma_parked:
            return True
        return self._transfer_timer is not None and self._transfer_timer.pending

    def schedule_transfer(self, delay_ns: int = TRANSFER_DELAY_NS) -> None:
        """(Re)arm the transfer continuation timer."""
        self.cancel_transfer_timer()
        self._transfer_timer = self.clock.schedule(delay_ns, self._transfer_timer_fired)

    def _transfer_timer_fired(self) -> None:
        self._transfer_timer = None
        self.timer_steps += 1
        if self.timer_steps > self.step_budget:
            # QEMU would keep going (an ADMA chain that never ends, stepping
            # every 100 ns); the model stops rather than spin for minutes.
            self.hung = (f"ADMA continued for more than {self.step_budget} timer steps "
                         "without a register access; model stopped it (QEMU would not)")
            return
        self.data_transfer()

    def resume_pending_transfer(self) -> None:
        """A register access first completes a pending continuation step."""
        if (self.adma_parked or self._transfer_timer is not None) and self.transfer_pending():
            self.cancel_transfer_timer()
            self.data_transfer()
