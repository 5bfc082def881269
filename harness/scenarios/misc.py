"""Card registers and functions: CID/CSD/SCR/SD status, CMD6, lock/unlock,
tuning, ACMD22, CMD56 (PLS 4.3.7, 4.3.10, 4.10.2, 5)."""

from __future__ import annotations

from harness.driver import host as D
from harness.driver import ops
from harness.driver.results import Mode, Transfer
from harness.hwdefs import sd as S
from harness.hwdefs.sd import Resp
from harness.ledger import entry
from harness.scenarios.common import ready, test_data
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GEN_CMD = S.index("GEN_CMD")


@scenario("card-registers", "card", needs_clock=True)
def card_registers(t: Target, ctx: Context) -> None:
    """Initialise, then read OCR, CID, CSD (CMD9/CMD10 in stand-by), SCR
    (ACMD51) and SD status (ACMD13); every response and byte compared."""
    d = ready(t)
    d.read_scr()
    d.read_sd_status()
    d.deselect()
    d.send_cid()
    d.send_csd()
    d.select()
    d.send_status()


@scenario("switch-function", "card", needs_clock=True)
def _switch(t: Target, ctx: Context) -> None:
    """CMD6 mode 0 (check) and mode 1 (switch) for each function group,
    including unsupported functions (PLS 4.3.10)."""
    d = ready(t)
    d.switch_function(0)
    for group, fn in ((1, 1), (1, 0), (2, 1), (1, 5), (3, 1), (4, 2)):
        d.switch_function(0, {group: fn})
        d.switch_function(1, {group: fn})
        d.send_status()
    d.switch_function(1, {1: 0}, data_mode=Mode.SDMA)


def _lock_sequence(t: Target, block: int | None) -> None:
    """Set a password, lock, what a locked card refuses, unlock with a wrong
    then the right password, clear it, force erase (PLS 4.3.7).  ``block``
    pads each lock card data structure to that many bytes (CMD16 sets it)."""
    d = ready(t)
    pw = b"sdqtest"

    def lock(flags: int, password: bytes = b"") -> None:
        payload = d.lock_block(flags, password)
        d.lock_unlock(payload if block is None else payload.ljust(block, b"\0"))
        d.send_status()

    lock(D.LOCK_SET_PWD, pw)
    lock(D.LOCK_LOCK, pw)
    d.read_blocks(0, 1)                       # refused while locked
    d.send_status()
    d.write_blocks(0, test_data(512, 3))      # refused while locked
    d.send_status()
    d.command(D.ERASE, 0, Resp.R1B)           # not a class 0/7 command: refused
    d.send_status()
    lock(0, b"wrong!")                        # unlock, wrong password
    lock(0, pw)                               # unlock
    d.read_blocks(0, 1)
    lock(D.LOCK_CLR_PWD, pw)
    lock(D.LOCK_SET_PWD | D.LOCK_LOCK, pw)
    lock(D.LOCK_ERASE)                        # force erase
    d.read_blocks(0, 2)


@scenario("lock-unlock", "card", needs_clock=True)
def _lock(t: Target, ctx: Context) -> None:
    """Lock/unlock with data blocks as long as the structure (PLS 4.3.7)."""
    _lock_sequence(t, None)


