"""One reproducer per QEMU bug: driver operations that show it, and what
they saw.

Each function drives a fresh QEMU (a :class:`~harness.bugs.stdio_target.StdioTarget`)
with :class:`~harness.driver.host.HostDriver` / :class:`~harness.driver.emmc.EmmcDriver`
and says whether the bug showed (:class:`BugObservation`).  The judgement is
the specification's (section cited in each docstring), never the answer of
a particular build.  The same sequence is the C test of the bug under
``harness/bugs/data/tests/`` (libqtest), so QEMU's own test suite can hold the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness import images
from harness.driver.emmc import EmmcDriver, frames_of
from harness.driver.host import HostDriver
from harness.driver.results import Mode, Transfer
from harness.hwdefs import emmc as E
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.emmc import Partition, RpmbResult
from harness.machine import CardImage, Machine
from harness.target import Target

#: The SD machine: q35, sdhci-pci, a 16 MiB SDSC card on QEMU's null block
#: driver (reads zeros, writes dropped: no image file needed).
SD_MACHINE = Machine(image=CardImage.null(16 << 20))
#: The eMMC image: 128 KiB boot partitions, 128 KiB RPMB, 4 MiB user area.
EMMC_IMAGE = "emmc-4m-boot128k-rpmb128k"
PASSWORD = b"sdqt"
RPMB_KEY = bytes(range(0x40, 0x60))
RPMB_NONCE = bytes(range(0xA0, 0xB0))


@dataclass(frozen=True)
class BugObservation:
    """What a reproducer saw: the bug or not, in one line."""

    present: bool
    detail: str


def emmc_machine() -> Machine:
    """q35, sdhci-pci and ``-device emmc`` on :data:`EMMC_IMAGE` (opened
    with ``snapshot=on``: never written)."""
    recipe = images.recipe(EMMC_IMAGE)
    return Machine(card_kind="emmc", card=recipe.emmc_props(),
                   image=CardImage(images.ensure(EMMC_IMAGE)))


def _sd(t: Target) -> HostDriver:
    d = HostDriver(t)
    d.setup()
    d.init_card()
    return d


def _lock_data(flags: int, password: bytes) -> bytes:
    """The CMD42 data structure (PLS 4.3.7) in a 512-byte block: the card's
    default block length, which every QEMU version takes."""
    return HostDriver.lock_block(flags, password).ljust(512, b"\0")


def lock_pwd_len(t: Target) -> BugObservation:
    """PLS 4.3.7.1-2: after setting a password, CMD42 LOCK with that password
    (PWD_LEN = its length) locks the card."""
    d = _sd(t)
    d.lock_unlock(_lock_data(S.LOCK_SET_PWD, PASSWORD), set_blocklen=False)
    st = d.send_status().r1
    if st & S.LOCK_UNLOCK_FAILED:
        return BugObservation(True, f"setting a {len(PASSWORD)}-byte password failed "
                              f"(status {st:#010x})")
    d.lock_unlock(_lock_data(S.LOCK_LOCK, PASSWORD), set_blocklen=False)
    st = d.send_status().r1
    locked = bool(st & S.CARD_IS_LOCKED) and not st & S.LOCK_UNLOCK_FAILED
    return BugObservation(not locked, f"CMD42 LOCK with the {len(PASSWORD)}-byte password: "
                          f"status {st:#010x}, " + ("locked" if locked else
                                                    "LOCK_UNLOCK_FAILED, not locked"))


def wide_data_byte_order(t: Target) -> BugObservation:
    """PLS 4.3.9 (ACMD22): the number of written blocks is sent as a 32-bit
    number, most significant byte first; one block written reads 00 00 00 01."""
    d = _sd(t)
    d.write_blocks(0, bytes(512))
    data = d.send_num_wr_blocks().data or b""
    spec = (1).to_bytes(4, "big")
    return BugObservation(data != spec, f"ACMD22 after one block written sent {data.hex(' ')} "
                          f"(the spec: {spec.hex(' ')})")


def acmd22_count_survives_reset(t: Target) -> BugObservation:
    """PLS 4.3.9, 4.2.1: CMD0 resets the card; ACMD22 before any write since
    then has no written blocks to count (0)."""
    d = _sd(t)
    d.write_blocks(0, bytes(512 * 3))
    d.cmd(S.index("GO_IDLE_STATE"), 0)
    d.init_card()
    data = d.send_num_wr_blocks().data or b""
    count = int.from_bytes(data, "big") if len(data) == 4 else -1
    return BugObservation(count != 0, f"ACMD22 after CMD0 and a new initialisation, no write: "
                          f"{data.hex(' ')} (three blocks were written before the reset)")


def command_during_transfer(t: Target) -> BugObservation:
    """PLS 4.3.3-4.3.4: CMD13 is valid in the receive-data state and leaves
    the transfer alone; the block sent afterwards completes the write.  (The
    abort itself is seen by the runner: QEMU gone, an assertion on stderr.)"""
    d = _sd(t)
    d.wr(H.BLKSIZE, 512)
    d.wr(H.BLKCNT, 1)
    d.wr(H.ARGUMENT, 0)
    d.wr(H.TRNMOD, 0)
    d.wr(H.CMDREG, H.cmdreg(24, H.RSP_48, crc=True, idx=True, data=True))
    d.wait_status("cmd", H.NIS_CMDCMPL)
    d.clear_status(H.NIS_CMDCMPL)
    st = d.send_status().r1
    for _ in range(512 // 4):
        d.wr(H.BDATA, 0x5A5A5A5A)
    after = d.send_status().r1
    return BugObservation(False, f"CMD13 during CMD24 answered {st:#010x}; after the block "
                          f"{after:#010x}; QEMU still running")


def command_during_read(t: Target) -> BugObservation:
    """PLS 4.3.3, Table 4-41: CMD13 is valid in the send-data state and
    leaves the transfer alone; the rest of a CMD18 read is the card's next
    bytes.  The host reads the card 4 bytes a block (SDHC 2.2.2: any block
    size); ACMD51 first (the 8-byte SCR).  QEMU >= 9.1 makes CMD13 the data
    source: its generic buffer holds the SCR's 8 bytes, which CMD18's 8 read
    bytes have passed, so ``sd_read_data`` sends none and
    ``sdbus_read_data`` asserts (the runner sees QEMU gone); past them, it
    copies the host's block size from beyond the buffer's end."""
    d = _sd(t)
    d.read_scr()
    d.wr(H.BLKSIZE, 4)
    d.wr(H.BLKCNT, 4)
    d.wr(H.ARGUMENT, d.address(1))
    d.wr(H.TRNMOD, H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    d.wr(H.CMDREG, H.cmdreg(18, H.RSP_48, crc=True, idx=True, data=True))
    d.wait_status("cmd", H.NIS_CMDCMPL)
    d.clear_status(H.NIS_CMDCMPL)
    d.wait_status("data", H.NIS_RBUFRDY)
    d.clear_status(H.NIS_RBUFRDY)
    first = d.rd(H.BDATA)  # the controller fetches the second block at once
    st = d.send_status().r1
    d.wait_status("data", H.NIS_RBUFRDY)
    d.clear_status(H.NIS_RBUFRDY)
    rest = [d.rd(H.BDATA) for _ in range(3)]  # the third and fourth after CMD13
    return BugObservation(False, f"CMD13 during CMD18 answered {st:#010x}; read {first:#x} "
                          f"then {[hex(w) for w in rest]}; QEMU still running")


def rspreg3_after_auto_cmd12(t: Target) -> BugObservation:
    """SDHC 2.2.7, 3.7.1.2: Response register 3 holds the Auto CMD12
    response; a single-block write ends in the transfer state, where the
    card does not answer CMD12 (PLS 4.8), so there is nothing to copy and
    the register keeps what the last R2 (CMD10's CID, with the card's
    manufacturer ID: not 0) put there."""
    d = _sd(t)
    d.deselect()
    d.send_cid()
    d.select()
    before = d.rd(H.RSPREG3)
    t_ = Transfer(read=False, block_count=1, multi=False, auto_cmd=12, data=bytes(512))
    res = d.cmd(S.index("WRITE_BLOCK"), d.address(0), data=t_)
    after = res.auto_cmd12_response if res.auto_cmd12_response is not None else d.rd(H.RSPREG3)
    return BugObservation(after != before, f"RSPREG3 {before:#010x} before a CMD24 with Auto "
                          f"CMD12 the card does not answer (CMD10's CID), {after:#010x} after")


def emmc_partition_range(t: Target) -> BugObservation:
    """JESD84-B51 6.2.5, 6.6.4: addresses are checked against the selected
    partition; the block after boot 1's last is out of range, not boot 2's first."""
    recipe = images.recipe(EMMC_IMAGE)
    d = EmmcDriver(t)
    d.setup()
    d.init_emmc()
    d.select_partition(Partition.BOOT1)
    past = recipe.boot_partition_size // 512
    r = d.read_blocks(past, 1)
    boot2 = recipe.expected(recipe.partition_starts()["boot2"], 512)
    leaked = not r.error and r.data == boot2
    return BugObservation(leaked, f"CMD17 of block {past} of boot 1 (it has {past}): " + (
        "boot 2's first block, no error" if leaked else
        ("an error" if r.error else "no error") + f", R1 {r.r1:#010x}"))


def emmc_rpmb_address_unchecked(t: Target) -> BugObservation:
    """JESD84-B51 6.6.22.4: an authenticated read of a half-sector past the
    RPMB partition fails with result 0x0004 (address failure)."""
    recipe = images.recipe(EMMC_IMAGE)
    d = EmmcDriver(t)
    d.setup()
    d.init_emmc()
    d.select_partition(Partition.RPMB)
    d.rpmb_program_key(RPMB_KEY)
    past = recipe.rpmb_partition_size // E.RPMB_DATA_BYTES
    frames = frames_of(d.rpmb_auth_read(past, 1, RPMB_NONCE))
    result = E.frame_int(frames[0], "result") if frames else -1
    return BugObservation(result != RpmbResult.ADDRESS_FAILURE,
                          f"authenticated read of half-sector {past} (RPMB has {past}): result "
                          f"{result:#06x} (the standard: {int(RpmbResult.ADDRESS_FAILURE):#06x})")


def uhs_machine() -> Machine:
    """:data:`SD_MACHINE` with an SD 3.00 controller that offers UHS-I (the
    properties that make Host Control 2 writable)."""
    return SD_MACHINE.replace(sdhci={"sd-spec-version": 3, "uhs": 1})


def _migrated(t: Target) -> list[str]:
    """Move ``t`` (a :class:`~harness.qemu.target.QemuTarget`) to a new QEMU
    of the same binary through a saved migration stream; the PCI registers
    the stream lost (restored afterwards, so the controller answers again)."""
    import tempfile

    from harness.qemu.migrate import migrate
    from harness.qemu.target import QemuTarget

    assert isinstance(t, QemuTarget)
    with tempfile.TemporaryDirectory(prefix="sdqtest-bug-migrate-") as tmp:
        return migrate(t, t.binary, Path(tmp), "bug").pci_lost


def hostctl2_not_migrated(t: Target) -> BugObservation:
    """SDHC 2.2.24 and QEMU's migration contract: a guest's UHS mode and
    driver strength in Host Control 2 read back the same after migration."""
    d = HostDriver(t)
    d.setup()
    value = (H.HOSTCTL2.field("UHSMODE").value(1) | H.HOSTCTL2.field("DRVSTR").value(1))
    d.wr(H.HOSTCTL2, value)
    before = d.rd(H.HOSTCTL2)
    _migrated(t)
    after = d.rd(H.HOSTCTL2)
    if before != value:
        return BugObservation(False, f"HOSTCTL2 took {before:#06x} for {value:#06x}: "
                              "not writable here, nothing to migrate")
    return BugObservation(after != before, f"HOSTCTL2 {before:#06x} before migration, "
                          f"{after:#06x} after")


def pci_config_not_migrated(t: Target) -> BugObservation:
    """PCI 3.0 6.2 and QEMU's migration contract: the BAR and the command
    register a guest programmed survive migration."""
    lost = _migrated(t)
    return BugObservation(bool(lost), "after migration: " + ("; ".join(lost) if lost
                                                           else "BAR0 and COMMAND kept"))


def _emmc(t: Target) -> EmmcDriver:
    d = EmmcDriver(t)
    d.setup()
    d.init_emmc()
    return d


def emmc_sleep_no_awake(t: Target) -> BugObservation:
    """JESD84-B51 6.6.21: CMD0 resets a sleeping device, which then goes
    through identification again.  (The abort is seen by the runner.)"""
    d = _emmc(t)
    d.sleep()
    d.cmd(S.index("GO_IDLE_STATE"), 0)
    d.init_emmc()
    st = d.send_status().r1
    return BugObservation(False, f"CMD0 after CMD5 sleep: the device initialised again, "
                          f"status {st:#010x}")


def emmc_gp_partition_access(t: Target) -> BugObservation:
    """JESD84-B51 7.4.69, 6.6.1: selecting general purpose partition 1 on a
    device without one is refused (SWITCH_ERROR); the next read is the user
    area's.  (An abort on that read is seen by the runner.)"""
    d = _emmc(t)
    d.select_partition(Partition.GP1)
    st = d.send_status().r1
    d.read_blocks(0, 1)
    refused = bool(st & E.SWITCH_ERROR)
    return BugObservation(not refused, f"PARTITION_ACCESS {int(Partition.GP1)} without general "
                          f"purpose partitions: status {st:#010x}, " +
                       ("SWITCH_ERROR" if refused else "accepted"))


