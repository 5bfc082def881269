"""``ModelTarget``: the golden model behind the Target interface.

Wires one :class:`~harness.model.clock.VirtualClock`, an SD card, the
sdhci-pci controller and sparse guest memory together, and turns Target
accesses into what QEMU's memory core hands the device:

* an access is split as ``flatview_read/write_continue`` splits it: pieces
  of at most 4 bytes (sdhci's ``valid.max_access_size``), each no larger
  than the alignment of its address, little endian; so a quadword becomes
  two longwords and a misaligned longword becomes byte/word pieces;
* a piece outside the 256-byte register window lands on whatever the
  machine maps there: on a PC nothing (QEMU's unassigned memory: reads 0,
  writes are dropped), on a board what the controller model says
  (``read_outside``: an Aspeed wrapper's own registers).  No exception.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.hwdefs import sdhci as H
from harness.hwdefs.boards import Board
from harness.hwdefs.fields import Register
from harness.hwdefs.sdhci import REGISTER_WINDOW
from harness.ledger import entry
from harness.machine import Machine, Props, PropValue
from harness.model.blockstore import BlockStore
from harness.model.clock import VirtualClock
from harness.model.deviations import Strictness
from harness.model.emmc import EmmcCard, emmc_card_params
from harness.model.memory import GuestMemory
from harness.model.sdcard import SDCard
from harness.model.sdhci import CONTROLLERS as CONTROLLERS
from harness.model.sdhci import SDBusCard
from harness.profile import NEWEST, BuildProfile
from harness.target import check_access, check_clock_step, check_memory


def _bind_controllers() -> None:
    """Import every vendor SDHCI model (``harness/model/sdhci_*.py``): each
    binds itself to its register layout (``Board.variant``) in
    :data:`CONTROLLERS` with ``@CONTROLLERS.controller``, so that a new one
    is a file of its own and nothing here lists it."""
    for m in pkgutil.iter_modules([str(Path(__file__).parent)], "harness.model."):
        if m.name.startswith("harness.model.sdhci_"):
            importlib.import_module(m.name)


_bind_controllers()


def split_access(offset: int, size: int) -> list[tuple[int, int]]:
    """``(offset, size)`` pieces QEMU's memory core issues for one access
    to a region with 1..4 byte aligned accesses (``memory_access_size``)."""
    out: list[tuple[int, int]] = []
    while size > 0:
        n = min(size, 4)
        align = offset & -offset if offset else 1 << 30
        n = min(n, align)
        n = 1 << (n.bit_length() - 1)
        out.append((offset, n))
        offset += n
        size -= n
    return out


class ModelCard(SDBusCard, Protocol):
    """What ModelTarget needs of a card beyond the SD bus: its image, the
    medium switch, the deviations it consulted and whether QEMU would have
    aborted.  :class:`~harness.model.sdcard.SDCard` is one."""

    inserted: bool  # settable here, read-only on the bus
    #: Why QEMU would abort at this point (a failed assertion), if it would.
    fatal: str | None
    #: The ledger's QEMU bug behind :attr:`fatal`, where one is.
    fatal_key: str | None

    @property
    def dev(self) -> _Consulted:
        """The card's deviations, with the keys consulted so far."""
        ...

    def image_read(self, offset: int, length: int) -> bytes: ...


class _Consulted(Protocol):
    @property
    def consulted(self) -> set[str]: ...


#: sdhci-pci properties (QEMU names) -> the SDHCI model's parameters.
#: The ledger's entries for the values :meth:`ModelTarget.reconcile` adopts.
RCA, RSPREG3 = entry("sd.rca-random"), entry("sdhci.rspreg3-after-auto-cmd12")

_SDHCI_PARAMS = {"sd-spec-version": "sd_spec_version", "capareg": "capareg",
                 "maxcurr": "maxcurr", "uhs": "uhs_mode", "vendor": "vendor"}
