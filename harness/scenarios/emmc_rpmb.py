"""eMMC RPMB scenarios: key, counter, authenticated write and read (JESD84-B51 6.6.22).

Frames go through CMD23 + CMD25 (requests) and CMD23 + CMD18 (responses)
with PARTITION_ACCESS = 3.  The facts checked on QEMU's answers are the
standard's: result codes, the counter, and MACs recomputed here from the
response frames with the key the host programmed.
"""

from __future__ import annotations

from harness import images
from harness.driver.emmc import EmmcDriver, frames_of
from harness.driver.results import CommandResult, Mode
from harness.hwdefs import emmc as E
from harness.hwdefs.emmc import Partition, RpmbRequest, RpmbResult
from harness.scenarios.common import test_data
from harness.scenarios.emmc import emmc_ready, emmc_scenario
from harness.scenarios.registry import Context, has_property
from harness.target import Target

KEY = bytes(range(0x40, 0x60))
NONCE = bytes(range(0xA0, 0xB0))


def _frame(res: CommandResult, i: int = 0) -> bytes:
    frames = frames_of(res)
    return frames[i] if len(frames) > i else bytes(E.RPMB_FRAME_BYTES)


def _result(res: CommandResult, i: int = 0) -> int:
    return E.frame_int(_frame(res, i), "result")


def _rpmb(t: Target) -> EmmcDriver:
    d = emmc_ready(t)
    d.select_partition(Partition.RPMB)
    return d


def _with_key(t: Target, ctx: Context) -> EmmcDriver:
    d = _rpmb(t)
    r = d.rpmb_program_key(KEY)
    ctx.expect(_result(r) == RpmbResult.OK, "programming the key failed")
    mac = E.rpmb_mac(KEY, [_frame(r)])
    ctx.expect(E.frame_get(_frame(r), "key_mac") == mac, "result frame MAC is wrong")
    return d


def _counter(d: EmmcDriver, ctx: Context) -> int:
    r = d.rpmb_read_counter(NONCE)
    f = _frame(r)
    ctx.expect(E.frame_get(f, "nonce") == NONCE, "counter response lost the nonce")
    ctx.expect(E.frame_get(f, "key_mac") == E.rpmb_mac(KEY, [f]), "counter response MAC")
    return E.frame_int(f, "write_counter")


@emmc_scenario("emmc-rpmb-no-key", "emmc-rpmb")
def _no_key(t: Target, ctx: Context) -> None:
    """Before a key: counter read and authenticated write answer 0x0007."""
    d = _rpmb(t)
    r = d.rpmb_read_counter(NONCE)
    ctx.expect(_result(r) == RpmbResult.NO_KEY, "counter read without a key did not fail")
    r = d.rpmb_auth_write(d.rpmb_write_frame(KEY, 0, bytes(256), 0))
    ctx.expect(_result(r) == RpmbResult.NO_KEY, "write without a key did not fail")
    d.rpmb_receive()


@emmc_scenario("emmc-rpmb-key-twice", "emmc-rpmb")
def _key_twice(t: Target, ctx: Context) -> None:
    """The key is programmed once: a second request fails with 0x0005; it
    survives CMD0 (the device re-initialised)."""
    d = _with_key(t, ctx)
    r = d.rpmb_program_key(bytes(32))
    ctx.expect(_result(r) == RpmbResult.WRITE_FAILURE, "second key programming accepted")
    d.cmd(E.index("GO_IDLE_STATE"), 0)
    d.init_emmc()
    d.select_partition(Partition.RPMB)
    ctx.expect(_counter(d, ctx) == 0, "counter is not 0 before any write")


@emmc_scenario("emmc-rpmb-write-read", "emmc-rpmb")
def _write_read(t: Target, ctx: Context) -> None:
    """Good authenticated writes advance the counter; authenticated reads of
    one and of three half-sectors return the data with a MAC over all frames."""
    d = _with_key(t, ctx)
    for i, addr in enumerate((0, 1, 2)):
        data = test_data(256, addr + 1)
        r = d.rpmb_auth_write(d.rpmb_write_frame(KEY, addr, data, i))
        ctx.expect(_result(r) == RpmbResult.OK, f"write {i} failed")
        ctx.expect(E.frame_int(_frame(r), "write_counter") == i + 1, "counter did not advance")
    ctx.expect(_counter(d, ctx) == 3, "counter is not 3 after three writes")
    r = d.rpmb_auth_read(1, 1, NONCE)
    f = _frame(r)
    ctx.expect(E.frame_get(f, "data") == test_data(256, 2), "read data differs")
    ctx.expect(E.frame_get(f, "key_mac") == E.rpmb_mac(KEY, [f]), "read MAC is wrong")
    r = d.rpmb_auth_read(0, 3, NONCE)
    frames = frames_of(r)
    ctx.expect(len(frames) == 3 and E.frame_get(frames[-1], "key_mac")
               == E.rpmb_mac(KEY, frames), "multi-frame read MAC is wrong")
    d.select_partition(Partition.USER)
    d.read_blocks(0, 1)


@emmc_scenario("emmc-rpmb-bad-mac", "emmc-rpmb")
def _bad_mac(t: Target, ctx: Context) -> None:
    """A write with a wrong MAC fails with 0x0002 and keeps the counter."""
    d = _with_key(t, ctx)
    frame = d.rpmb_write_frame(KEY, 0, bytes(256), 0, mac=bytes(32))
    r = d.rpmb_auth_write(frame)
    ctx.expect(_result(r) == RpmbResult.AUTH_FAILURE, "bad MAC not reported")
    ctx.expect(_counter(d, ctx) == 0, "counter moved on a bad MAC")


