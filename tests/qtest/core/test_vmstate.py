"""Splitting a migration stream into the SD devices' named fields (issue #34)."""

from __future__ import annotations

import json
import struct

import pytest

from harness.qemu import vmstate

_FIELDS = [{"name": "blksize", "type": "uint16", "size": 2},
           {"name": "rspreg", "array_len": 4, "type": "uint32", "size": 4},
           {"name": "stopped_state", "type": "uint8", "size": 1}]


def _stream(blksize: int, stopped: int, *, sub: bytes = b"") -> bytes:
    """A stream as QEMU's savevm writes one (magic, version, a full section
    with its footer, then the JSON description), from the format alone."""
    name = b"0000:00:01.0/sdhci"
    data = struct.pack(">H", blksize) + bytes(16) + bytes([stopped]) + sub
    section = (bytes([4]) + struct.pack(">I", 7) + bytes([len(name)]) + name
               + struct.pack(">II", 0, 1) + data + bytes([0x7E]) + struct.pack(">I", 7))
    other = bytes([4]) + struct.pack(">I", 8) + b"\x03rtc" + struct.pack(">II", 0, 3) + b"xy"
    desc = json.dumps({"page_size": 4096, "devices": [
        {"name": name.decode(), "instance_id": 0, "vmsd_name": "sdhci", "version": 1,
         "fields": _FIELDS}]}).encode()
    return (b"QEVM" + struct.pack(">I", 3) + section + other + bytes([0x7E, 0, 0, 0, 8])
            + bytes([6]) + struct.pack(">I", len(desc)) + desc)


def test_fields_are_split_by_the_description() -> None:
    f = vmstate.fields(_stream(0x200, 1, sub=b"\x05sub"))
    assert f["sdhci.blksize"] == b"\x02\x00"
    assert f["sdhci.rspreg"] == bytes(16)
    assert f["sdhci.stopped_state"] == b"\x01"
    assert f["sdhci.subsections"] == b"\x05sub"


def test_lost_names_each_field_that_differs() -> None:
    a = _stream(0x200, 1)
    assert vmstate.lost(a, a) == []
    got = vmstate.lost(a, _stream(0x200, 0))
    assert got == ["sdhci.stopped_state: source 01, destination 00"]


def test_a_stream_without_a_description_is_refused() -> None:
    with pytest.raises(vmstate.StreamError):
        vmstate.fields(b"QEVM\x00\x00\x00\x03")