#: Properties of the sysbus controller only (a board sets them; sdhci-pci has none).
_SYSBUS_PARAMS = {"pending-insert-quirk": "pending_insert_quirk", "wp-inverted": "wp_inverted"}
#: sd-card properties (QEMU names) -> the SDCard model's parameters.
_CARD_PARAMS = {"spec_version": "spec_version", "erase-blocks-as-zero": "erase_blocks_as_zero"}
_BOOLS = {"on": True, "true": True, "yes": True, "off": False, "false": False, "no": False}


def _param(value: PropValue, device: str, prop: str) -> PropValue:
    if prop != "erase-blocks-as-zero" or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _BOOLS:
        raise ValueError(f"{device} property {prop}: {value!r} is not a boolean "
                         "(QEMU refuses it too)")
    return _BOOLS[text]


def model_params(machine: Machine) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDHCI and SDCard keyword arguments that mirror ``machine``'s
    device properties: the one place QEMU's property names meet the model's.

    A property the model does not know raises ``ValueError``."""
    out: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    if machine.card_kind == "emmc":
        out[1].update(emmc_card_params(dict(machine.card_props)))
    card_props = Props() if machine.card_kind == "emmc" else machine.card_props
    host = ({**_SDHCI_PARAMS, **_SYSBUS_PARAMS} if machine.board is not None
            else _SDHCI_PARAMS)
    for props, names, dev, dst in ((machine.sdhci_props, host, "sdhci-pci", out[0]),
                                   (card_props, _CARD_PARAMS, "sd-card", out[1])):
        for k, v in props.items():
            if k not in names:
                raise ValueError(f"the model has no {dev} property {k!r}")
            dst[names[k]] = _param(v, dev, k)
    return out


def card_medium(machine: Machine, image: str | Path | None, size: int | None
                ) -> tuple[str | Path | None, int | None]:
    """The card's image file or all-zero size: ``image``/``size`` when given,
    else ``machine``'s drive (a null-co drive is its size; a file must be raw,
    which is all the model reads)."""
    medium = machine.image
    if image is not None or size is not None or medium is None:
        return image, size
    if medium.path is None:
        return None, medium.size
    if medium.format != "raw":
        raise ValueError(f"the model reads raw images only, not {medium.format}: give the "
                         "raw twin as image")
    return medium.path, None


class ModelTarget:
    """The model as a :class:`harness.target.Target`, mirroring ``machine``.

    The card reads ``machine``'s raw image (never written: writes stay in
    memory), or is an all-zero card of a null-co image's size; ``image``
    (a raw file, e.g. the raw twin of a qcow2 image) or ``size`` replace
    that; no image (or no sd-card device) is an empty slot.  ``card``
    replaces the SD card with any :class:`ModelCard`.  What QEMU refuses
    at realize (an unknown property, a read-only drive) raises ``ValueError``.
    ``profile`` is the QEMU build mirrored (its version and which properties
    exist; defaults come from the model's own table,
    :mod:`harness.model.defaults`); ``strict`` makes card and
    controller follow the specifications where QEMU deviates.
    """

    name: str = "model"

    def __init__(self, machine: Machine | None = None, *, profile: BuildProfile = NEWEST,
                 strict: Strictness = False, image: str | Path | None = None,
                 size: int | None = None, card: ModelCard | None = None) -> None:
        machine = machine or Machine()
        if machine.sdhci is None:
            raise ValueError("the model needs the sdhci-pci controller")
        board = machine.board_def
        if board is not None and board.variant not in CONTROLLERS:
            raise ValueError(f"board {board.name}: the model has no {board.variant} register "
                             "layout")
        sdhci_params, card_params = model_params(machine)
        self.machine = machine
        self.profile = profile
        self.strict = strict
        self.clock = VirtualClock()
        self.memory = GuestMemory(machine.ram, machine.type,
                                  ram_base=None if board is None else board.ram_base,
                                  other_ram=() if board is None else board.other_ram,
                                  aliases=() if board is None else board.ram_aliases)
        if card is None:
            medium = machine.image
            if medium is not None and medium.readonly:
                raise ValueError("a read-only drive cannot back an SD card "
                                 "(QEMU refuses it too)")
            if machine.card is None and (image is not None or size is not None):
                raise ValueError("a card image needs an sd-card device")
            image, size = card_medium(machine, image, size)
            if machine.card_kind == "emmc":
                if not profile.has_emmc:
                    raise ValueError("this build has no emmc device (QEMU refuses it too)")
                card = EmmcCard(self.clock, image, size, profile=profile, machine=machine.type,
                                strict=strict, **card_params)
            else:
                card = SDCard(self.clock, image, size, profile=profile, machine=machine.type,
                              strict=strict, **card_params)
        self.card: ModelCard = card
        controller = CONTROLLERS[board.variant if board is not None else "sdhci"]
        self.sdhci = controller(self.clock, card, self.memory, profile=profile, strict=strict,
                                machine=machine.type, **sdhci_params)
        #: ``(what, value)`` of each value adopted from QEMU (:meth:`reconcile`).
        self.adoptions: list[tuple[str, int]] = []
        #: Why :meth:`reconcile` refused to adopt QEMU's value, for each refusal.
        self.refused: list[str] = []
        self._irq_reported = False

    # -- registers ------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        if size in (1, 2, 4) and not offset & (size - 1) and 0 <= offset < REGISTER_WINDOW:
            return self.sdhci.read(offset, size)  # aligned: one piece, as split_access gives
        check_access(offset, size)
        value = 0
        for off, n in split_access(offset, size):
            if 0 <= off < REGISTER_WINDOW:
                piece = self.sdhci.read(off, n)
            else:
                piece = self.sdhci.read_outside(off, n)
            value |= piece << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        if size in (1, 2, 4) and not offset & (size - 1) and 0 <= offset < REGISTER_WINDOW:
            self.sdhci.write(offset, size, value & ((1 << (8 * size)) - 1))
            return
        check_access(offset, size)
        value &= (1 << (8 * size)) - 1
        for off, n in split_access(offset, size):
            piece = (value >> (8 * (off - offset))) & ((1 << (8 * n)) - 1)
            if 0 <= off < REGISTER_WINDOW:
                self.sdhci.write(off, n, piece)
            else:
                self.sdhci.write_outside(off, n, piece)

    # -- memory, time, interrupt ------------------------------------------------

    def mem_read(self, addr: int, length: int) -> bytes:
        check_memory(addr, length)
        data, _ok = self.memory.read(addr, length)
        return data

    def mem_write(self, addr: int, data: bytes) -> None:
        check_memory(addr, len(data))
        self.memory.write(addr, bytes(data))
        self.sdhci.unpark_adma()

    def clock_step(self, ns: int | None = None) -> int:
        check_clock_step(ns)
        self.sdhci.timer_steps = 0
        return self.clock.step(ns)

    @property
    def board(self) -> Board | None:
        """The board this target's machine is (None: a PC with sdhci-pci)."""
        return self.machine.board_def

    def irq_level(self) -> bool:
        return self.sdhci.irq_level()

    def irq_state(self) -> tuple[tuple[bool, ...], bool]:
        """:meth:`irq_events` as a tuple, then :meth:`irq_level`, in one call:
        what a caller running ahead of QEMU predicts after every operation
        (most leave the line as it was, and are answered here at once)."""
        s = self.sdhci
        cls = type(self)
        if cls.irq_level is _OWN_IRQ_LEVEL and s.irq_follows_qemu:
            now = s.irq  # the line as last driven (SdhciState.irq_level)
        else:
            now = self.irq_level()
        if not s.irq_changes and now == self._irq_reported and cls.irq_events is _OWN_IRQ_EVENTS:
            return (), now
        return tuple(self.irq_events()), self.irq_level()

    def reader(self, offset: int, size: int) -> Callable[[int, int], int]:
        """The function :meth:`read` comes to for ``(offset, size)``: the
        controller's own for an aligned access inside the register window
        (one piece), else :meth:`read` itself (always, where :meth:`read`
        is not this class's own).  For a caller that reads one register
        many times."""
        if size in (1, 2, 4) and not offset & (size - 1) and 0 <= offset < REGISTER_WINDOW \
                and type(self).read is _OWN_READ:
            return self.sdhci.read
        return self.read

    def read_run(self, offset: int, size: int, count: int) -> list[int]:
        """Up to ``count`` reads of ``(offset, size)`` that only take bytes
        from inside the Buffer Data Port's current block
        (:meth:`SDHCI.read_run`): what :meth:`read` would answer each, in
        order.  Fewer (none) where a read would do more; the caller reads
        those one by one."""
        if offset != H.BDATA.offset or size != 4 or type(self).read is not _OWN_READ \
                or type(self).irq_events is not _OWN_IRQ_EVENTS:  # asked after every read
            return []
        return self.sdhci.read_run(count)

    def irq_events(self) -> list[bool]:
        """The controller's line changes since the last call (see
        :class:`harness.target.IrqEvents`).  Where the line is not driven as
        it changes (strict: :meth:`irq_level` is the status, re-evaluated on
        every read), a final event brings the sequence to that level."""
        changes = self.sdhci.irq_changes
        now = self.irq_level()
        if not changes and now == self._irq_reported:  # the lockstep's every step
            return []
        out: list[bool] = []
        level = self._irq_reported
        for change in [*changes, now]:
            if change != level:
                out.append(change)
                level = change
        self.sdhci.irq_changes.clear()
        self._irq_reported = level
        return out

    def image_read(self, offset: int, length: int) -> bytes:
        return bytes(self.card.image_read(offset, length))

    def close(self) -> None:
        """Nothing to release: the model holds no processes or files."""

    # -- beyond the Target interface ----------------------------------------------

    def deviations_consulted(self) -> set[str]:
        """Keys of every deviation the card and controller models consulted."""
        return set(self.sdhci.deviations.consulted) | self.card.dev.consulted

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt a value QEMU drew at random, if that is all that differs.

        Since 9.1 QEMU's card picks its RCA with ``qemu_guest_getrandom``
        (PLS 4.2.2 lets the card choose any RCA), so the R6 response to CMD3
        cannot be predicted.  When a read of RSPREG0 after CMD3 differs only
        in the RCA bits, the card takes QEMU's RCA and the read agrees.

        Only a new address is adopted: an RCA of 0 (PLS 4.2.2: reserved, it
        addresses every card) or the card's previous RCA is not a random
        draw but a fault, so it stays a divergence (the reason is kept in
        :attr:`refused`).  Each adoption is kept in :attr:`adoptions`.
        """
        if op == "read" and self._adopt_rspreg3(int(args[0]), int(args[1]), int(model_value),
                                                int(qemu_value)):
            return True
        card = self.card
        if op != "read" or not isinstance(card, SDCard) or card.legacy:
            return False
        if isinstance(card, EmmcCard):  # the host assigns an eMMC's RCA: nothing to adopt
            return False
        if (self.sdhci.cmdreg >> 8) & 0x3F != 3:
            return False
        offset, size = int(args[0]), int(args[1])
        rca_lo = H.RSPREG0.offset + 2  # RCA is R6 bits 31:16 = RSPREG0 bytes 2..3
        if not (offset <= rca_lo and offset + size >= rca_lo + 2):
            return False
        shift = 8 * (rca_lo - offset)
        mask = 0xFFFF << shift
        if (int(model_value) ^ int(qemu_value)) & ~mask:
            return False
        rca = (int(qemu_value) >> shift) & 0xFFFF
        if rca == 0 or rca == card.previous_rca:
            what = "0" if rca == 0 else f"the card's previous RCA {rca:#06x}"
            self.refused.append(f"QEMU's CMD3 published RCA {what}: not a new random "
                                "address, so it is not adopted")
            return False
        self.adoptions.append((RCA.adopts, rca))
        card.rca = rca
        self.sdhci.rspreg[0] = (rca << 16) | (self.sdhci.rspreg[0] & 0xFFFF)
        return True

    def adopt(self, kind: str, step: Any) -> list[str]:
        """Take QEMU's side of a difference nothing explains, for exactly
        what differed, so that a run can go on past it (the scoreboard,
        :mod:`harness.check.scoreboard`): the register fields a read
        returned, where the register is plain state (not PRNSTS or the data
        port, which are computed); the bytes of guest memory or of the card
        image; the interrupt line's level, where the model drives it as
        QEMU does.  ``step``: the lockstep step (``op``, ``args``, ``qemu``,
        ``irq_qemu``).  Returns what was taken, for the report."""
        op, args, value = step.op, step.args, step.qemu
        if kind == "irq":
            s = self.sdhci
            if not s.irq_follows_qemu:
                return []
            s.irq = self._irq_reported = bool(step.irq_qemu)
            s.irq_changes.clear()
            return [f"interrupt line {int(step.irq_qemu)}"]
        if op == "read" and isinstance(value, int) and isinstance(step.model, int):
            return self._adopt_registers(int(args[0]), int(args[1]), step.model, value)
        if op == "mem_read" and isinstance(value, bytes):
            self.memory.write(int(args[0]), value)
            return [f"guest memory {int(args[0]):#x}+{len(value):#x}"]
        store = getattr(self.card, "store", None)
        if op == "image_read" and isinstance(value, bytes) and isinstance(store, BlockStore):
            store.write(int(args[0]), value)
            return [f"card image {int(args[0]):#x}+{len(value):#x}"]
        return []

    def _adopt_registers(self, offset: int, size: int, model: int, qemu: int) -> list[str]:
        out = []
        for reg in H.registers_in(offset, size):
            where = _ADOPTABLE.get(reg)
            if where is None:
                continue
            m, q = reg.part(offset, model), reg.part(offset, qemu)
            if m == q:
                continue
            mask = (1 << (8 * reg.width)) - 1
            name, index = where
            # only the bytes the access read: the rest of the register stays
            lo, hi = max(offset, reg.offset), min(offset + size, reg.offset + reg.width)
            keep = mask & ~sum(0xFF << (8 * (a - reg.offset)) for a in range(lo, hi))
            if index is None:
                setattr(self.sdhci, name, (getattr(self.sdhci, name) & keep) | (q & ~keep))
            else:
                values = getattr(self.sdhci, name)
                values[index] = (values[index] & keep) | (q & ~keep)
            out.append(f"{reg.name} {q & ~keep:#x}")
        return out

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        """Whether :meth:`reconcile` might adopt QEMU's answer to ``op(*args)``
        about to run: a read of the RCA bytes of RSPREG0 after CMD3 (an SD
        card), or of RSPREG3 while it is undefined.  The model cannot
        predict such a value, so a caller that runs ahead of QEMU on the
        model's answers must wait for QEMU's there."""
        if op != "read":
            return False
        offset, size = int(args[0]), int(args[1])
        if self.sdhci.rspreg3_undefined and offset < H.RSPREG3.offset + 4 \
                and H.RSPREG3.offset < offset + size:
            return True
        card = self.card
        if not isinstance(card, SDCard) or card.legacy or isinstance(card, EmmcCard):
            return False
        rca_lo = H.RSPREG0.offset + 2
        return (self.sdhci.cmdreg >> 8) & 0x3F == 3 and offset <= rca_lo \
            and offset + size >= rca_lo + 2

    def _adopt_rspreg3(self, offset: int, size: int, model_value: int,
                       qemu_value: int) -> bool:
        """Adopt QEMU's RSPREG3 after an Auto CMD12 the card did not answer.

        QEMU's ``sdhci_end_transfer`` copies its response buffer into
        RSPREG3 whatever the card answered; when the card refuses CMD12
        (it is not sending or receiving: PLS 4.3.4) the buffer is
        uninitialised stack, so the value cannot be predicted.  Only the
        RSPREG3 bytes may differ; the adoption is kept in :attr:`adoptions`.
        """
        if not self.sdhci.rspreg3_undefined:
            return False
        lo, hi = max(offset, H.RSPREG3.offset), min(offset + size, H.RSPREG3.offset + 4)
        if lo >= hi:
            return False
        mask = sum(0xFF << (8 * (a - offset)) for a in range(lo, hi))
        if (model_value ^ qemu_value) & ~mask:
            return False
        value = self.sdhci.rspreg[3]
        for a in range(lo, hi):
            shift_r, shift_v = 8 * (a - H.RSPREG3.offset), 8 * (a - offset)
            value = (value & ~(0xFF << shift_r)) | (((qemu_value >> shift_v) & 0xFF) << shift_r)
        self.sdhci.rspreg[3] = value
        self.sdhci.rspreg3_undefined = False
        self.adoptions.append((RSPREG3.adopts, value))
        return True

    def image_touched(self) -> list[tuple[int, int]]:
        """``(offset, length)`` extents of the card the model wrote, erased or
        filled: where its image may differ from the one it started from."""
        store = getattr(self.card, "image_store", None) or getattr(self.card, "store", None)
        return store.touched() if isinstance(store, BlockStore) else []

    def set_card_inserted(self, inserted: bool) -> None:
        """Insert or eject the card's medium (QEMU: blockdev change/eject);
        the controller sees a card change event."""
        if self.card.inserted == inserted:
            return  # as QEMU: no media change event
        self.card.inserted = inserted
        self.sdhci.card_changed()

    @property
    def hung(self) -> str | None:
        """Why QEMU would hang or abort at this point, if it would."""
        return self.sdhci.hung or self.card.fatal

    @property
    def stop_key(self) -> str | None:
        """The ledger's QEMU bug behind :attr:`hung`, where the model names one."""
        return None if self.sdhci.hung else self.card.fatal_key


