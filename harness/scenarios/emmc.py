"""eMMC scenarios: registers, commands, data, boot partitions (JESD84-B51).

An eMMC device (``-device emmc``) on sdhci-pci's SD bus, with an image laid
out as boot 1, boot 2, RPMB and user area (:meth:`harness.images.Recipe.partition_starts`).
Every scenario needs a build whose ``emmc`` is user-creatable and skips
with the reason elsewhere.  RPMB frames are in :mod:`harness.scenarios.emmc_rpmb`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness import images
from harness.driver.emmc import EmmcDriver
from harness.driver.results import Mode
from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.emmc import Partition, SwitchAccess
from harness.hwdefs.sd import Resp
from harness.ledger import boundaries
from harness.scenarios.common import test_data
from harness.scenarios.registry import (
    Context,
    Requirement,
    card_size_accepted,
    emmc_usable,
    has_property,
    scenario,
)
from harness.target import Target

#: The image most scenarios use: 128 KiB boot partitions, 128 KiB RPMB, 4 MiB user area.
IMAGE = "emmc-4m-boot128k-rpmb128k"
BOOT_ONLY = "emmc-4m-boot256k"
PLAIN = "emmc-4m"
LARGE = "emmc-4g-boot128k"
MODES = (Mode.PIO, Mode.SDMA, Mode.ADMA2)
_PART_NAMES = {Partition.USER: "user", Partition.BOOT1: "boot1", Partition.BOOT2: "boot2",
               Partition.RPMB: "rpmb"}


def _needs(image: str, extra: tuple[Requirement, ...] = ()) -> tuple[Requirement, ...]:
    reqs: tuple[Requirement, ...] = (emmc_usable, card_size_accepted(image))
    reqs += tuple(has_property("emmc", p) for p in images.recipe(image).emmc_props())
    return reqs + extra


def emmc_scenario(name: str, group: str, *, image: str = IMAGE,
                  props: dict[str, Any] | None = None,
                  extra: tuple[Requirement, ...] = (), doc: str | None = None
                  ) -> Callable[[Callable[[Target, Context], None]],
                                Callable[[Target, Context], None]]:
    """Register an eMMC scenario on ``image`` with its partition properties."""
    card = {**images.recipe(image).emmc_props(), **(props or {})}
    return scenario(name, group, image=image, needs_clock=True, card="emmc", sd_card=card,
                    requires=_needs(image, extra), doc=doc)


def emmc_ready(t: Target) -> EmmcDriver:
    """A driver with the controller set up and the device in transfer state."""
    d = EmmcDriver(t)
    d.setup()
    d.init_emmc()
    return d


def expect_image(ctx: Context, data: bytes | None, offset: int, what: str) -> None:
    """Data read equals the recipe's content at ``offset`` of the image file."""
    if not ctx.image:
        return
    want = images.recipe(ctx.image).expected(offset, len(data or b""))
    ctx.expect(bool(data) and data == want, f"{what}: data differs from the image at {offset:#x}")


def _start(ctx: Context, part: int) -> int:
    return images.recipe(ctx.image).partition_starts()[_PART_NAMES[Partition(part)]]


# -- emmc-registers ---------------------------------------------------------------


@emmc_scenario("emmc-identification", "emmc-registers")
def _identification(t: Target, ctx: Context) -> None:
    """CMD0, CMD1 enquiry and power-up, CMD2 CID, CMD3 host RCA, CMD9 CSD,
    CMD10 CID, CMD7; then a second CMD3 with another RCA from stand-by."""
    d = EmmcDriver(t)
    d.setup()
    info = d.init_emmc(rca=0x1234)
    ctx.expect(info.ocr >> 31 == 1, "CMD1 never reported power-up")
    d.deselect()
    d.cmd(E.index("SEND_CID"), 0x1234 << 16)
    d.cmd(E.index("SEND_CSD"), 0x1234 << 16)
    d.cmd(E.index("SET_RELATIVE_ADDR"), 0x4321 << 16)
    d.cmd(E.index("SEND_STATUS"), 0x1234 << 16)
    d.cmd(E.index("SEND_STATUS"), 0x4321 << 16)
    d.card.rca = 0x4321
    d.select()
    d.send_status()


