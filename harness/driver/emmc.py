"""The host driver for an eMMC device: initialisation, EXT_CSD, partitions, RPMB.

Follows JESD84-B51 as publicly described: identification (6.4: CMD0, CMD1
until the device is powered up, CMD2, CMD3 with the host's RCA), CMD6
SWITCH of EXT_CSD bytes (6.6.1), partition selection through
PARTITION_CONFIG (6.2.5) and RPMB request/response frames (6.6.22).  The
controller side is :class:`~harness.driver.host.HostDriver`'s; only the
command set and its response types differ.  The driver reports, it does
not judge.
"""

from __future__ import annotations

from harness.driver.host import CardInfo, HostDriver
from harness.driver.results import CommandResult, DriverError, Mode, Transfer
from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.emmc import RpmbRequest
from harness.hwdefs.sd import Resp

#: The RCA this driver assigns (any non-zero value; JESD84-B51 6.4.4).
DEFAULT_RCA = 0x0002


class EmmcDriver(HostDriver):
    """HostDriver speaking the eMMC command set."""

    def cmd(self, index: int, arg: int = 0, resp: Resp | None = None,
            data: Transfer | None = None, *, cmd_type: int = H.CMD_TYPE_NORMAL) -> CommandResult:
        """Send CMD``index``; the response type defaults to the eMMC standard's."""
        r = resp if resp is not None else E.command_resp(index)
        return self.command(index, arg, r, data, cmd_type=cmd_type)

    # -- identification (JESD84-B51 6.4) --------------------------------------------

    def init_emmc(self, *, rca: int = DEFAULT_RCA, ocr: int = E.CMD1_HOST_OCR,
                  step_ns: int = 1_000_000, tries: int = 100, block_len: int = 512,
                  freq_hz: int = 25_000_000) -> CardInfo:
        """CMD0, CMD1 enquiry then CMD1 until powered up, CMD2, CMD3 (``rca``),
        CMD9, CMD7, CMD16.  Raises :class:`DriverError` on a failed step."""
        info = CardInfo(block_len=block_len)
        self.card = info
        steps = info.steps
        steps.append(self.cmd(E.index("GO_IDLE_STATE"), 0))
        enq = self._must(self.cmd(E.index("SEND_OP_COND"), 0), "CMD1 enquiry")
        steps.append(enq)
        for _ in range(tries):
            r1 = self._must(self.cmd(E.index("SEND_OP_COND"), ocr), "CMD1")
            steps.append(r1)
            if r1.r1 & S.OCR_BUSY:
                info.ocr = r1.r1
                break
            self.step(step_ns)
        else:
            raise DriverError("device did not power up (CMD1 busy never set)", steps[-1])
        r2 = self._must(self.cmd(E.index("ALL_SEND_CID"), 0), "CMD2")
        steps.append(r2)
        info.cid = r2.r2
        steps.append(self._must(self.cmd(E.index("SET_RELATIVE_ADDR"), rca << 16), "CMD3"))
        info.rca = rca
        r9 = self._must(self.cmd(E.index("SEND_CSD"), rca << 16), "CMD9")
        steps.append(r9)
        info.csd = r9.r2
        self.set_clock(freq_hz)
        steps.append(self._must(self.cmd(E.index("SELECT_DESELECT_CARD"), rca << 16), "CMD7"))
        steps.append(self._must(self.cmd(E.index("SET_BLOCKLEN"), block_len), "CMD16"))
        return info

    # -- EXT_CSD and SWITCH (JESD84-B51 6.6.1, 7.4) ------------------------------------

    def send_ext_csd(self, *, mode: Mode = Mode.PIO) -> CommandResult:
        """CMD8: the 512-byte EXT_CSD in ``.data``."""
        return self._read_data(E.index("SEND_EXT_CSD"), 0, E.EXT_CSD_BYTES, mode=mode)

    def switch(self, access: int, index: int, value: int, cmd_set: int = 0) -> CommandResult:
        """CMD6 SWITCH (R1b)."""
        return self.cmd(E.index("SWITCH"), E.switch_arg(access, index, value, cmd_set))

    def select_partition(self, partition: int, *, boot_bits: int = 0) -> CommandResult:
        """PARTITION_CONFIG <- ``boot_bits | partition`` (WRITE_BYTE)."""
        return self.switch(E.SwitchAccess.WRITE_BYTE, E.PARTITION_CONFIG,
                           (boot_bits & ~E.PARTITION_ACCESS_MASK) | partition)

    def sleep(self) -> CommandResult:
        """Deselect (to stand-by) then CMD5 with the sleep bit."""
        self.deselect()
        return self.cmd(E.index("SLEEP_AWAKE"), (self.card.rca << 16) | E.CMD5_SLEEP)

    def erase(self, first: int, last: int, *, arg: int = 0) -> CommandResult:
        """CMD35, CMD36, CMD38 (``arg``: erase, trim, discard) over blocks
        ``first..last``; CMD38's result with CMD35/36 in ``related``."""
        r35 = self.cmd(E.index("ERASE_GROUP_START"), self.address(first))
        if r35.error:
            return r35
        r36 = self.cmd(E.index("ERASE_GROUP_END"), self.address(last))
        if r36.error:
            r36.related.insert(0, r35)
            return r36
        r38 = self.cmd(E.index("ERASE"), arg)
        r38.related[:0] = [r35, r36]
        return r38

    # -- RPMB (JESD84-B51 6.6.22) ----------------------------------------------------

    def rpmb_send(self, frame: bytes, *, mode: Mode = Mode.PIO,
                  count: int = 1) -> CommandResult:
        """CMD23 (``count``) then CMD25 writing one request frame."""
        return self.write_blocks(0, frame, mode=mode, block_size=E.RPMB_FRAME_BYTES,
                                 stop="cmd23", multi=True) if count == 1 else \
            self._rpmb_send_counted(frame, mode, count)

    def _rpmb_send_counted(self, frame: bytes, mode: Mode, count: int) -> CommandResult:
        pre = self.cmd(E.index("SET_BLOCK_COUNT"), count)
        res = self.write_blocks(0, frame, mode=mode, block_size=E.RPMB_FRAME_BYTES,
                                stop="none", multi=True)
        res.related.insert(0, pre)
        return res

    def rpmb_receive(self, count: int = 1, *, mode: Mode = Mode.PIO) -> CommandResult:
        """CMD23 (``count``) then CMD18 reading ``count`` result frames."""
        return self.read_blocks(0, count, mode=mode, block_size=E.RPMB_FRAME_BYTES,
                                stop="cmd23", multi=True)

    def rpmb_result_request(self, *, mode: Mode = Mode.PIO) -> CommandResult:
        """A READ_RESULT request then the result frame."""
        res = self.rpmb_send(E.rpmb_frame(req_resp=RpmbRequest.READ_RESULT), mode=mode)
        if res.error:
            return res
        return self.rpmb_receive(mode=mode)

    def rpmb_program_key(self, key: bytes, *, mode: Mode = Mode.PIO) -> CommandResult:
        """Program the authentication key; returns the result frame's read."""
        res = self.rpmb_send(E.rpmb_frame(key_mac=key, req_resp=RpmbRequest.PROGRAM_KEY),
                             mode=mode)
        if res.error:
            return res
        return self.rpmb_result_request(mode=mode)

    def rpmb_read_counter(self, nonce: bytes | None = None, *,
                          mode: Mode = Mode.PIO) -> CommandResult:
        """Read the write counter (the response frame, MAC under the key)."""
        res = self.rpmb_send(E.rpmb_frame(nonce=bytes(16) if nonce is None else nonce,
                                          req_resp=RpmbRequest.READ_COUNTER), mode=mode)
        if res.error:
            return res
        return self.rpmb_receive(mode=mode)

    @staticmethod
    def rpmb_write_frame(key: bytes, address: int, data: bytes, counter: int,
                         *, mac: bytes | None = None) -> bytes:
        """An authenticated data write request; ``mac`` replaces the right one."""
        frame = E.rpmb_frame(data=data, write_counter=counter, address=address, block_count=1,
                             req_resp=RpmbRequest.AUTH_WRITE)
        good = E.rpmb_mac(key, [frame])
        return E.rpmb_frame(key_mac=good if mac is None else mac, data=data,
                            write_counter=counter, address=address, block_count=1,
                            req_resp=RpmbRequest.AUTH_WRITE)

    def rpmb_auth_write(self, frame: bytes, *, mode: Mode = Mode.PIO) -> CommandResult:
        """Send an authenticated write frame then read its result."""
        res = self.rpmb_send(frame, mode=mode)
        if res.error:
            return res
        return self.rpmb_result_request(mode=mode)

    def rpmb_auth_read(self, address: int, count: int, nonce: bytes, *,
                       mode: Mode = Mode.PIO) -> CommandResult:
        """An authenticated read request then ``count`` data frames."""
        res = self.rpmb_send(E.rpmb_frame(nonce=nonce, address=address, block_count=count,
                                          req_resp=RpmbRequest.AUTH_READ), mode=mode)
        if res.error:
            return res
        return self.rpmb_receive(count, mode=mode)


def frames_of(res: CommandResult) -> list[bytes]:
    """The 512-byte frames a read returned."""
    data = res.data or b""
    return [data[i:i + E.RPMB_FRAME_BYTES] for i in range(0, len(data), E.RPMB_FRAME_BYTES)]
