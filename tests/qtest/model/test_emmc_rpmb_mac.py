"""The model's RPMB MACs against HMAC-SHA256 computed here, independently.

Frames are built byte by byte from the JEDEC RPMB data frame layout
(JESD84-B51 6.6.22: stuff 196, key/MAC 32, data 256, nonce 16, write
counter 4, address 2, block count 2, result 2, request/response 2; numbers
big-endian) without the harness's frame helpers, and the MAC is computed
with ``hmac``/``hashlib`` over bytes 228..511.
"""

from __future__ import annotations

import hashlib
import hmac
import struct

from harness.hwdefs.emmc import Partition
from harness.model.clock import VirtualClock
from harness.model.emmc import EmmcCard

KEY = bytes(range(100, 132))
BOOT = RPMB = 128 << 10
SIZE = 2 * BOOT + RPMB + (1 << 20)


def frame(*, key_mac: bytes = bytes(32), data: bytes = bytes(256), nonce: bytes = bytes(16),
          counter: int = 0, address: int = 0, count: int = 0, result: int = 0,
          req: int = 0) -> bytes:
    out = bytes(196) + key_mac + data + nonce + struct.pack(">IHHHH", counter, address, count,
                                                             result, req)
    assert len(out) == 512
    return out


def mac(key: bytes, *frames: bytes) -> bytes:
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        h.update(f[228:512])
    return h.digest()


def card() -> EmmcCard:
    c = EmmcCard(VirtualClock(), size=SIZE, boot_partition_size=BOOT, rpmb_partition_size=RPMB)
    c.ext_csd[179] = Partition.RPMB
    c.multi_blk_cnt = 1
    return c


def respond(c: EmmcCard, count: int = 1) -> bytes:
    c.multi_blk_cnt = count
    c._rpmb_response()
    return bytes(c.xfer.buf[:512])


def test_result_frame_mac_matches_hmac() -> None:
    c = card()
    c._rpmb_request(frame(key_mac=KEY, req=1))
    c._rpmb_request(frame(nonce=b"N" * 16, req=2))
    out = respond(c)
    assert out[500:504] == b"\0\0\0\0" and out[510:512] == b"\x02\x00"
    assert out[484:500] == b"N" * 16
    assert out[196:228] == mac(KEY, out)


def test_write_with_independent_mac_is_accepted() -> None:
    c = card()
    c._rpmb_request(frame(key_mac=KEY, req=1))
    data = bytes(range(256))
    unsigned = frame(data=data, counter=0, address=3, count=1, req=3)
    c._rpmb_request(frame(key_mac=mac(KEY, unsigned), data=data, counter=0, address=3,
                          count=1, req=3))
    res = respond(c)
    assert struct.unpack(">H", res[508:510])[0] == 0  # OK
    assert c.rpmb_counter == 1
    assert c.image_read(2 * BOOT + 3 * 256, 256) == data
    assert res[196:228] == mac(KEY, res)


def test_wrong_mac_and_replay_are_refused() -> None:
    c = card()
    c._rpmb_request(frame(key_mac=KEY, req=1))
    unsigned = frame(data=b"x" * 256, count=1, req=3)
    bad = bytearray(mac(KEY, unsigned))
    bad[0] ^= 1
    c._rpmb_request(frame(key_mac=bytes(bad), data=b"x" * 256, count=1, req=3))
    assert struct.unpack(">H", respond(c)[508:510])[0] == 2  # authentication failure
    good = frame(key_mac=mac(KEY, unsigned), data=b"x" * 256, count=1, req=3)
    c.multi_blk_cnt = 1
    c._rpmb_request(good)
    c.multi_blk_cnt = 1
    c._rpmb_request(good)
    assert struct.unpack(">H", respond(c)[508:510])[0] == 3  # counter failure
    assert c.rpmb_counter == 1


def test_multi_frame_read_mac_covers_every_frame() -> None:
    c = card()
    c._rpmb_request(frame(key_mac=KEY, req=1))
    for addr in range(3):
        d = bytes([addr + 1]) * 256
        c.multi_blk_cnt = 1
        c._rpmb_request(frame(key_mac=mac(KEY, frame(data=d, counter=addr, address=addr,
                                                     count=1, req=3)),
                              data=d, counter=addr, address=addr, count=1, req=3))
    c._rpmb_request(frame(nonce=b"n" * 16, address=0, count=3, req=4))
    frames = []
    for left in (3, 2, 1):
        frames.append(respond(c, left))
    assert [f[228] for f in frames] == [1, 2, 3]
    assert frames[-1][196:228] == mac(KEY, *frames)
    # every frame of the response carries the same nonce .. request tail
    assert len({f[484:512] for f in frames}) == 1


def test_wrong_key_does_not_verify() -> None:
    c = card()
    c._rpmb_request(frame(key_mac=KEY, req=1))
    c._rpmb_request(frame(req=2))
    out = respond(c)
    assert out[196:228] != mac(bytes(32), out)