@emmc_scenario("emmc-cmd1-enquiry-timer", "emmc-registers")
def _cmd1_timer(t: Target, ctx: Context) -> None:
    """CMD1 with argument 0 only enquires: busy stays clear until QEMU's
    power-up delay has run out."""
    d = EmmcDriver(t)
    d.setup()
    d.cmd(E.index("GO_IDLE_STATE"), 0)
    for _ in range(4):
        d.cmd(E.index("SEND_OP_COND"), 0)
        d.step(200_000)
    d.cmd(E.index("SEND_OP_COND"), E.CMD1_HOST_OCR)
    d.cmd(E.index("ALL_SEND_CID"), 0)


@emmc_scenario("emmc-ext-csd", "emmc-registers")
def _ext_csd(t: Target, ctx: Context) -> None:
    """CMD8 SEND_EXT_CSD by PIO, SDMA and ADMA2; sizes match the image."""
    d = emmc_ready(t)
    r = images.recipe(ctx.image)
    for mode in MODES:
        res = d.send_ext_csd(mode=mode)
        ext = res.data or bytes(512)
        ctx.expect(E.FIELDS["SEC_COUNT"].get(ext) * 512 == r.user_size,
                   "SEC_COUNT is not the user area's size")
        ctx.expect(ext[E.BOOT_SIZE_MULT] * E.SIZE_MULT_UNIT == r.boot_partition_size,
                   "BOOT_SIZE_MULT is not the boot partition size")
        ctx.expect(ext[E.RPMB_SIZE_MULT] * E.SIZE_MULT_UNIT == r.rpmb_partition_size,
                   "RPMB_SIZE_MULT is not the RPMB partition size")


@emmc_scenario("emmc-switch-access-modes", "emmc-registers")
def _switch_modes(t: Target, ctx: Context) -> None:
    """CMD6 WRITE_BYTE, SET_BITS, CLEAR_BITS and COMMAND_SET on writable
    fields (HS_TIMING, BUS_WIDTH, ERASE_GROUP_DEF), read back with CMD8."""
    d = emmc_ready(t)
    for access, index, value in ((SwitchAccess.WRITE_BYTE, 185, 1),
                                 (SwitchAccess.SET_BITS, 185, 0x2),
                                 (SwitchAccess.CLEAR_BITS, 185, 0x1),
                                 (SwitchAccess.WRITE_BYTE, 183, 1),
                                 (SwitchAccess.SET_BITS, 175, 1),
                                 (SwitchAccess.COMMAND_SET, 191, 1)):
        d.switch(access, index, value)
        d.send_status()
        d.send_ext_csd()


@emmc_scenario("emmc-switch-refused", "emmc-registers")
def _switch_refused(t: Target, ctx: Context) -> None:
    """CMD6 to a properties-segment byte (SWITCH_ERROR, and how long it
    stays), to a read-only and a reserved modes byte; CMD6 outside transfer state."""
    d = emmc_ready(t)
    r = d.switch(SwitchAccess.WRITE_BYTE, 192, 1)
    ctx.expect(bool(r.r1 & E.SWITCH_ERROR), "CMD6 to EXT_CSD_REV did not set SWITCH_ERROR")
    for _ in range(2):
        s = d.send_status()
        ctx.expect(not s.r1 & E.SWITCH_ERROR, "SWITCH_ERROR still set after a valid command",
                   "emmc.switch-error-sticky")
    d.cmd(E.index("GO_IDLE_STATE"), 0)
    d.init_emmc()
    r = d.switch(SwitchAccess.WRITE_BYTE, E.FIELDS["PARTITIONING_SUPPORT"].index, 0)
    ctx.expect(bool(r.r1 & E.SWITCH_ERROR), "CMD6 wrote the read-only PARTITIONING_SUPPORT",
               "emmc.switch-any-modes-byte")
    d.cmd(E.index("GO_IDLE_STATE"), 0)
    d.init_emmc()
    d.switch(SwitchAccess.WRITE_BYTE, 0, 0xA5)  # reserved byte
    d.send_ext_csd()
    d.deselect()
    d.switch(SwitchAccess.WRITE_BYTE, 185, 1)  # stand-by: illegal
    d.select()
    d.send_status()


