"""SDMA and ADMA of the SDHCI model (SD Host Controller Spec 3.00, 1.13-1.15).

Data moves between the card and guest memory through the controller's
block buffer (``fifo``), one block size at a time, exactly in the order and
granularity QEMU's sdhci uses, so partial blocks across descriptors, buffer
boundaries and DMA errors leave the same state behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.hwdefs import sdhci as H
from harness.model.sdhci_state import (
    ADMA_DESCS_PER_STEP,
    TRANSFER_DELAY_NS,
    U16,
    U32,
    U64,
    SdhciState,
)


@dataclass
class AdmaDescriptor:
    """One fetched ADMA descriptor."""

    addr: int
    length: int
    attr: int
    incr: int


class SdhciDma(SdhciState):
    """SDMA (single/multi block, buffer boundary) and ADMA1/ADMA2 engines."""

    # -- SDMA -------------------------------------------------------------

    def sdma_transfer(self, from_sysad: bool = False) -> None:
        """Run SDMA; single-block path for one block or a single-block mode.

        Before 10.0, an SDMA started by an SDMASYSAD write chose the path by
        Multi Block Select alone, so one block in multi mode went through the
        multi-block path.
        """
        multi = bool(self.trnmod & H.TRNMOD_MULTI)
        if from_sysad and not self.sdma_rework:
            single = not multi
        else:
            single = self.blkcnt == 1 or not multi
        if single:
            self._sdma_single()
        else:
            self._sdma_multi()

    def _sdma_single(self) -> None:
        """One block between card and memory, then transfer complete."""
        n = self.block_size
        if self.trnmod & H.TRNMOD_READ:
            data = self.card_read(n)
            self.fifo[:n] = data
            self.memory.write(self.sdmasysad, data)
        else:
            data, _ok = self.memory.read(self.sdmasysad, n)
            self.fifo[:n] = data
            self.card_write(data)
        if self.qemu("sdhci.sdma-single-blkcnt"):
            self.blkcnt = (self.blkcnt - 1) & U16
        elif self.trnmod & H.TRNMOD_BLKCNT_EN and self.blkcnt:
            self.blkcnt -= 1
        if self.sdma_rework and self.qemu("sdhci.sdma-dmaint-at-end"):
            self.set_nis(H.NIS_DMAINT)
        self.end_transfer()

    def _sdma_multi(self) -> None:
        """Blocks until Block Count reaches 0 or the SDMA buffer boundary."""
        bs = self.block_size
        boundary = H.sdma_boundary(self.blksize)
        boundary_count = (boundary - self.sdmasysad % boundary) & U32
        infinite = not (self.trnmod & H.TRNMOD_BLKCNT_EN)
        if infinite and self.qemu("sdhci.sdma-infinite-unsupported"):
            return
        if not infinite and not self.blkcnt:
            return
        if infinite and bs == 0:
            return
        if self.qemu("sdhci.sdma-unaligned-no-boundary"):
            page_aligned = self.sdmasysad % boundary == 0
        else:
            page_aligned = True
        reading = bool(self.trnmod & H.TRNMOD_READ)
        self.prnsts |= H.PRNSTS_DATINHIBIT | H.PRNSTS_DATLINEACTIVE
        self.prnsts |= H.PRNSTS_READ_ACTIVE if reading else H.PRNSTS_WRITE_ACTIVE
        while self.blkcnt or infinite:
            if reading and self.data_count == 0:
                self.fifo[:bs] = self.card_read(bs)
            begin = self.data_count
            if boundary_count + begin < bs and page_aligned:
                self.data_count = boundary_count + begin
                boundary_count = 0
            else:
                self.data_count = bs
                boundary_count = (boundary_count - (bs - begin)) & U32
                if reading and self.trnmod & H.TRNMOD_BLKCNT_EN:
                    self.blkcnt = (self.blkcnt - 1) & U16
            n = self.data_count - begin
            if reading:
                self.memory.write(self.sdmasysad, bytes(self.fifo[begin:self.data_count]))
            else:
                data, _ok = self.memory.read(self.sdmasysad, n)
                self.fifo[begin:self.data_count] = data
            self.sdmasysad = (self.sdmasysad + n) & U32
            if self.data_count == bs:
                if not reading:
                    self.card_write(bytes(self.fifo[:bs]))
                    if self.trnmod & H.TRNMOD_BLKCNT_EN:
                        self.blkcnt = (self.blkcnt - 1) & U16
                self.data_count = 0
            if page_aligned and boundary_count == 0:
                break
        if self.sdma_rework and self.qemu("sdhci.sdma-dmaint-at-end"):
            self.set_nis(H.NIS_DMAINT)
            if self.blkcnt == 0 and not infinite:
                self.end_transfer()
            else:
                self.sdma_paused = True
                self.update_irq()
        elif self.blkcnt == 0 and not infinite:
            self.end_transfer()
        else:
            self.set_nis(H.NIS_DMAINT)
            self.sdma_paused = True
            self.update_irq()

    # -- ADMA -------------------------------------------------------------

    def adma_descriptor(self) -> AdmaDescriptor:
        """Fetch the descriptor at ADMASYSADDR in the selected format
        (little endian; unreadable memory reads as zeros)."""
        at = self.admasysaddr
        kind = self.hostctl1 & H.HOSTCTL_DMA_MASK
        if kind == H.HOSTCTL_DMA_ADMA2_32:
            raw, _ok = self.memory.read(at, 8)
            word = int.from_bytes(raw, "little")
            return AdmaDescriptor((word >> 32) & 0xFFFFFFFC, (word >> 16) & U16,
                                  word & 0x7F, H.ADMA2_32_DESC_SIZE)
        if kind == H.HOSTCTL_DMA_ADMA1:
            raw, _ok = self.memory.read(at, 4)
            word = int.from_bytes(raw, "little")
            attr = word & 0x7F
            if (attr & H.ADMA_ACT_MASK) == H.ADMA_ACT_SET:
                length = (word >> 12) & U16
            elif self.adma1_length is not None:
                length = self.adma1_length
            else:
                length = 4096
            return AdmaDescriptor(word & 0xFFFFF000, length, attr, H.ADMA1_DESC_SIZE)
        # ADMA2 64-bit: data_transfer runs do_adma for the three ADMA DMA
        # Selects only, so the one left here is this one
        raw, _ok = self.memory.read(at, 1)
        attr = raw[0] & 0x3F
        raw, _ok = self.memory.read(at + 2, 2)
        length = int.from_bytes(raw, "little")
        raw, _ok = self.memory.read(at + 4, 8)
        return AdmaDescriptor(int.from_bytes(raw, "little"), length, attr,
                              H.ADMA2_64_DESC_SIZE)

    def _adma_error(self) -> None:
        self.raise_error(H.EIS_ADMAERR)

    def _adma_tran(self, d: AdmaDescriptor, length: int) -> tuple[int, bool]:
        """Move up to ``length`` bytes for a Tran descriptor; returns the
        length left over and whether every memory access succeeded."""
        bs = self.block_size
        reading = bool(self.trnmod & H.TRNMOD_READ)
        cnt_en = bool(self.trnmod & H.TRNMOD_BLKCNT_EN)
        self.prnsts |= H.PRNSTS_DATINHIBIT | H.PRNSTS_DATLINEACTIVE
        self.prnsts |= H.PRNSTS_READ_ACTIVE if reading else H.PRNSTS_WRITE_ACTIVE
        addr = d.addr
        if bs == 0:
            # QEMU loops forever here (no progress with a zero block size).
            self.hung = "ADMA transfer with block size 0"
            return 0, True
        while length:
            if reading and self.data_count == 0:
                self.fifo[:bs] = self.card_read(bs)
            begin = self.data_count
            if length + begin < bs:
                self.data_count = length + begin
                length = 0
            else:
                self.data_count = bs
                length -= bs - begin
            if reading:
                ok = self.memory.write(addr, memoryview(self.fifo)[begin:self.data_count])
            else:
                data, ok = self.memory.read(addr, self.data_count - begin)
                self.fifo[begin:self.data_count] = data
            if not ok:
                return length, False
            addr = (addr + self.data_count - begin) & U64
            if self.data_count == bs:
                if not reading:
                    self.card_write(bytes(self.fifo[:bs]))
                self.data_count = 0
                if cnt_en:
                    self.blkcnt = (self.blkcnt - 1) & U16
                    if self.blkcnt == 0:
                        break
        return length, True

    def do_adma(self) -> None:
        """Process up to :data:`ADMA_DESCS_PER_STEP` descriptors, then continue
        on the transfer timer (1.13)."""
        if self.trnmod & H.TRNMOD_BLKCNT_EN and not self.blkcnt:
            self.end_transfer()
            return
        before = self._adma_fingerprint()
        moved = False
        for _ in range(ADMA_DESCS_PER_STEP):
            self.admaerr &= ~H.ADMAERR_LENMISMATCH
            d = self.adma_descriptor()
            if not d.attr & H.ADMA_VALID:
                self.admaerr = (self.admaerr & ~H.ADMAERR_STATE_MASK) | H.ADMAERR_ST_FDS
                self._adma_error()
                self.update_irq()
                return
            moved |= d.attr & H.ADMA_ACT_MASK == H.ADMA_ACT_TRAN
            length = self._adma_act(d)
            if length is None:
                return
            then = self._adma_after(d, length)
            if then == "stop":
                return
            if then == "yield":
                break
        if not moved and self._adma_fingerprint() == before:
            # Only Nop/Link descriptors and nothing changed: every further step
            # would repeat this one (QEMU spins on its 100 ns timer).  Park
            # until something can change: a register access runs a step as the
            # pending timer would, a guest memory write re-arms the timer.
            self.cancel_transfer_timer()
            self.adma_parked = True
            self._park_deadline = self.clock.now + TRANSFER_DELAY_NS
            return
        self.schedule_transfer()

    def _adma_act(self, d: AdmaDescriptor) -> int | None:
        """Descriptor ``d``'s action (SDHC 1.13.4: Tran, Link, Nop, and ADMA1's
        Set); the length it leaves unmoved, or None when the transfer stopped
        (a DMA error QEMU stops on, a hung model)."""
        length = d.length or 65536
        act = d.attr & H.ADMA_ACT_MASK
        if act == H.ADMA_ACT_TRAN:
            length, ok = self._adma_tran(d, length)
            if self.hung:
                return None
            if not ok:
                self.data_count = 0
                if not self.qemu("sdhci.adma-dma-error-continues"):
                    self.admaerr = ((self.admaerr & ~H.ADMAERR_STATE_MASK)
                                    | H.ADMAERR_ST_TFR)
                    self._adma_error()
                    self.update_irq()
                    return None
                self._adma_error()
                self.update_irq()
            else:
                self.admasysaddr = (self.admasysaddr + d.incr) & U64
        elif act == H.ADMA_ACT_LINK:
            self.admasysaddr = d.addr & U64
        else:
            if (act == H.ADMA_ACT_SET and (self.hostctl1 & H.HOSTCTL_DMA_MASK)
                    == H.HOSTCTL_DMA_ADMA1
                    and not self.qemu("sdhci.adma1-set-length-ignored")):
                self.adma1_length = d.length or 65536
            self.admasysaddr = (self.admasysaddr + d.incr) & U64
        if act != H.ADMA_ACT_TRAN and not self.qemu("sdhci.adma-end-on-nop-mismatch"):
            length = 0
        return length

    def _adma_after(self, d: AdmaDescriptor, length: int) -> Literal["stop", "yield", "next"]:
        """After descriptor ``d``: its interrupt (Int), and the end of the
        transfer (End, or the block count reached) with a length mismatch
        when ``length`` is left; ``"stop"`` (ended), ``"yield"`` (an
        interrupt went out mid-chain) or ``"next"``."""
        if d.attr & H.ADMA_INT:
            self.set_nis(H.NIS_DMAINT)
            if self.update_irq() and not d.attr & H.ADMA_END:
                return "yield"
        if ((self.trnmod & H.TRNMOD_BLKCNT_EN and self.blkcnt == 0)
                or d.attr & H.ADMA_END):
            if length or (d.attr & H.ADMA_END and self.trnmod & H.TRNMOD_BLKCNT_EN
                          and self.blkcnt != 0):
                self.admaerr |= H.ADMAERR_LENMISMATCH | H.ADMAERR_ST_TFR
                self._adma_error()
                self.update_irq()
            self.adma1_length = None
            self.end_transfer()
            return "stop"
        return "next"

    def _adma_fingerprint(self) -> tuple[int, ...]:
        return (self.admasysaddr, self.blkcnt, self.data_count, self.prnsts, self.norintsts,
                self.errintsts, self.admaerr, int(self.irq))

    def unpark_adma(self) -> None:
        """Re-arm a parked ADMA continuation (guest memory may have changed)
        at the next tick of the 100 ns grid QEMU's timer would be on."""
        if not self.adma_parked:
            return
        now = self.clock.now
        deadline = self._park_deadline
        if now >= deadline:
            deadline += ((now - deadline) // TRANSFER_DELAY_NS + 1) * TRANSFER_DELAY_NS
        self.schedule_transfer(deadline - now)
