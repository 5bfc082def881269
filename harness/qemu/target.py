"""``QemuTarget``: the Target interface over a real QEMU with sdhci-pci.

QEMU is started with ``-device sdhci-pci -device sd-card`` on a ``q35`` or
``pc`` machine; the target finds the controller on PCI bus 0, maps its BAR0,
turns on memory decoding and bus mastering, routes INTx to an IOAPIC input
and intercepts that input, so that :meth:`irq_level` is the level of the
controller's interrupt line as QEMU drives it and :meth:`irq_events` its
changes.

The card image is never written: the target works on a private sparse copy
(or, for a read-only card, on the image opened read-only).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from harness import images
from harness.hwdefs import pci as pcidefs
from harness.hwdefs.boards import Board
from harness.machine import CARD_ID, DRIVE_ID, Machine
from harness.qemu import board, pci
from harness.qemu.argv import replay_argv
from harness.qemu.qtest import (
    B64_CHUNK,
    b64read_lines,
    b64write_lines,
    fmt_clock_step,
    fmt_mmio_read,
    fmt_mmio_write,
    parse_int,
)
from harness.qemu.session import QemuError, QemuSession
from harness.target import check_access, check_clock_step, check_memory

#: Guest RAM below this is one block on both q35 and pc (no PCI hole):
#: a reused machine with more RAM is launched afresh instead.
REUSE_RAM_LIMIT = 1 << 31
#: The legacy VGA window and BIOS ROM shadow, never plain RAM after reset.
_LEGACY_HOLE = (0xA0000, 0x100000)
#: Bytes zeroed by one qtest ``memset``.
_SCRUB_CHUNK = 1 << 20
#: ``fallocate`` mode FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE.
_PUNCH = 0x02 | 0x01
_libc = ctypes.CDLL(None, use_errno=True)


class QemuTargetError(QemuError):
    """The machine QEMU built is not one the target can drive."""


def copy_image(src: Path, dst_dir: Path, stem: str = "card") -> Path:
    """A private, sparse copy of ``src`` in ``dst_dir``: its data extents
    copied in the kernel (``copy_file_range``, a reflink where the file
    system shares blocks), its holes left holes."""
    dst = dst_dir / (stem + (src.suffix or ".img"))
    try:
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            size = os.fstat(fi.fileno()).st_size
            short = copy_extents(fi, fo, images.data_extents(src))
            if short is not None:
                raise OSError(f"short copy at {short:#x}")
            fo.truncate(size)
    except OSError as e:
        raise QemuTargetError(f"cannot copy the card image {src}: {e}") from e
    return dst


def mark_unwritten(path: Path) -> None:
    """Set ``path``'s modification time to the epoch: any write QEMU makes
    to it afterwards (``pwrite``, a discard, a write of zeroes) sets it to
    the present, so :func:`unwritten` tells whether QEMU wrote the copy."""
    os.utime(path, ns=(0, 0))


def unwritten(path: Path) -> bool:
    """Whether nothing wrote ``path`` since :func:`mark_unwritten`."""
    return path.stat().st_mtime_ns == 0


def rewrite_copy(src: Path, dst: Path) -> None:
    """Put all of ``src``'s bytes back into ``dst``, a copy of the same size
    (in place, QEMU keeping it open): ``src``'s data extents copied in the
    kernel, its holes punched in ``dst``.  Raises OSError when it cannot."""
    extents = images.data_extents(src)
    with open(src, "rb") as fi, open(dst, "r+b") as fo:
        size = os.fstat(fi.fileno()).st_size
        if os.fstat(fo.fileno()).st_size != size:
            raise OSError(f"{dst} is no longer {size} bytes")
        if copy_extents(fi, fo, extents) is not None:
            raise OSError(f"short copy from {src}")
        pos = 0
        for off, length in [*extents, (size, 0)]:
            if off > pos and _libc.fallocate(fo.fileno(), _PUNCH, ctypes.c_long(pos),
                                             ctypes.c_long(off - pos)) != 0:
                raise OSError(ctypes.get_errno(), f"cannot punch {dst}")
            pos = off + length


def copy_extents(fi: BinaryIO, fo: BinaryIO, extents: list[tuple[int, int]]) -> int | None:
    """Copy each ``(offset, length)`` extent of ``fi`` to the same offset of
    ``fo``, in the kernel (``copy_file_range``); the offset where ``fi``
    ended first, or None."""
    for off, length in extents:
        done = 0
        while done < length:
            n = os.copy_file_range(fi.fileno(), fo.fileno(), length - done,
                                   off + done, off + done)
            if n <= 0:
                return off + done
            done += n
    return None


def read_container(path: Path, fmt: str, offset: int, length: int) -> bytes:
    """Guest-visible bytes of a qcow2 (or other) image, through ``qemu-io``
    (Debian's qemu-utils), sharing the image with the running QEMU."""
    qemu_io = shutil.which("qemu-io")
    if qemu_io is None:
        raise QemuTargetError("qemu-io not found: apt-get install qemu-utils")
    out = bytearray()
    step = 4 << 20
    for pos in range(offset, offset + length, step):
        n = min(step, offset + length - pos)
        text = subprocess.run(
            [qemu_io, "-U", "-r", "-f", fmt, "-c", f"read -v {pos} {n}", str(path)],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
        for line in text.splitlines():
            head, sep, rest = line.partition(":  ")
            if sep and len(head) == 8:
                out += bytes.fromhex(rest[:48].strip())
    return bytes(out)


class QemuTarget:
    """Target over a QEMU process building ``machine`` (see
    :class:`harness.target.Target`).

    The card image of ``machine`` is never written: QEMU gets a private
    sparse copy, or, for a read-only image, the image itself opened
    read-only.  :attr:`machine` keeps the description as given (image path
    made absolute): it is what a reproducer records.
    """

    def __init__(
        self,
        binary: str | Path,
        machine: Machine | None = None,
        *,
        accel: str = "auto",
        timeout: float = 10.0,
        name: str | None = None,
        reusable: bool = False,
    ) -> None:
        machine = (machine or Machine()).resolved()
        self.name = name or f"qemu:{Path(binary).name}"
        self.binary = Path(binary)
        self.machine = machine
        self.bar0 = machine.bar0
        #: Virtual time of the last :meth:`clock_step`, in ns (0 at start).
        self.now = 0
        self._workdir = Path(tempfile.mkdtemp(prefix="sdqtest-card-"))
        #: Virtual time of the last reset (see :meth:`reuse`): clock steps
        #: answer the time since, so the model's clock lines up.
        self.clock_base = 0
        #: Scenarios this process has served (1 after a fresh launch).
        self.uses = 1
        #: The launch's PCI set-up: each qtest command and its answer.
        self._setup_log: list[tuple[str, str]] = []
        self._view_key: tuple[str, int, int] | None = None
        #: The file QEMU opens (a private copy unless read-only), if any.
        self.image: Path | None = None
        #: The source image whose bytes :attr:`image` is known to hold again
        #: (:meth:`restore_image`), so that the next use may keep it.
        self._clean_for: Path | None = None
        #: The source image :attr:`image` is a private copy of.
        self._copy_of: Path | None = None
        #: A board's interrupt intercept lines: they outlive a reset, so each
        #: reuse's trace starts with them and replays on a fresh QEMU.
        self._intercept: list[str] = []
        #: Device state a reset does not clear that the last user says it
        #: left (see :mod:`harness.fuzz.residue`): a reuse keeps it, a
        #: fresh launch has none.
        self.residue: frozenset[str] = frozenset()
        self.image_format = machine.image.format if machine.image else "raw"
        self.source_image = machine.image.path if machine.image else None
        try:
            if machine.sdhci is None:
                raise QemuTargetError("the machine has no sdhci-pci controller to drive")
            if machine.board is not None:
                self.bar0 = board.by_name(machine.board).base
            self.image, run = self._card_copy(machine)
            self.session = QemuSession(binary, run, accel=accel, timeout=timeout,
                                       ram_file=reusable)
            self.session.start()
            self.qtest = self.session.qtest
            if machine.board is not None:  # a board's controller: fixed base, its IRQ line
                self.irq_line = board.watch_irq(self.session, board.by_name(machine.board))
                self._intercept = list(self.qtest.trace)
            else:
                self._setup_pci()
        except BaseException:
            self.close()
            raise

    def _card_copy(self, machine: Machine) -> tuple[Path | None, Machine]:
        """The file QEMU should open for ``machine``'s card (a fresh private
        copy unless read-only) and the machine naming it."""
        if machine.image is None or machine.image.path is None:
            return None, machine
        src = machine.image.path
        if not src.is_file():
            raise QemuTargetError(f"card image {src} does not exist")
        if machine.image.readonly:
            return src, machine
        if self.image is not None and self._copy_clean(src, machine.image.format):
            return self.image, machine.with_image_path(self.image)
        dst = copy_image(src, self._workdir, f"card-{self.uses}")
        mark_unwritten(dst)
        self._copy_of = src.resolve()
        return dst, machine.with_image_path(dst)

    def _copy_clean(self, src: Path, fmt: str) -> bool:
        """Whether the current private copy holds ``src``'s bytes for the
        next use: restored by :meth:`restore_image`, written by nobody since
        it was made (:func:`unwritten`), or, a raw copy QEMU wrote, put back
        whole in place (:func:`rewrite_copy`: QEMU's raw driver keeps no
        card data of its own; a container's metadata cache it does)."""
        dst = self.image
        if dst is None or dst.parent != self._workdir or self._copy_of != src.resolve():
            return False
        if self._clean_for == self._copy_of:
            return True
        try:
            if unwritten(dst):
                return True
            if fmt != "raw" or self.image_format != "raw":
                return False
            rewrite_copy(src, dst)
            mark_unwritten(dst)
        except OSError:
            return False
        return True

    def restore_image(self, extents: list[tuple[int, int]]) -> None:
        """Put the source's bytes back over ``extents`` of QEMU's private
        copy, so that the next use of this process with the same source
        image takes the copy as it is instead of a fresh one.

        For the runner only, once the run's image compare found QEMU's copy
        equal to the model's card everywhere: the model's card differs from
        the source only in the extents it wrote (``extents``), so after
        this the copy holds the source's bytes.  A raw copy only; anything
        that fails leaves the copy marked unclean (a fresh copy next time)."""
        self._clean_for = None
        src, dst = self.source_image, self.image
        if src is None or dst is None or self.image_format != "raw" or dst == src \
                or dst.parent != self._workdir:
            return
        try:
            with open(src, "rb") as fi, open(dst, "r+b") as fo:
                if copy_extents(fi, fo, images.merge_extents(extents)) is not None:
                    return  # past the source's end: not restorable
            mark_unwritten(dst)
        except OSError:
            return
        self._clean_for = src.resolve()

    def reuse(self, machine: Machine) -> None:
        """Make this process what a fresh launch of ``machine`` would be.

        ``machine`` may differ from the current one in its card image only
        (see :func:`harness.qemu.pool.reuse_key`).  The card's private copy
        is kept where it holds the source's bytes again (:meth:`_copy_clean`:
        nobody wrote it, :meth:`restore_image`, or put back in place), else a
        fresh copy is swapped in with QMP ``blockdev-change-medium``;
        ``system_reset`` resets the controller, the card (which re-reads
        its size from the new medium) and PCI config; guest RAM is zeroed
        (:meth:`_reset_with_ram_zeroed`); the IRQ line must be low again; PCI is
        programmed as at launch; and virtual time is counted from here
        (:attr:`clock_base`), since QEMU's clock never goes back.  The qtest
        trace starts over, so a reproducer replays on a fresh QEMU.
        Raises :class:`QemuError` when any of that fails: the caller then
        launches afresh.
        """
        machine = machine.resolved()
        if machine.ram > REUSE_RAM_LIMIT:
            raise QemuTargetError(f"{machine.ram >> 20} MiB of RAM is not one block to scrub")
        self.uses += 1
        old = self.image
        new, _ = self._card_copy(machine)
        self._clean_for = None  # the run about to start may write it
        s = self.session
        # The copy kept as it is (restore_image) and still inserted: QEMU has
        # that file open already, and system_reset resets the card on it.
        kept = new is not None and new == old and not getattr(self, "_ejected", False)
        if new is not None and machine.image is not None and not kept:
            s.qmp_cmd("blockdev-change-medium", **self._medium(), filename=str(new),
                      format=machine.image.format,
                      **{"read-only-mode": "read-only" if machine.image.readonly else "retain"})
        self.image = new
        self._ejected = False
        if old is not None and old != new and old.parent == self._workdir:
            old.unlink(missing_ok=True)
        q = self.qtest
        self._reset_with_ram_zeroed(machine)
        # One nanosecond on (a zero step is refused): reads the clock and
        # drains the IRQ lines the reset sent (any answer would drain them).
        if s.has_clock:
            self.clock_base = q.clock_step(1)
        else:
            q.endianness()
        if q.irq_levels.get(self.irq_line, False):
            raise QemuTargetError("the controller's interrupt line stayed raised across "
                                  "system_reset")
        q.irq_events.clear()
        q.trace.clear()
        q.trace += self._intercept
        self.machine = machine
        self.source_image = machine.image.path if machine.image else None
        self.image_format = machine.image.format if machine.image else "raw"
        if machine.board is None:  # a board's IRQ intercept outlives the reset
            self._replay_setup()

    def _reset_with_ram_zeroed(self, machine: Machine) -> None:
        """``system_reset`` with guest RAM zeroed: the shared RAM file
        punched before the reset (which puts back any ROM blob in RAM) and
        a board's on-chip memories, outside that file, by qtest ``memset``;
        without the file, all of RAM by ``memset`` (a PC's outside the
        legacy VGA/BIOS hole)."""
        s = self.session
        if s.can_scrub:
            s.scrub_ram()
            self._system_reset(machine)
            by_memset = board.other_ram_ranges(machine)
        else:
            self._system_reset(machine)
            by_memset = board.ram_ranges(machine) or ((0, _LEGACY_HOLE[0]),
                                                      (_LEGACY_HOLE[1], machine.ram))
        for lo, hi in by_memset:
            self.qtest.pipeline(f"memset {a:#x} {min(_SCRUB_CHUNK, hi - a):#x} 0"
                                for a in range(lo, hi, _SCRUB_CHUNK))

    def _system_reset(self, machine: Machine) -> None:
        """Reset the machine as QMP ``system_reset`` does.  A PC's through
        its chipset's Reset Control Register (a qtest ``outb``, a tenth of
        QMP's round trip): QEMU asks for the same reset either way (only
        the cause its RESET event names differs) and does it in its main
        loop before it reads the next qtest command, which the caller's
        next round trip is.  A board's through QMP."""
        if machine.board is not None:
            self.session.system_reset()
            return
        self.qtest.out(1, pcidefs.RESET_CONTROL_PORT,
                       pcidefs.RESET_CONTROL_RST_CPU | pcidefs.RESET_CONTROL_SYS_RST)

    def _medium(self) -> dict[str, str]:
        """How QMP names the card's medium: the card's qdev id, or for a board's
        own card (no id) its drive."""
        return {"id": CARD_ID} if self.machine.board is None else {"device": DRIVE_ID}

    def set_card_inserted(self, inserted: bool) -> None:
        """Eject the card's medium (QMP ``eject``) or put the run's image
        back (``blockdev-change-medium``), as a management layer does; the
        card and controller see a media change.  Nothing when the medium is
        already so.  QMP is not in the qtest trace: a reproducer of a run
        with a media change needs sdqtest (``sdqtest check --scenario``)."""
        ejected = getattr(self, "_ejected", False)
        if inserted != ejected:
            return
        s = self.session
        which = self._medium()
        if not inserted:
            s.qmp_cmd("eject", force=True, **which)
        else:
            if self.image is None:
                raise QemuTargetError("no medium to insert: this card has no image")
            s.qmp_cmd("blockdev-change-medium", filename=str(self.image),
                      format=self.image_format, **which)
        self._ejected = not inserted

    @property
    def readonly(self) -> bool:
        return self.machine.image is not None and self.machine.image.readonly

    def _replay_setup(self) -> None:
        """The launch's PCI set-up again after a reset, in one round trip:
        the same qtest commands (so the same trace), each of whose answers
        must be the launch's (else the bus is not what it was: the caller
        launches afresh).  Without a record of the launch's, as it did."""
        if not self._setup_log:
            self._setup_pci()
            return
        answers = self.qtest.pipeline([line for line, _ in self._setup_log])
        if answers != [answer for _, answer in self._setup_log]:
            raise QemuTargetError("PCI bus 0 is not what it was at launch")

    def _setup_pci(self) -> None:
        """Find sdhci-pci, map BAR0, enable it, route its INTx; each qtest
        command and its answer kept for :meth:`_replay_setup`."""
        q = self.qtest
        log: list[tuple[str, str]] = []
        command, own = q.command, vars(q).get("command")

        def keep(line: str) -> str:
            answer = command(line)
            log.append((line, answer))
            return answer

        q.command = keep  # type: ignore[method-assign]
        try:
            self._configure_pci()
        finally:
            if own is None:
                del q.command
            else:
                q.command = own  # type: ignore[method-assign]
        self._setup_log = log

    def _configure_pci(self) -> None:
        """:meth:`_setup_pci`'s commands."""
        cfg = pci.PciConfig(self.qtest)
        functions = cfg.scan_bus0()
        up = pci.enable_sdhci(cfg, functions, self.bar0)
        if up is None:
            raise QemuTargetError(
                "no sdhci-pci (1b36:0007) on PCI bus 0; found: "
                + ", ".join(str(f) for f in functions)
            )
        self.pci_function, self.irq_line = up
        self.pci = cfg
        self.qtest.irq_intercept_in("ioapic")

    # -- Target --------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        return self.qtest.mmio_read(size, self.bar0 + offset)

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        self.qtest.mmio_write(size, self.bar0 + offset, value & ((1 << (8 * size)) - 1))

    def read_many(self, accesses: Sequence[tuple[int, int]]) -> list[int]:
        """Pipelined register reads: ``[(offset, size), ...]`` -> values."""
        for off, size in accesses:
            check_access(off, size)
        answers = self.qtest.pipeline(
            fmt_mmio_read(size, self.bar0 + off) for off, size in accesses
        )
        return [parse_int(a) for a in answers]

    def write_many(self, accesses: Sequence[tuple[int, int, int]]) -> None:
        """Pipelined register writes: ``[(offset, size, value), ...]``."""
        for off, size, _value in accesses:
            check_access(off, size)
        self.qtest.pipeline(
            fmt_mmio_write(size, self.bar0 + off, value & ((1 << (8 * size)) - 1))
            for off, size, value in accesses
        )

    # -- the same operations as qtest lines, for a caller that pipelines them --

    def op_lines(self, op: str, args: tuple[Any, ...]) -> list[str]:
        """The qtest lines the Target method ``op(*args)`` sends, validated as
        that method validates them (the same errors), without sending them:
        ``read``, ``write``, ``mem_read``, ``mem_write`` and ``clock_step``
        with an explicit step.  Pass their answers to :meth:`op_value`."""
        if op == "read":
            offset, size = args
            check_access(offset, size)
            return [fmt_mmio_read(size, self.bar0 + offset)]
        if op == "write":
            offset, size, value = args
            check_access(offset, size)
            return [fmt_mmio_write(size, self.bar0 + offset, value & ((1 << (8 * size)) - 1))]
        if op == "mem_read":
            addr, length = args
            check_memory(addr, length)
            return b64read_lines(addr, length)
        if op == "mem_write":
            addr, data = args
            check_memory(addr, len(data))
            return b64write_lines(addr, data)
        if op == "clock_step" and args[0] is not None:
            check_clock_step(args[0])
            if not self.session.has_clock:
                raise QemuTargetError("no qtest clock: clock_step goes through the session")
            return [fmt_clock_step(args[0])]
        raise ValueError(f"{op}{args!r} cannot be pipelined")

    def op_value(self, op: str, answers: Sequence[str]) -> Any:
        """What the Target method ``op`` returns, from the answers to its
        :meth:`op_lines` (a clock step also moves :attr:`now`)."""
        if op == "read":
            return int(answers[0][3:], 16)
        if op == "mem_read":
            return b"".join(base64.b64decode(a.split()[1]) for a in answers)
        if op == "clock_step":
            self.now = parse_int(answers[0])
            return self.now - self.clock_base
        return None

    def mem_read(self, addr: int, length: int) -> bytes:
        check_memory(addr, length)
        out = bytearray()
        for pos in range(0, length, B64_CHUNK):
            out += self.qtest.b64read(addr + pos, min(B64_CHUNK, length - pos))
        return bytes(out)

    def mem_write(self, addr: int, data: bytes) -> None:
        check_memory(addr, len(data))
        for pos in range(0, len(data), B64_CHUNK):
            self.qtest.b64write(addr + pos, data[pos : pos + B64_CHUNK])

    def clock_step(self, ns: int | None = None) -> int:
        check_clock_step(ns)
        self.now = self.session.clock_step(ns)  # QEMU's own time (a migration carries it)
        return self.now - self.clock_base

    @property
    def board(self) -> Board | None:
        """The board this target's machine is (None: a PC with sdhci-pci)."""
        return self.machine.board_def

    def irq_level(self) -> bool:
        return self.qtest.irq_levels.get(self.irq_line, False)

    def irq_events(self) -> list[bool]:
        """The ``IRQ raise``/``IRQ lower`` lines QEMU sent for the watched
        IOAPIC input since the last call (see :class:`harness.target.IrqEvents`);
        events of other inputs are dropped."""
        events = self.qtest.irq_events
        out = [level for n, level in events if n == self.irq_line]
        events.clear()
        return out

    def image_read(self, offset: int, length: int) -> bytes:
        if self.image is None:
            return b""
        path = self.image if self.image_format == "raw" else self._raw_view(self.image)
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def _raw_view(self, image: Path) -> Path:
        """The guest-visible bytes of a container image as a sparse raw file,
        made with ``qemu-img convert -U`` (sharing the image with the running
        QEMU, whose container metadata is written through) and made again
        whenever the container's size or mtime changed.  A file modified in
        the last 50 ms is converted every time: its mtime, kept at the
        kernel's coarse clock, might not move on a write that follows."""
        now = time.time()
        st = image.stat()
        key = (str(image), st.st_mtime_ns, st.st_size)
        view = self._workdir / "container-view.raw"
        if self._view_key != key:
            qemu_img = shutil.which("qemu-img")
            if qemu_img is None:
                raise QemuTargetError("qemu-img not found: apt-get install qemu-utils")
            try:
                subprocess.run([qemu_img, "convert", "-U", "-f", self.image_format, "-O", "raw",
                                str(image), str(view)], check=True, capture_output=True,
                               timeout=600)
            except subprocess.CalledProcessError as e:
                raise QemuTargetError(f"qemu-img convert {image} failed: "
                                      f"{e.stderr.decode(errors='replace').strip()}") from e
            self._view_key = key if now - st.st_mtime > 0.05 else None
        return view

    def written_upto(self) -> int | None:
        """The card offset after the greatest byte QEMU wrote to the card's
        current medium (QMP ``query-blockstats`` ``wr_highest_offset``, kept
        by the block layer for every write); ``None`` if QEMU does not say."""
        try:
            for e in self.session.qmp_cmd("query-blockstats"):
                if e.get("device") == DRIVE_ID or e.get("qdev") == CARD_ID:
                    return int(e["stats"]["wr_highest_offset"])
        except (QemuError, KeyError, TypeError, ValueError):
            return None
        return None

    def qom_get(self, path: str, prop: str) -> Any:
        return self.session.qmp_cmd("qom-get", path=path, property=prop)

    def replay_argv(self) -> list[str]:
        """The QEMU command line that replays :attr:`trace` from stdin: the
        same machine and accelerator with ``-qtest stdio``, the card image
        (the original, not the private copy) opened with ``snapshot=on``."""
        return replay_argv(self.binary, self.machine, accel=self.session.accel or "qtest")

    @property
    def trace(self) -> list[str]:
        """Every qtest command sent so far, replayable with ``-qtest stdio``."""
        return list(self.qtest.trace)

    @property
    def trace_len(self) -> int:
        """How many commands :attr:`trace` holds (without copying it)."""
        return len(self.qtest.trace)

    def close(self) -> None:
        with contextlib.suppress(AttributeError):
            self.session.close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> QemuTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