@emmc_scenario("emmc-boot-config-property", "emmc-registers", props={"boot-config": 0x49})
def _boot_config(t: Target, ctx: Context) -> None:
    """Property boot-config=0x49 (boot ack, boot partition 1 enabled, access boot 1):
    PARTITION_CONFIG starts there, reads go to boot 1, CMD0 restores it."""
    d = emmc_ready(t)
    ext = d.send_ext_csd().data or bytes(512)
    ctx.expect(ext[E.PARTITION_CONFIG] == 0x49, "PARTITION_CONFIG is not the boot-config value")
    r = d.read_blocks(0, 1)
    expect_image(ctx, r.data, 0, "block 0 with boot-config selecting boot 1")
    d.select_partition(Partition.USER, boot_bits=0x48)
    d.cmd(E.index("GO_IDLE_STATE"), 0)
    d.init_emmc()
    ext = d.send_ext_csd().data or bytes(512)
    ctx.expect(ext[E.PARTITION_CONFIG] == 0x49, "CMD0 did not restore PARTITION_CONFIG")


@emmc_scenario("emmc-sector-mode", "emmc-registers", image=LARGE)
def _sector_mode(t: Target, ctx: Context) -> None:
    """A 4 GiB user area: OCR sector mode from reset, CSD C_SIZE all ones and
    the size in SEC_COUNT, block addresses, class 6 refused, the last block."""
    d = emmc_ready(t)
    r = images.recipe(ctx.image)
    ctx.expect(bool(d.card.ocr & (1 << 30)), "OCR does not report sector addressing")
    ext = d.send_ext_csd().data or bytes(512)
    ctx.expect(E.FIELDS["SEC_COUNT"].get(ext) * 512 == r.user_size,
               "SEC_COUNT is not the user area's size")
    last = r.user_size // 512 - 1
    res = d.read_blocks(last, 1)
    expect_image(ctx, res.data, r.size - 512, "last block of the user area")
    d.read_blocks(last, 2)
    d.send_status()
    d.write_blocks(last, test_data(512, 3))
    d.cmd(E.index("SET_WRITE_PROT"), 0)
    d.send_status()
    d.select_partition(Partition.BOOT2)
    res = d.read_blocks(0, 1)
    expect_image(ctx, res.data, r.boot_partition_size, "boot 2 on a sector-mode device")


# -- emmc-commands ------------------------------------------------------------------


def _to_idle(d: EmmcDriver) -> None:
    d.cmd(E.index("GO_IDLE_STATE"), 0)


def _to_ready(d: EmmcDriver) -> None:
    _to_idle(d)
    d.cmd(E.index("SEND_OP_COND"), E.CMD1_HOST_OCR)


def _to_ident(d: EmmcDriver) -> None:
    _to_ready(d)
    d.cmd(E.index("ALL_SEND_CID"), 0)


def _to_stby(d: EmmcDriver) -> None:
    _to_ident(d)
    d.cmd(E.index("SET_RELATIVE_ADDR"), 2 << 16)
    d.card.rca = 2


def _to_tran(d: EmmcDriver) -> None:
    _to_stby(d)
    d.select()


_STATES: dict[str, Callable[[EmmcDriver], None]] = {
    "idle": _to_idle, "ready": _to_ready, "ident": _to_ident, "stby": _to_stby,
    "tran": _to_tran,
}
#: Indices the all-commands probe leaves out: CMD5 would put the device to
#: sleep (covered by emmc-sleep), whose CMD0 aborts QEMU.
_SKIP = frozenset({E.index("SLEEP_AWAKE")})
#: Commands addressed by the RCA in argument bits 31:16 (JESD84-B51 command table).
_RCA_ARG = frozenset(map(E.index, ("SET_RELATIVE_ADDR", "SELECT_DESELECT_CARD", "SEND_CSD",
                                   "SEND_CID", "SEND_STATUS", "GO_INACTIVE_STATE",
                                   "APP_CMD")))