#: :class:`ModelTarget`'s own :meth:`~ModelTarget.read`,
#: :meth:`~ModelTarget.irq_level` and :meth:`~ModelTarget.irq_events`: the
#: shortcuts that skip them (:meth:`~ModelTarget.reader`,
#: :meth:`~ModelTarget.read_run`, :meth:`~ModelTarget.irq_state`) are taken
#: only while they are still these (not overridden by a subclass, not
#: replaced).
#: Registers a guest reads straight from one piece of the controller's state
#: (the attribute, and the index in a list attribute): the ones whose value
#: :meth:`ModelTarget.adopt` can take from QEMU.  The others are computed
#: (PRNSTS's line levels, the data port, SLOT_INT_STATUS).
_ADOPTABLE: dict[Register, tuple[str, int | None]] = {
    H.SDMASYSAD: ("sdmasysad", None), H.BLKSIZE: ("blksize", None),
    H.BLKCNT: ("blkcnt", None), H.ARGUMENT: ("argument", None), H.TRNMOD: ("trnmod", None),
    H.CMDREG: ("cmdreg", None),
    H.RSPREG0: ("rspreg", 0), H.RSPREG1: ("rspreg", 1), H.RSPREG2: ("rspreg", 2),
    H.RSPREG3: ("rspreg", 3),
    H.HOSTCTL: ("hostctl1", None), H.PWRCON: ("pwrcon", None), H.BLKGAP: ("blkgap", None),
    H.WAKCON: ("wakcon", None), H.CLKCON: ("clkcon", None),
    H.TIMEOUTCON: ("timeoutcon", None),
    H.NORINTSTS: ("norintsts", None), H.ERRINTSTS: ("errintsts", None),
    H.NORINTSTSEN: ("norintstsen", None), H.ERRINTSTSEN: ("errintstsen", None),
    H.NORINTSIGEN: ("norintsigen", None), H.ERRINTSIGEN: ("errintsigen", None),
    H.ACMD12ERRSTS: ("acmd12errsts", None), H.HOSTCTL2: ("hostctl2", None),
    H.CAPAB: ("capareg", None), H.MAXCURR: ("maxcurr", None), H.ADMAERR: ("admaerr", None),
    H.ADMASYSADDR: ("admasysaddr", None), H.HCVER: ("hcver", None),
}

_OWN_READ = ModelTarget.read
_OWN_IRQ_LEVEL = ModelTarget.irq_level
_OWN_IRQ_EVENTS = ModelTarget.irq_events
