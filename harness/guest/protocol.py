"""The console result protocol between a guest and the harness.

A guest (ours, or a user's own ``--kernel``/``--initrd``) prints lines on its
serial console; anything else on the console (kernel messages) is ignored::

    SDQTEST-HELLO {"protocol": 1, ...}        /init has started (ends the boot timeout)
    SDQTEST-START {"job": "fio:read:128:10:1024"}
    SDQTEST-RESULT {"job": "fio:read:128:10:1024", "ok": true, ...}
    SDQTEST-ERROR {"job": "boot", "error": "no /dev/mmcblk0 after 30 s"}
    SDQTEST-DONE                              last line; the guest then powers off

Each payload is one JSON object on the rest of the line.  The jobs to run are on
the kernel command line as ``sdqtest.jobs=JOB,JOB,...``, each ``kind:arg:arg...``:
``fio:RW:BS_KIB:RUNTIME_S:SIZE_MIB``, ``discard:OFFSET_MIB:LENGTH_MIB``,
``pwrite:OFFSET_KIB:LENGTH_KIB`` (writes ``/sdqtest/pattern.bin``) and
``pread:OFFSET_KIB:LENGTH_KIB`` (``sha256`` of what the card returns).  A ``fio``
result carries fio's ``--output-format=json`` under ``"fio"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness.errors import GuestError

PREFIX = "SDQTEST-"
KINDS = ("HELLO", "START", "RESULT", "ERROR", "DONE")
_LINE = re.compile(r"SDQTEST-(HELLO|START|RESULT|ERROR|DONE)(?:[ \t]+(.*))?$")


class ProtocolError(GuestError):
    """A line with the ``SDQTEST-`` prefix that does not follow the protocol."""


@dataclass(frozen=True)
class Message:
    """One protocol line: its kind and its JSON payload (empty for DONE)."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def job(self) -> str:
        return str(self.payload.get("job", ""))


def parse_line(line: str) -> Message | None:
    """The message on ``line``, None for any other console output.

    The prefix may follow other text on the same line (a kernel message that
    was not ended by a newline).  Raises :class:`ProtocolError` for a malformed
    payload."""
    line = line.replace("\r", "").rstrip("\n")
    at = line.find(PREFIX)
    if at < 0:
        return None
    m = _LINE.match(line[at:])
    if m is None:
        raise ProtocolError(f"unknown protocol line: {line[at:at + 80]!r}")
    kind, rest = m.group(1), (m.group(2) or "").strip()
    if kind == "DONE":
        return Message(kind)
    if not rest:
        raise ProtocolError(f"SDQTEST-{kind} without its JSON payload")
    try:
        payload = json.loads(rest)
    except ValueError as e:
        raise ProtocolError(f"SDQTEST-{kind}: payload is not JSON ({e}): {rest[:80]!r}") from e
    if not isinstance(payload, dict):
        raise ProtocolError(f"SDQTEST-{kind}: payload is not a JSON object: {rest[:80]!r}")
    if kind in ("START", "RESULT", "ERROR") and "job" not in payload:
        raise ProtocolError(f"SDQTEST-{kind} without \"job\": {rest[:80]!r}")
    if kind == "ERROR" and "error" not in payload:
        raise ProtocolError(f"SDQTEST-ERROR without \"error\": {rest[:80]!r}")
    return Message(kind, payload)


@dataclass
class Transcript:
    """What a guest said, in order: results by job, errors, whether it finished."""

    hello: dict[str, Any] | None = None
    started: list[str] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[tuple[str, str]] = field(default_factory=list)
    done: bool = False
    protocol_errors: list[str] = field(default_factory=list)

    def feed(self, msg: Message) -> None:
        if msg.kind == "HELLO":
            self.hello = msg.payload
        elif msg.kind == "START":
            self.started.append(msg.job)
        elif msg.kind == "RESULT":
            self.results[msg.job] = msg.payload
        elif msg.kind == "ERROR":
            self.errors.append((msg.job, str(msg.payload["error"])))
        else:
            self.done = True


def parse_console(text: str) -> Transcript:
    """Every protocol line of a whole console log (for logs and tests)."""
    t = Transcript()
    for line in text.splitlines():
        try:
            msg = parse_line(line)
        except ProtocolError as e:
            t.protocol_errors.append(str(e))
            continue
        if msg is not None:
            t.feed(msg)
    return t


def jobs_param(jobs: list[str]) -> str:
    """The kernel command line parameter naming ``jobs``."""
    for j in jobs:
        if not re.fullmatch(r"[a-z]+(:[A-Za-z0-9_.]+)*", j):
            raise ValueError(f"job {j!r}: kind:arg:arg... with letters, digits, _ and . only")
    return "sdqtest.jobs=" + ",".join(jobs)


def fio_summary(result: dict[str, Any]) -> dict[str, float]:
    """MiB/s and IOPS per direction (read/write) from a fio job result."""
    try:
        job = result["fio"]["jobs"][0]
    except (KeyError, IndexError, TypeError) as e:
        raise ProtocolError(f"fio result without jobs[0]: {e}") from e
    out: dict[str, float] = {}
    for d in ("read", "write"):
        part = job.get(d) or {}
        if part.get("io_bytes", 0):
            out[f"{d}_mibps"] = float(part["bw_bytes"]) / (1 << 20)
            out[f"{d}_iops"] = float(part["iops"])
            lat = (part.get("clat_ns") or {}).get("mean")
            if lat is not None:
                out[f"{d}_clat_ms"] = float(lat) / 1e6
    if not out:
        raise ProtocolError("fio moved no bytes")
    return out