def _args(d: EmmcDriver, index: int) -> int:
    return d.card.rca << 16 if index in _RCA_ARG else 0


#: Each state's name as JESD84-B51's state diagrams give it.
_STATE_NAMES = {"idle": "idle", "ready": "ready", "ident": "identification",
                "stby": "stand-by", "tran": "transfer"}

for _state, _reach in _STATES.items():

    def _make(reach: Callable[[EmmcDriver], None], app: bool
              ) -> Callable[[Target, Context], None]:
        def run(t: Target, ctx: Context) -> None:
            d = EmmcDriver(t, recover=False)
            d.setup()
            for index in range(64):
                if index in _SKIP:
                    continue
                reach(d)
                if app:
                    d.cmd(E.index("APP_CMD"), d.card.rca << 16)
                d.command(index, _args(d, index), E.command_resp(index))
                d.command(E.index("SEND_STATUS"), d.card.rca << 16, Resp.R1)
                d.reset(H.SWRST_CMD | H.SWRST_DAT)
        return run

    for _app in (False, True):
        _after = " after CMD55" if _app else ""
        emmc_scenario(f"emmc-{'acmd' if _app else 'cmd'}-all-in-{_state}", "emmc-commands",
                      doc=(f"Every command index 0 to 63 but CMD5 (sleep){_after} sent to "
                           f"an eMMC device brought to the {_STATE_NAMES[_state]} "
                           "state, each followed by CMD13 and a CMD and DAT line reset: the "
                           "response or its absence, and the status bits (JESD84-B51 device "
                           "state transitions)."))(_make(_reach, _app))


@emmc_scenario("emmc-sleep", "emmc-commands")
def _sleep(t: Target, ctx: Context) -> None:
    """CMD5 in transfer state (illegal), CMD5 awake in stand-by, sleep from
    stand-by, commands while asleep (no response), CMD5 awake (JESD84-B51:
    back to stand-by).  No CMD0 while asleep: it aborts QEMU (see
    tests/qtest/crosscheck/test_emmc.py)."""
    d = emmc_ready(t)
    d.cmd(E.index("SLEEP_AWAKE"), (d.card.rca << 16) | E.CMD5_SLEEP)
    d.deselect()
    d.cmd(E.index("SLEEP_AWAKE"), d.card.rca << 16)  # stand-by, sleep bit clear: stays in stand-by
    d.select()
    r = d.sleep()
    ctx.expect(r.ok, "CMD5 sleep from stand-by failed")
    d.send_status()
    d.cmd(E.index("SELECT_DESELECT_CARD"), d.card.rca << 16)
    aw = d.cmd(E.index("SLEEP_AWAKE"), d.card.rca << 16)
    ctx.expect(aw.ok, "CMD5 awake got no response", "emmc.sleep-no-awake")
    d.send_status()
    d.reset(H.SWRST_CMD | H.SWRST_DAT)


@emmc_scenario("emmc-program-cid-csd", "emmc-commands")
def _program_cid(t: Target, ctx: Context) -> None:
    """CMD26 with the CID itself and with a changed CID (CID_CSD_OVERWRITE),
    CMD27 with the CSD; status after each."""
    from harness.driver.results import Transfer

    d = emmc_ready(t)
    d.deselect()
    cid = d.cmd(E.index("SEND_CID"), d.card.rca << 16).r2
    csd = d.cmd(E.index("SEND_CSD"), d.card.rca << 16).r2
    d.select()
    raw_cid = cid.to_bytes(16, "big")  # CRC byte 0: QEMU compares it too
    raw_csd = csd.to_bytes(16, "big")
    for index, payload in ((26, raw_cid), (26, bytes(16)), (27, raw_csd)):
        d.cmd(index, 0, data=Transfer(read=False, block_size=16, block_count=1,
                                      mode=Mode.PIO, data=payload))
        d.send_status()