@scenario("lock-unlock-512", "card", needs_clock=True)
def _lock_512(t: Target, ctx: Context) -> None:
    """Lock/unlock as QEMU 9.1 and later take it: CMD16 gives the structure's
    length, the data block is 512 bytes whatever CMD16 set
    (sd.cmd42-data-length); passwords changed with PWD_LEN = old + new
    (PLS 4.3.7.1), locked-card command filtering, and a force erase."""
    d = ready(t)
    old, new = b"sdqtest", b"card-2"

    def lock(flags: int, password: bytes = b"") -> None:
        structure = d.lock_block(flags, password)
        d.cmd(D.SET_BLOCKLEN, len(structure))
        d.lock_unlock(structure.ljust(512, b"\0"), set_blocklen=False)
        d.cmd(D.SET_BLOCKLEN, 512)
        d.send_status()

    lock(D.LOCK_SET_PWD, old)
    lock(D.LOCK_LOCK, old)                     # PWD_LEN = current length
    lock(D.LOCK_SET_PWD | D.LOCK_LOCK, old + new)  # change and lock
    d.read_blocks(0, 1)                        # refused while locked
    d.send_status()
    d.write_blocks(0, test_data(512, 5))
    d.send_status()
    d.command(D.ERASE, 0, Resp.R1B)
    d.send_status()
    lock(0, b"wrong!")
    lock(D.LOCK_SET_PWD, new + old)            # change back, unlocked
    d.read_blocks(0, 1)
    lock(D.LOCK_CLR_PWD, old)
    lock(D.LOCK_SET_PWD | D.LOCK_LOCK, old + new)
    lock(D.LOCK_ERASE)                         # force erase: structure of 1 byte
    d.read_blocks(0, 2)


@scenario("tuning-and-gen-cmd", "card", needs_clock=True, sdhci={"sd-spec-version": 3})
def _tuning(t: Target, ctx: Context) -> None:
    """CMD19 tuning block (64 bytes, 4-bit bus), CMD56 GEN_CMD read and
    write, ACMD22 after a multi-block write."""
    d = ready(t)
    d._read_data(D.SEND_TUNING_BLOCK, 0, 64)
    d.send_status()
    d.write_blocks(70, test_data(3 * 512, 9))
    d.send_num_wr_blocks()
    d._read_data(GEN_CMD, 1, 512)
    d.send_status()
    d.command(GEN_CMD, 0, Resp.R1)
    d.send_status()


@scenario("gen-cmd-write", "card", needs_clock=True)
def _gen_cmd_write(t: Target, ctx: Context) -> None:
    """CMD56 GEN_CMD in the write direction (argument bit 0 clear) with its
    data block of the block length, then the card's status and a GEN_CMD
    read (PLS 4.3.12: the block's meaning is the vendor's)."""
    d = ready(t)
    data = test_data(512, 11)
    res = d.cmd(GEN_CMD, 0, data=Transfer(read=False, block_size=512, data=data))
    ctx.expect(not res.error, "GEN_CMD write refused")
    d.send_status()
    d._read_data(GEN_CMD, 1, 512)
    d.send_status()


def _lock42(d: D.HostDriver, ctx: Context, flags: int, password: bytes = b"", *,
            pwd_len: int | None = None, bare: bool = False) -> None:
    """CMD42 with the lock card data structure (PLS 4.3.7; the flags byte
    alone when ``bare``), CMD16 around it giving its length, as the build
    takes it (ledger sd.cmd42-data-length: QEMU 9.1 and later wait for a
    512-byte block), then CMD13."""
    ops.lock(d, {"flags": flags, "pwd": password.hex(), "pwd_len": pwd_len, "bare": bare,
                 "pad": entry("sd.cmd42-data-length").versions.applies(ctx.profile.version)})
    d.send_status()


def _card_registers_after(d: D.HostDriver) -> None:
    """CSD and CID in stand-by, then the status and block 0 in transfer."""
    d.deselect()
    d.send_csd()
    d.send_cid()
    d.select()
    d.send_status()
    d.read_blocks(0, 1)