def sd_image_machine() -> Machine:
    """q35, sdhci-pci and an SDSC card on the ``sdsc-16m`` image (opened
    with ``snapshot=on``: writes are seen by later reads, the file is kept)."""
    return Machine(image=CardImage(images.ensure("sdsc-16m")))


def sdma_boundary_resume(t: Target) -> BugObservation:
    """SDHC 3.00 1.14.1, 2.2.1: an SDMA transfer stopped at a buffer
    boundary resumes when the driver writes the next address to SDMA System
    Address (what Linux's sdhci_data_irq and U-Boot's sdhci_transfer_data
    do at each DMA Interrupt); 16 blocks over 4 KiB boundaries complete."""
    d = _sd(t)
    r = d.read_blocks(0, 16, mode=Mode.SDMA, sdma_boundary=4096)
    stalled = r.timeout is not None or bool(r.errintsts)
    return BugObservation(stalled, f"CMD18 of 16 blocks by SDMA with 4 KiB boundaries: "
                          f"{r.dma_interrupts} DMA interrupts, " + (
                           f"no Transfer Complete (timeout at {r.timeout})" if stalled
                           else "Transfer Complete"))


def wp_write_proceeds(t: Target) -> BugObservation:
    """PLS 4.3.4, 4.10.1 (WP_VIOLATION): after CMD28 protects the group of
    block 0, a CMD24 to block 0 is refused and the block keeps its data."""
    d = _sd(t)
    before = d.read_blocks(0, 1).data
    d.cmd(S.index("SET_WRITE_PROT"), d.address(0))
    w = d.write_blocks(0, bytes([0x5A]) * 512)
    after = d.read_blocks(0, 1).data
    return BugObservation(after != before, f"CMD24 to a protected group: R1 {w.r1:#010x}, "
                          "the block " + ("overwritten" if after != before else "kept"))