@emmc_scenario("emmc-erase-trim", "emmc-commands")
def _erase(t: Target, ctx: Context) -> None:
    """CMD35/36/38 erase, trim (arg 1) and discard (arg 3) in the user area
    and boot 2; CMD38 without a range (ERASE_SEQ_ERROR); erased blocks read back."""
    d = emmc_ready(t)
    for part, arg in ((Partition.USER, E.ERASE_ARG_ERASE), (Partition.USER, E.ERASE_ARG_TRIM),
                      (Partition.BOOT2, E.ERASE_ARG_DISCARD)):
        d.select_partition(part)
        first = 4 + arg * 8
        d.erase(first, first + 2, arg=arg)
        r = d.read_blocks(first, 3)
        ctx.expect(r.data == bytes(3 * 512), "erased data is not ERASED_MEM_CONT's 0x00",
                   "emmc.erased-content")
        d.send_status()
    d.cmd(E.index("ERASE"), 0)
    d.send_status()


# -- emmc-data -----------------------------------------------------------------------


#: How each transfer mode moves the data, as the descriptions say it.
_MODE_NAMES = {Mode.PIO: "PIO (the Buffer Data Port)", Mode.SDMA: "SDMA",
               Mode.ADMA2: "ADMA2"}


def _data_scenario(mode: Mode, part: Partition) -> None:
    name = _PART_NAMES[part]

    where = "the user area" if part == Partition.USER else \
        f"{name} (selected through EXT_CSD PARTITION_CONFIG)"
    doc = (f"Data in {where} by {_MODE_NAMES[mode]}: a 4-block read compared with the image, "
           "a 5-block write read back, a CMD23-counted write and read, single blocks, then "
           "the user area again (JESD84-B51).")

    @emmc_scenario(f"emmc-{mode.value}-{name}", "emmc-data", doc=doc)
    def _rw(t: Target, ctx: Context) -> None:
        d = emmc_ready(t)
        if part != Partition.USER:
            d.select_partition(part)
        r = d.read_blocks(3, 4, mode=mode)
        expect_image(ctx, r.data, _start(ctx, part) + 3 * 512, f"{name} {mode.value} read")
        data = test_data(512 * 5, int(part) + 10)
        d.write_blocks(20, data, mode=mode)
        back = d.read_blocks(20, 5, mode=Mode.PIO)
        ctx.expect(back.data == data, "data read back differs from data written")
        d.write_blocks(40, data[:1024], mode=mode, stop="cmd23")
        d.read_blocks(40, 2, mode=mode, stop="cmd23")
        d.read_blocks(50, 1, mode=mode)
        d.write_blocks(51, data[:512], mode=mode)
        d.select_partition(Partition.USER)
        d.read_blocks(20, 1)


for _mode in MODES:
    for _part in (Partition.USER, Partition.BOOT1, Partition.BOOT2):
        _data_scenario(_mode, _part)


# -- emmc-boot ------------------------------------------------------------------------


@emmc_scenario("emmc-boot-past-end", "emmc-boot")
def _boot_past_end(t: Target, ctx: Context) -> None:
    """Reads and writes across the end of boot 1 and boot 2: a multi-block
    read from the last block runs into the next partition of the image file."""
    d = emmc_ready(t)
    last = images.recipe(ctx.image).boot_partition_size // 512 - 1
    for part in (Partition.BOOT1, Partition.BOOT2):
        d.select_partition(part)
        r = d.read_blocks(last, 2)
        after = (r.data or b"")[512:1024]
        following = images.recipe(ctx.image).expected(_start(ctx, part) + (last + 1) * 512, 512)
        ctx.expect(after != following, "a read past the end of a boot partition returned the "
                   "next partition's data", "emmc.partition-range")
        d.write_blocks(last, test_data(1024, int(part)))
        d.read_blocks(last + 1, 1)
        d.send_status()
    d.select_partition(Partition.USER)
    d.read_blocks(0, 1)


