"""Every SD command and application command in every card state.

For each state of the card-identification and data-transfer modes that a
host can reach without data (idle, ready, identification, stand-by,
transfer), the card is brought there from CMD0 and then sent each command
index 0..63 (and, after CMD55, each ACMD index).  Legal or illegal, what the
card answers and what the controller makes of it must agree (SD Physical
Layer Simplified Specification 4.8, "Card State Transition Table").
"""

from __future__ import annotations

from collections.abc import Callable

from harness.driver import host as D
from harness.driver.host import HostDriver
from harness.driver.results import Mode, Transfer
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.sd import Resp
from harness.ledger import boundaries
from harness.profile import BuildProfile
from harness.scenarios.registry import Context, scenario
from harness.target import Target


def _to_idle(d: HostDriver) -> None:
    d.cmd(D.GO_IDLE_STATE, 0)


def _to_ready(d: HostDriver) -> None:
    _to_idle(d)
    d.cmd(D.SEND_IF_COND, D.CMD8_VHS_27_36 | D.CMD8_CHECK_PATTERN)
    for _ in range(100):
        r = d.acmd(D.ACMD_SD_SEND_OP_COND, D.HOST_OCR_33V | S.ACMD41_HCS, rca=0)
        # A card that does not answer (inactive after CMD15) leaves the last
        # response in RSPREG0: CMD3's R6, whose bit 31 is the random RCA's top
        # bit, not OCR busy.  Waiting on it made the path depend on the draw.
        if r.error or r.r1 & S.OCR_BUSY:
            return
        d.step(1_000_000)


def _to_ident(d: HostDriver) -> None:
    _to_ready(d)
    d.cmd(D.ALL_SEND_CID, 0)


def _to_stby(d: HostDriver) -> None:
    _to_ident(d)
    d.card.rca = d.cmd(D.SEND_RELATIVE_ADDR, 0).r1 >> 16


def _to_tran(d: HostDriver) -> None:
    _to_stby(d)
    d.select()


_STATES: dict[str, Callable[[HostDriver], None]] = {
    "idle": _to_idle, "ready": _to_ready, "ident": _to_ident, "stby": _to_stby,
    "tran": _to_tran,
}


_SEND_TUNING = S.index("SEND_TUNING_BLOCK")
#: Commands that address the card by its RCA (PLS 4.7.4: "[31:16] RCA").
_RCA_ARG = S.commands(arg=S.Arg.RCA)


def _resp(index: int, app: bool) -> Resp:
    table = S.SD_APP_COMMANDS if app else S.SD_COMMANDS
    c = table.get(index)
    return c.resp if c is not None and c.resp is not None else Resp.R1


def _args(d: HostDriver, index: int) -> int:
    # The card's RCA where the command addresses a card, 0 otherwise.
    return d.card.rca << 16 if index in _RCA_ARG else 0


#: Each state's name as PLS 4.8's state transition table gives it.
_STATE_NAMES = {"idle": "idle", "ready": "ready", "ident": "identification",
                "stby": "stand-by", "tran": "transfer"}

for _state, _reach in _STATES.items():

    def _make(reach: Callable[[HostDriver], None], app: bool) -> Callable[[Target, Context],
                                                                            None]:
        def run(t: Target, ctx: Context) -> None:
            d = HostDriver(t, recover=False)
            d.setup()
            for index in range(64):
                reach(d)
                if app:
                    d.cmd(D.APP_CMD, d.card.rca << 16)
                d.command(index, _args(d, index), _resp(index, app))
                d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
                d.reset(H.SWRST_CMD | H.SWRST_DAT)  # CMD and DAT line reset after each probe
        return run

    for _app in (False, True):
        _name = f"{'acmd' if _app else 'cmd'}-all-in-{_state}"
        _as = " as an application command (after CMD55)" if _app else ""
        scenario(_name, "commands", needs_clock=True, doc=(
            f"Every command index 0 to 63{_as} sent to a card brought to the "
            f"{_STATE_NAMES[_state]} state, each followed by CMD13 and a CMD and DAT line "
            "reset: the response or its absence, and the status bits (PLS 4.8, card state "
            "transitions)."))(_make(_reach, _app))


@scenario("cmd19-tuning-v3", "commands", sd_card={"spec_version": 3}, needs_clock=True)
def cmd19_tuning_v3(t: Target, ctx: Context) -> None:
    """CMD19 (PLS 4.2.4.5, spec 3.01 cards) on a card made spec 3.01 on
    every build (7.2's default is 2.00): the 64-byte tuning block in the
    transfer state, refused in stand-by and idle."""
    d = HostDriver(t, recover=False)
    d.setup()
    d.init_card()
    block = Transfer(read=True, block_size=64, block_count=1, mode=Mode.PIO)
    d.cmd(_SEND_TUNING, 0, data=block)
    d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
    d.deselect()
    d.command(_SEND_TUNING, 0, Resp.R1)
    d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
    d.reset(H.SWRST_CMD | H.SWRST_DAT)
    _to_idle(d)
    d.command(_SEND_TUNING, 0, Resp.R1)
    d.reset(H.SWRST_CMD | H.SWRST_DAT)


_PROGRAM_CID = 26


