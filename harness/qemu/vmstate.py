"""The SD devices' fields in a QEMU migration stream, by name (issue #34).

A stream (``migrate`` to a file) ends with a JSON description of every
device section (``QEMU_VM_VMDESCRIPTION``: each device's name, instance,
version and its fields with their sizes); each device's data is a *full*
section (type 4, a 32-bit section id, the name with its length byte, the
instance and version ids) followed by the fields in that order, its
subsections, and a footer (``0x7e`` and the section id).  This module
finds the sections of the devices named (sdhci, sd-card) and splits them
into named fields, so that the state a migration carried can be compared
field by field: for one build and machine type, the destination saved
right after it loaded must write every field as the source did (a field
its ``post_load`` changes, or loads into the wrong place, differs).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from harness.errors import QemuError

#: Section types (QEMU's savevm stream, version 3).
_FULL, _DESCRIPTION, _FOOTER = 0x04, 0x06, 0x7E
#: The vmsd names of the devices compared.
DEVICES = ("sdhci", "sd-card")


class StreamError(QemuError, ValueError):
    """The stream is not one this module can split (no description, no section)."""


def description(stream: bytes) -> dict[str, Any]:
    """The stream's JSON description of its devices (the last section)."""
    at = stream.rfind(b'"devices"')
    while at > 0:
        at = stream.rfind(bytes([_DESCRIPTION]), 0, at)
        if at < 0:
            break
        n = struct.unpack_from(">I", stream, at + 1)[0]
        try:
            data: dict[str, Any] = json.loads(stream[at + 5:at + 5 + n])
            return data
        except (ValueError, UnicodeDecodeError):
            continue
    raise StreamError("no device description in the stream (QEMU_VM_VMDESCRIPTION)")


def _section(stream: bytes, dev: dict[str, Any]) -> tuple[int, int]:
    """``(data start, footer offset)`` of ``dev``'s full section."""
    name = dev["name"].encode()
    tail = bytes([len(name)]) + name + struct.pack(">II", dev["instance_id"], dev["version"])
    at = stream.find(tail)
    while at >= 5 and stream[at - 5] != _FULL:
        at = stream.find(tail, at + 1)
    if at < 5:
        raise StreamError(f"no section for {dev['name']}")
    section_id = stream[at - 4:at]
    start = at + len(tail)
    end = stream.find(bytes([_FOOTER]) + section_id, start)
    return start, end if end >= 0 else len(stream)


def fields(stream: bytes, devices: tuple[str, ...] = DEVICES) -> dict[str, bytes]:
    """``{"DEVICE.FIELD": bytes}`` of each device whose vmsd name is in
    ``devices`` (the bytes past the described fields, subsections and all,
    as ``DEVICE.subsections``)."""
    out: dict[str, bytes] = {}
    for dev in description(stream)["devices"]:
        if dev.get("vmsd_name") not in devices:
            continue
        start, end = _section(stream, dev)
        at, label = start, dev["vmsd_name"]
        for f in dev.get("fields", ()):
            n = int(f["size"]) * int(f.get("array_len", 1))
            out[f"{label}.{f['name']}"] = stream[at:at + n]
            at += n
        out[f"{label}.subsections"] = stream[at:end]
    return out


def lost(source: bytes, destination: bytes, devices: tuple[str, ...] = DEVICES) -> list[str]:
    """The fields of ``devices`` that differ between two streams of one build
    and machine type, each as ``FIELD: source HEX, destination HEX``."""
    a, b = fields(source, devices), fields(destination, devices)
    out = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            out.append(f"{name}: source {_hex(a.get(name))}, destination {_hex(b.get(name))}")
    return out


def _hex(v: bytes | None) -> str:
    if v is None:
        return "(absent)"
    return v.hex() if len(v) <= 16 else f"{v[:16].hex()}... ({len(v)} bytes)"