@emmc_scenario("emmc-boot-user-size-limit", "emmc-boot")
def _boot_user_limit(t: Target, ctx: Context) -> None:
    """In boot 1, addresses up to the user area's size pass the range check;
    the last user-area block and one past it, in each partition."""
    d = emmc_ready(t)
    user_blocks = images.recipe(ctx.image).user_size // 512
    for part in (Partition.BOOT1, Partition.RPMB, Partition.USER):
        d.select_partition(part)
        for blk in (user_blocks - 1, user_blocks):
            d.read_blocks(blk, 1)
            d.send_status()
    d.select_partition(Partition.USER)


@emmc_scenario("emmc-boot-switch-absent", "emmc-boot", image=PLAIN)
def _switch_absent(t: Target, ctx: Context) -> None:
    """A device without boot or RPMB partitions: selecting them sets
    SWITCH_ERROR and leaves PARTITION_CONFIG alone."""
    d = emmc_ready(t)
    refused = ctx.profile.version >= boundaries.EMMC_RPMB.since
    if not refused:
        ctx.note("before 10.1 an absent partition is selected without SWITCH_ERROR "
                 "(ledger emmc.version.absent-partition-refused)")
    for part in (Partition.BOOT1, Partition.BOOT2, Partition.RPMB):
        r = d.select_partition(part)
        if refused:
            ctx.expect(bool(r.r1 & E.SWITCH_ERROR),
                       f"selecting absent partition {part} succeeded")
        d.send_ext_csd()
        d.read_blocks(1, 1)


@emmc_scenario("emmc-boot-sizes-256k", "emmc-boot", image=BOOT_ONLY)
def _boot_256k(t: Target, ctx: Context) -> None:
    """256 KiB boot partitions and no RPMB: EXT_CSD sizes, both boot
    partitions at their image offsets, RPMB refused."""
    d = emmc_ready(t)
    d.send_ext_csd()
    for part in (Partition.BOOT1, Partition.BOOT2):
        d.select_partition(part)
        r = d.read_blocks(511, 1)
        expect_image(ctx, r.data, _start(ctx, part) + 511 * 512, "last block of a boot partition")
    d.select_partition(Partition.RPMB)
    d.send_status()


@emmc_scenario("emmc-boot-gp-select", "emmc-boot")
def _gp_select(t: Target, ctx: Context) -> None:
    """PARTITION_ACCESS 4 (a general purpose partition the device lacks):
    accepted by QEMU (a block access would abort it); selecting the user area again."""
    d = emmc_ready(t)
    r = d.select_partition(Partition.GP1)
    ctx.expect(bool(r.r1 & E.SWITCH_ERROR), "selecting an absent GP partition succeeded",
               "emmc.gp-partition-access")
    d.send_ext_csd()
    d.select_partition(Partition.USER)
    d.read_blocks(0, 1)


@emmc_scenario("emmc-locked", "emmc-commands")
def _locked(t: Target, ctx: Context) -> None:
    """A locked eMMC (JESD84-B51 6.6.7: as the SD card's PLS 4.3.7.5, classes
    0 and 7 and CMD16 only): a read, a write, SWITCH to the boot partition
    and ERASE_GROUP_START are refused (ILLEGAL_COMMAND), CMD13 answers; the
    unlock with the password (refused by QEMU: ``sd.lock-pwd-len``), a read,
    the password cleared."""
    from harness.driver import host as D

    d = emmc_ready(t)
    pw = b"emmc-pw"

    def lock(flags: int) -> None:
        # a block of the card's length: CMD16 does not change it (sector mode)
        d.lock_unlock(d.lock_block(flags, pw).ljust(512, b"\0"), set_blocklen=False)

    lock(D.LOCK_SET_PWD | D.LOCK_LOCK)
    d.send_status()
    d.read_blocks(0, 1)
    d.send_status()
    d.write_blocks(1, test_data(512, 9))
    d.send_status()
    d.select_partition(Partition.BOOT1)
    d.send_status()
    d.cmd(E.index("ERASE_GROUP_START"), 0)
    d.send_status()
    lock(0)
    st = d.send_status()
    ctx.expect(not st.response[0] & S.CARD_IS_LOCKED,
               "the unlock with the password left the eMMC locked", "sd.lock-pwd-len")
    d.read_blocks(0, 1)
    lock(D.LOCK_CLR_PWD)
    d.send_status()