for _bit in ("tmp_wp", "perm_wp"):

    @scenario(f"lock-force-erase-{_bit.replace('_', '-')}", "card", needs_clock=True,
              variant=f"here {_bit.upper().replace('_WP', '_WRITE_PROTECT')}")
    def _force_erase_protected(t: Target, ctx: Context, _bit: str = _bit) -> None:
        """A forced erase (PLS 4.3.7.3: the flags byte alone, ERASE) of a
        locked card whose CSD (CMD27) has TMP_WRITE_PROTECT, or
        PERM_WRITE_PROTECT, set (5.3.2): the one clears it with the
        password and the lock; the other is refused (LOCK_UNLOCK_FAILED),
        the card staying locked.  The CSD and CID are read after, and a
        write tried before and after."""
        d = ready(t)
        pw = b"sdqtest"
        ops.program_csd(d, {"set": ops.CSD_WRITABLE[_bit], "clear": 0})
        d.send_status()
        d.write_blocks(0, test_data(512, 11))  # write protected
        d.send_status()
        _lock42(d, ctx, D.LOCK_SET_PWD | D.LOCK_LOCK, pw)
        _lock42(d, ctx, D.LOCK_ERASE, bare=True)
        _card_registers_after(d)
        _lock42(d, ctx, 0, pw)                     # unlock, where still locked
        d.write_blocks(0, test_data(512, 12))
        _card_registers_after(d)


@scenario("lock-password-lengths", "card", needs_clock=True)
def _password_lengths(t: Target, ctx: Context) -> None:
    """CMD42 with PWD_LEN shorter than, equal to and longer than the
    current password, past the 16-byte limit, and longer than the bytes
    that follow it in the block (PLS 4.3.7.1: PWD_LEN counts the old and
    the new password when one is replaced); CMD13 after each."""
    d = ready(t)
    pw, new = b"sdqtest", b"new-pass"
    _lock42(d, ctx, D.LOCK_SET_PWD, pw)
    _lock42(d, ctx, D.LOCK_LOCK, pw, pwd_len=len(pw) - 1)        # shorter
    _lock42(d, ctx, D.LOCK_LOCK, pw)                             # equal: the current one
    _lock42(d, ctx, D.LOCK_LOCK, pw + b"x", pwd_len=len(pw) + 1)  # one byte more
    _lock42(d, ctx, 0, pw)                                       # unlock, where locked
    _lock42(d, ctx, D.LOCK_SET_PWD, pw + new)                    # replace: old + new
    _lock42(d, ctx, D.LOCK_SET_PWD, new + b"y" * 9)              # 17 bytes: past 16
    _lock42(d, ctx, D.LOCK_SET_PWD | D.LOCK_LOCK, new + pw,
            pwd_len=len(new) + len(pw) + 4)                      # more than follows
    _lock42(d, ctx, D.LOCK_LOCK, new, pwd_len=0)                 # no password given
    d.read_blocks(0, 1)
    _lock42(d, ctx, D.LOCK_SET_PWD | D.LOCK_LOCK, new + pw)      # replace and lock
    _lock42(d, ctx, D.LOCK_ERASE, bare=True)
    d.read_blocks(0, 1)


@scenario("acmd23-pre-erase-and-card-detect", "card", needs_clock=True)
def _pre_erase(t: Target, ctx: Context) -> None:
    """ACMD23 SET_WR_BLK_ERASE_COUNT before a 4-block CMD25 write (PLS 4.7.4
    table 4-32: the blocks to pre-erase, a speed hint that changes no data),
    ACMD22 after it (the well-written blocks, a 32-bit number MSB first,
    PLS 4.3.4) and the blocks read back; then ACMD42 SET_CLR_CARD_DETECT
    clearing and setting the DAT3 pull-up (R1, transfer state)."""
    d = ready(t)
    r = d.acmd(S.index("SET_WR_BLK_ERASE_COUNT", app=True), 4)
    ctx.expect(not r.error, "ACMD23 refused in the transfer state")
    data = test_data(4 * 512, 23)
    d.write_blocks(90, data)
    n = d.send_num_wr_blocks()
    ctx.expect(n.data == (4).to_bytes(4, "big"), f"ACMD22 says {n.data!r}, not 4 blocks",
               "sd.wide-data-byte-order")
    ctx.expect(d.read_blocks(90, 4).data == data, "the pre-erased blocks read back differently")
    for connect in (0, 1):
        r = d.acmd(S.index("SET_CLR_CARD_DETECT", app=True), connect)
        ctx.expect(not r.error, f"ACMD42({connect}) refused in the transfer state")
    d.send_status()