def dat_reset_keeps_adma(t: Target) -> BugObservation:
    """SDHC 3.00 2.2.16: Software Reset For DAT Line stops DMA.  An ADMA2
    read of three descriptors, each with Int, pauses after the first; after
    the DAT reset and a register read the third buffer is left as it was."""
    d = _sd(t)
    table, bufs = 0x200000, [0x210000 + i * 0x1000 for i in range(3)]
    for i, buf in enumerate(bufs):
        attr = 0x01 | 0x04 | 0x20 | (0x02 if i == 2 else 0)  # Valid, Int, Tran, End
        t.mem_write(buf, b"\xff" * 512)
        t.mem_write(table + 8 * i, ((512 << 16) | attr).to_bytes(4, "little")
                    + buf.to_bytes(4, "little"))
    d.wr(H.NORINTSIGEN, H.NIS_DMAINT)
    d.wr(H.HOSTCTL, H.HOSTCTL_DMA_ADMA2_32)
    d.wr(H.ADMASYSADDR, table, 4)
    d.wr(H.BLKSIZE, 512)
    d.wr(H.BLKCNT, 3)
    d.wr(H.TRNMOD, H.TRNMOD_DMA | H.TRNMOD_BLKCNT_EN | H.TRNMOD_MULTI | H.TRNMOD_READ)
    d.wr(H.ARGUMENT, 0)
    d.wr(H.CMDREG, H.cmdreg(18, H.RSP_48, crc=True, idx=True, data=True))
    d.wr(H.SWRST, H.SWRST_DAT)
    d.rd(H.NORINTSTS)
    after = t.mem_read(bufs[2], 4)
    return BugObservation(after != b"\xff" * 4, "third ADMA2 buffer after the DAT reset and a "
                          f"register read: {after.hex(' ')} (left as it was: ff ff ff ff)")