@emmc_scenario("emmc-rpmb-replay", "emmc-rpmb")
def _replay(t: Target, ctx: Context) -> None:
    """The same write frame twice: the second fails with 0x0003 (counter)."""
    d = _with_key(t, ctx)
    frame = d.rpmb_write_frame(KEY, 4, test_data(256, 9), 0)
    ctx.expect(_result(d.rpmb_auth_write(frame)) == RpmbResult.OK, "first write failed")
    r = d.rpmb_auth_write(frame)
    ctx.expect(_result(r) == RpmbResult.COUNTER_FAILURE, "replayed write not refused")
    ctx.expect(_counter(d, ctx) == 1, "counter is not 1")


@emmc_scenario("emmc-rpmb-wrong-address", "emmc-rpmb")
def _wrong_address(t: Target, ctx: Context) -> None:
    """A write and a read at the first half-sector past the RPMB partition:
    the standard's 0x0004 (address failure)."""
    d = _with_key(t, ctx)
    past = 128 * 1024 // E.RPMB_DATA_BYTES
    r = d.rpmb_auth_write(d.rpmb_write_frame(KEY, past, test_data(256, 77), 0))
    ctx.expect(_result(r) == RpmbResult.ADDRESS_FAILURE, "write past RPMB accepted",
               "emmc.rpmb-address-unchecked")
    r = d.rpmb_auth_read(past, 1, NONCE)
    ctx.expect(_result(r) == RpmbResult.ADDRESS_FAILURE, "read past RPMB accepted",
               "emmc.rpmb-address-unchecked")
    # the last address: past the end of the image file, so QEMU's block layer fails
    r = d.rpmb_auth_write(d.rpmb_write_frame(KEY, 0xFFFF, test_data(256, 78),
                                             E.frame_int(_frame(r), "write_counter") + 1))
    ctx.expect(_result(r) in (RpmbResult.ADDRESS_FAILURE, RpmbResult.WRITE_FAILURE),
               "write past the image accepted")
    d.rpmb_auth_read(0xFFFF, 1, NONCE)
    d.rpmb_auth_read(0xFFFE, 2, NONCE)
    # the last half-sector of the image file, then one past it
    r_ = images.recipe(ctx.image)
    last = (r_.size - r_.partition_starts()["rpmb"]) // E.RPMB_DATA_BYTES - 1
    d.rpmb_auth_read(last, 2, NONCE)
    # CMD18 at the user area's last block: the card checks each frame's
    # address against the user area (ADDRESS_ERROR past it, the rest zeros)
    user = (r_.size - r_.partition_starts()["user"]) // 512
    d.rpmb_auth_read(0, 2, NONCE)
    d.read_blocks(user - 1, 2, block_size=E.RPMB_FRAME_BYTES, stop="cmd23", multi=True)
    d.send_status()
    # and CMD25 there: the second request frame lies past it (dropped)
    asks = E.rpmb_frame(req_resp=RpmbRequest.READ_RESULT) * 2
    d.cmd(E.index("SET_BLOCK_COUNT"), 2)
    d.write_blocks(user - 1, asks, block_size=E.RPMB_FRAME_BYTES, stop="none", multi=True)
    d.send_status()
    d.select_partition(Partition.USER)
    d.read_blocks(0, 1)


@emmc_scenario("emmc-rpmb-odd-requests", "emmc-rpmb")
def _odd(t: Target, ctx: Context) -> None:
    """A write frame sent with block count 2 (general failure), an
    unimplemented request type (0x0006), a read without CMD23, a 16-bit
    CMD23 count, SDMA and ADMA2 frames."""
    d = _with_key(t, ctx)
    frame = d.rpmb_write_frame(KEY, 0, bytes(256), 0)
    d.rpmb_send(frame, count=2)
    d.stop_transmission()
    d.rpmb_result_request()
    d.rpmb_send(E.rpmb_frame(req_resp=RpmbRequest.AUTH_CONFIG_WRITE))
    d.rpmb_receive()
    d.read_blocks(0, 1, block_size=512, stop="cmd12", multi=True)
    # CMD23's count is 16 bits on eMMC: 0x10001 is a count of 1
    d.cmd(E.index("SET_BLOCK_COUNT"), 0x10001)
    d.write_blocks(0, d.rpmb_write_frame(KEY, 0, bytes(256), 0), block_size=512,
                   stop="none", multi=True)
    d.rpmb_result_request()
    for mode in (Mode.SDMA, Mode.ADMA2):
        d.rpmb_read_counter(NONCE, mode=mode)


@emmc_scenario("emmc-rpmb-auth-key-property", "emmc-rpmb",
               props={"auth-key": KEY.hex()}, extra=(has_property("emmc", "auth-key"),))
def _auth_key(t: Target, ctx: Context) -> None:
    """The auth-key property programs the key at realize: programming again fails, a
    counter read answers with a MAC under that key."""
    d = _rpmb(t)
    r = d.rpmb_program_key(bytes(32))
    ctx.expect(_result(r) == RpmbResult.WRITE_FAILURE, "key programmed over auth-key")
    ctx.expect(_counter(d, ctx) == 0, "counter is not 0")