@scenario("cmd26-program-cid", "commands", needs_clock=True)
def cmd26_program_cid(t: Target, ctx: Context) -> None:
    """CMD26 (PROGRAM_CID; reserved for manufacturers since PLS 2.00) with
    16 bytes: the card's own CID (CMD10) and one with a byte changed, each
    followed by CMD13.  QEMU < 9.1 receives the block and sets
    CID_CSD_OVERWRITE for a changed one (ledger ``sd.version.cmd26``);
    newer cards refuse the command as illegal."""
    d = HostDriver(t, recover=False)
    d.setup()
    d.init_card()
    d.deselect()
    r = d.send_cid()
    d.select()
    cid = bytearray(r.r2.to_bytes(16, "big"))
    cid[15] = S.crc7(bytes(cid[:15])) << 1 | 1  # R2 carries no CRC7 (PLS 5.2: the CID's)
    for flip in (None, 3):
        data = bytearray(cid)
        if flip is not None:
            data[flip] ^= 0xFF
        d.cmd(_PROGRAM_CID, 0, data=Transfer(read=False, block_size=16, block_count=1,
                                             mode=Mode.PIO, data=bytes(data)))
        d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
        d.reset(H.SWRST_CMD | H.SWRST_DAT)


def _before_protocol_rework(p: BuildProfile) -> str | None:
    if p.version < boundaries.SD_PROTOCOL_REWORK.since:
        return None
    return ("a data byte after CMD13 during a write aborts QEMU >= 9.1 (ledger "
            "sd.command-during-transfer)")


@scenario("cmd13-during-write-legacy", "commands", needs_clock=True,
          requires=(_before_protocol_rework,))
def cmd13_during_write(t: Target, ctx: Context) -> None:
    """CMD13 between the two halves of a CMD24 block written by PIO (PLS
    4.10.1: a card answers CMD13 while receiving data): QEMU before 9.1
    makes CMD13 the card's current command, so the block the controller
    then sends is dropped and the card stays receiving; a reset, the
    status, the block read back."""
    d = _issued(t, 24, 6, 1, 0)
    t.read(H.PRNSTS.offset, 4)
    for half in range(2):
        for i in range(64):
            d.wr(H.BDATA, 0x5A00_0000 | half << 16 | i, 4)
        if half == 0:
            _interpose(d, t, 13)
        _look(t)
    _settle(d, 6, 1)


@scenario("cmd55-during-read", "commands", needs_clock=True)
def cmd55_during_read(t: Target, ctx: Context) -> None:
    """CMD55 halfway through the first block of a two-block PIO CMD18 (a
    command without data while the card sends, PLS 4.3.9): QEMU makes it
    the card's current command, and what the controller then fetches for
    the second block is compared as the model says the card sends it (a
    CMD55 has no data: 7.2's byte loop and the later ``sd_read_data`` send
    dummy bytes; ledger ``sd.command-during-transfer``); a reset, the
    status, both blocks read again."""
    d = _issued(t, 18, 8, 2, H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    for i, words in enumerate((64, 64, 128)):
        for _ in range(words):
            t.read(H.BDATA.offset, 4)
        if i == 0:
            _interpose(d, t, 55)
        _look(t)
    _settle(d, 8, 2)


def _issued(t: Target, index: int, block: int, count: int, trnmod: int) -> HostDriver:
    """A driver with the card in transfer state, and data command ``index``
    for ``count`` 512-byte blocks at ``block`` issued through the registers
    with transfer mode ``trnmod`` (PIO), left running."""
    d = HostDriver(t)
    d.setup()
    d.init_card()
    d.wr(H.BLKSIZE, 512)
    d.wr(H.BLKCNT, count)
    d.wr(H.ARGUMENT, d.address(block))
    d.layout.issue(d, trnmod, H.cmdreg(index, H.RSP_48, crc=True, idx=True, data=True))
    return d


def _interpose(d: HostDriver, t: Target, index: int) -> None:
    """Command ``index`` (RCA argument, R1, no data) issued while a data
    transfer runs, and its response read."""
    d.wr(H.ARGUMENT, d.card.rca << 16)
    d.layout.issue(d, None, H.cmdreg(index, H.RSP_48, crc=True, idx=True))
    t.read(H.RSPREG0.offset, 4)


def _look(t: Target) -> None:
    """Normal Interrupt Status and Present State as the transfer stands."""
    t.read(H.NORINTSTS.offset, 2)
    t.read(H.PRNSTS.offset, 4)


def _settle(d: HostDriver, block: int, count: int) -> None:
    """After the interposed command: CMD and DAT lines reset, the card's
    status, the blocks read again."""
    d.reset(H.SWRST_CMD | H.SWRST_DAT)
    d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
    d.read_blocks(block, count)


_WRITE_PROT = ((28, False), (29, False), (30, True))  # SET/CLR_WRITE_PROT, SEND_WRITE_PROT


@scenario("write-protect-commands-sdhc", "commands", image="sdhc-4g", needs_clock=True)
def write_protect_commands_sdhc(t: Target, ctx: Context) -> None:
    """CMD28, CMD29 and CMD30 on a high-capacity card (PLS 4.3.5: SDHC and
    SDXC cards have no write protection groups; the commands are illegal
    there), each followed by CMD13; first in the idle state, before the
    power-up sets OCR CCS (QEMU refuses class 6 on CCS, the three commands
    on the card's size as well)."""
    d = HostDriver(t, recover=False)
    d.setup()
    for index, reads in _WRITE_PROT:  # idle: no CCS yet
        data = Transfer(read=True, block_size=4, block_count=1, mode=Mode.PIO) if reads \
            else None
        d.cmd(index, 0, data=data)
        d.reset(H.SWRST_CMD | H.SWRST_DAT)
    d.init_card()
    for index, reads in _WRITE_PROT:
        data = Transfer(read=True, block_size=4, block_count=1, mode=Mode.PIO) if reads \
            else None
        d.cmd(index, 0, data=data)
        d.command(D.SEND_STATUS, d.card.rca << 16, Resp.R1)
        d.reset(H.SWRST_CMD | H.SWRST_DAT)
