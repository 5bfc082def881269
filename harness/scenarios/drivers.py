"""The drivers group: real drivers' recorded controller traffic, replayed in lockstep.

Each file in ``drivers_data/`` is one recording (``sdqtest drivers record`` made
it: :mod:`harness.guest.record` boots a real guest under TCG with QEMU's trace on,
:mod:`harness.scenarios.drivers_convert` turns the trace into this data).  It names
its source (the guest's packages and versions, the kernel command line, the
machine, the QEMU build it was recorded on) and what the guest did, phase by
phase; each phase holds the controller accesses in the driver's order, one per
line::

    w2 0x0e 0x183a        write 2 bytes at 0x0e (CMDREG)
    w4 -0x1e8 0x0         a register below the window (the Cadence HRS06, at -0x200 + 0x18)
    r4 0x30 *2            read 4 bytes at 0x30, twice (each answer compared)
    r4 0x30 +12           read after the guest let 12 µs pass (the clock steps first)
    u4 0x2c 0x2 0x2 17    poll: read until (value & 0x2) == 0x2, at most 17 reads
    d4 0x2040 0x1*3 0x2   write a data port: 0x1 three times, then 0x2 (PIO data)
    t4 0x48 0xff*8        read, then write, a data port per value (SiFive SPI's txdata)
    a 0x0                 ARGUMENT = RCA << 16 | 0x0 (the RCA this card published)
    w4 0x58 @table        ADMA System Address = the rebuilt descriptor table
    {"adma": [[off, len, attr], ...], "cmd": 25, "block": b, "data": [...]}
    {"idma": [[off, len], ...], "cmd": 25, ...}   the Allwinner's descriptor chain
    {"repeat": 128, "ops": ["r4 0x003c", "r4 0x0200 *1"]}   these lines 128 times

An ``adma`` object rebuilds, in the driver's DMA arena, the descriptor table the
controller walked (buffers at ``off`` into the arena's data area) followed by the
driver's own table end when the recording names one, and fills a write's buffers
with the data it carried (runs: ``["i", block, n]`` the image recipe's blocks,
``["z", n]`` zeros, ``["f", hex, n]`` a repeated pattern, ``["s", [[at, hex]...]]``
a block of zeros but these bytes).  Text after ``#`` is for the reader (the
recorded value of a read, the register's name).  A recording of a controller
that is no SDHCI names it (``"host": "pl181"``, :mod:`harness.scenarios.
drivers_hosts`): its offsets are the board window's, and its command, argument
and response registers are the host's.

The replay compares model and QEMU at every access (the lockstep); the recorded
values are the recording build's answers and are not expected of the build under
test, but a poll (``u``) is a wait both sides must end: a poll that never ends is
a miss (a real driver would time out there).  The RCA is the one thing a driver
learns from the card and writes back: the replay learns it from the CMD3
response as the driver did.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import images
from harness.driver.host import HostDriver
from harness.errors import SdqtestError
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.scenarios.drivers_hosts import HOSTS, SDHCI
from harness.scenarios.drivers_idma import descriptor_words
from harness.scenarios.registry import Context, Scenario, add
from harness.target import Target

GROUP = "drivers"
DATA = Path(__file__).with_name("drivers_data")
FORMAT = 1
_SEND_RELATIVE_ADDR = S.index("SEND_RELATIVE_ADDR")
#: The clock step between two reads of a poll whose condition did not hold.
POLL_NS = 10_000
#: The table end each driver's ADMA2 table carries after its last descriptor.
TABLE_ENDS = {"nop-end": H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_END), "": b""}

_OP = re.compile(r"(?P<kind>[rwudt])(?P<size>[1248]) (?P<off>-?0x[0-9a-f]+)(?P<rest>[^#]*)")
_ARG = re.compile(r"a (?P<low>0x[0-9a-f]+)")


class FormatError(SdqtestError, ValueError):
    """A recording file this module cannot read (its name and the bad line)."""


def recordings(folder: Path = DATA) -> list[dict[str, Any]]:
    """Every recording in ``folder``, by file name."""
    out = []
    for p in sorted(folder.glob("*.json")):
        try:
            data: dict[str, Any] = json.loads(p.read_text())
        except ValueError as e:
            raise FormatError(f"{p.name}: not JSON ({e})") from None
        if data.get("format") != FORMAT:
            raise FormatError(f"{p.name}: format {data.get('format')!r}, this sdqtest reads "
                              f"{FORMAT}")
        out.append(data)
    return out


def block_data(runs: list[list[Any]]) -> bytes:
    """The bytes of a write's data runs (see the module docstring)."""
    out = bytearray()
    for run in runs:
        kind = run[0]
        if kind == "i":
            out += b"".join(images.pattern_block(run[1] + k) for k in range(run[2]))
        elif kind == "z":
            out += bytes(images.BLOCK * run[1])
        elif kind == "f":
            pat = bytes.fromhex(run[1])
            n = images.BLOCK * run[2]
            out += (pat * (n // len(pat) + 1))[:n]
        elif kind == "s":
            blk = bytearray(images.BLOCK)
            for at, hexdata in run[1]:
                b = bytes.fromhex(hexdata)
                blk[at:at + len(b)] = b
            out += blk
        else:
            raise FormatError(f"unknown data run {kind!r}")
    return bytes(out)


def command_index(offset: int, size: int, value: int) -> int | None:
    """The command a write issues (CMDREG, or TRNMOD and CMDREG in one longword)."""
    if offset == H.CMDREG.offset and size == 2:
        return (value >> 8) & 0x3F
    if offset == H.TRNMOD.offset and size == 4:
        return (value >> 24) & 0x3F
    return None


@dataclass
class Replay:
    """One recording replayed on a target (the lockstep, or one side alone)."""

    target: Target
    recording: dict[str, Any]
    ctx: Context | None = None
    rca: int = 0
    last_cmd: int | None = None
    #: ``(phase, operation index)`` of the operation being replayed.
    where: tuple[str, int] = ("", 0)
    polls_unmet: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.host = HOSTS[self.recording.get("host", "sdhci")]
        self.driver = HostDriver(self.target)
        self.table_end = TABLE_ENDS[self.recording.get("adma_end", "")]

    def run(self, phases: list[str] | None = None) -> None:
        """Every phase (or those named), in the recording's order."""
        for ph in self.recording["phases"]:
            if phases is None or ph["name"] in phases:
                self.phase(ph)

    def phase(self, ph: dict[str, Any]) -> None:
        """One phase's operations, then the DMA arena compared; on a lockstep, a
        note of the steps it took and the ledger entries met so far."""
        start = getattr(self.target, "count", None)
        for i, op in enumerate(ph["ops"]):
            self.where = (ph["name"], i)
            self.op(op)
        self.driver.arena.compare()
        if self.ctx is not None and isinstance(start, int):
            self.ctx.note(evidence_note(self.target, ph["name"], start))

    def op(self, op: str | dict[str, Any]) -> None:
        """One operation: a line, a DMA object, or a repeated block of lines."""
        if isinstance(op, str):
            self.line(op)
        elif "repeat" in op:
            for _ in range(op["repeat"]):
                for line in op["ops"]:
                    self.line(line)
        elif "idma" in op:
            self.idma(op)
        else:
            self.adma(op)

    def line(self, text: str) -> None:
        m = _OP.match(text)
        if m is None:
            a = _ARG.match(text)
            if a is None:
                raise FormatError(f"{self.where[0]} op {self.where[1]}: {text!r}")
            self.wait(text.split("#", 1)[0].split())
            self.target.write(self.host.arg_reg, 4, (self.rca << 16) | int(a["low"], 16))
            return
        kind, size, off = m["kind"], int(m["size"]), int(m["off"], 16)
        rest = [w for w in m["rest"].split() if not w.startswith("+")]
        self.wait(m["rest"].split())
        if kind == "w":
            self.write(off, size, rest[0])
        elif kind in "dt":  # t: read the port (a FULL flag), then write the value
            for word in rest:
                value, _, n = word.partition("*")
                for _ in range(int(n or 1)):
                    if kind == "t":
                        self.read(off, size)
                    self.target.write(off, size, int(value, 16))
        elif kind == "r":
            times = int(rest[0][1:]) if rest and rest[0].startswith("*") else 1
            for _ in range(times):
                self.read(off, size)
        else:
            self.poll(off, size, int(rest[0], 16), int(rest[1], 16), int(rest[2]), text)

    def wait(self, words: list[str]) -> None:
        """The time the guest let pass before the access (``+US``), on the clock."""
        for w in words:
            if w.startswith("+"):
                self.target.clock_step(int(w[1:]) * 1000)

    def write(self, off: int, size: int, value: str) -> None:
        if value == "@table":
            v = self.driver.desc_area & 0xFFFFFFFF
        elif value == "@table-hi":
            v = self.driver.desc_area >> 32
        else:
            v = int(value, 16)
        cmd = (command_index(off, size, v) if self.host is SDHCI
               else self.host.command(off, size, v))
        if cmd is not None:
            self.last_cmd = cmd
        self.target.write(off, size, v)

    def read(self, off: int, size: int) -> int:
        v = self.target.read(off, size)
        if off == self.host.rsp0_reg and size == 4 and self.last_cmd == _SEND_RELATIVE_ADDR:
            self.rca = v >> 16  # R6 (PLS 4.9.5): the RCA the driver writes back
        return v

    def poll(self, off: int, size: int, mask: int, want: int, most: int, text: str) -> None:
        """Read until ``(value & mask) == want``, the clock stepped between reads
        (the driver's delay), at most ``most`` reads; unmet: a miss."""
        for i in range(most):
            if self.read(off, size) & mask == want:
                return
            if i + 1 < most:
                self.target.clock_step(POLL_NS)
        what = text.split("#", 1)[-1].strip()
        message = (f"{self.recording['name']} {self.where[0]}: the driver's wait ({what}) "
                   f"not over after {most} reads: a real driver times out here")
        self.polls_unmet.append(message)
        if self.ctx is not None:
            self.ctx.expect(False, message)

    def idma(self, op: dict[str, Any]) -> None:
        """The Allwinner's descriptor chain and buffers of the next command, in the
        arena, the descriptors as Linux writes them (:mod:`harness.scenarios.drivers_idma`)."""
        d = self.driver
        arena = d.arena
        arena.compare()
        d.open_arena()
        arena.begin()
        sizes = [n for _off, n in op["idma"]]
        bufs = [d.data_area + off for off, _n in op["idma"]]
        table = descriptor_words(sizes, d.desc_area, bufs)
        arena.place(d.desc_area, len(table), "IDMAC descriptors")
        for k, (addr, n) in enumerate(zip(bufs, sizes, strict=True)):
            arena.place(addr, n, f"IDMAC buffer {k + 1}/{len(bufs)}")
        self.target.mem_write(d.desc_area, table)
        if "data" in op:
            data = block_data(op["data"])
            pos = 0
            for addr, n in zip(bufs, sizes, strict=True):
                self.target.mem_write(addr, data[pos:pos + n])
                pos += n

    def adma(self, op: dict[str, Any]) -> None:
        """The descriptor table and buffers of the next command, in the arena."""
        d = self.driver
        arena = d.arena
        arena.compare()  # what the previous transfer left
        d.open_arena()
        arena.begin()
        table = b"".join(H.adma2_desc32((d.data_area + off) & 0xFFFFFFFF if off >= 0 else 0,
                                        n, attr) for off, n, attr in op["adma"])
        table += self.table_end
        arena.place(d.desc_area, len(table), "ADMA2 descriptor table")
        segs = [(d.data_area + off, n or 0x10000) for off, n, _ in op["adma"] if off >= 0]
        for k, (addr, n) in enumerate(segs):
            arena.place(addr, n, f"ADMA2 data segment {k + 1}/{len(segs)}")
        self.target.mem_write(d.desc_area, table)
        if "data" in op:
            data = block_data(op["data"])
            pos = 0
            for addr, n in segs:
                self.target.mem_write(addr, data[pos:pos + n])
                pos += n


#: The start of the note a phase leaves (``sdqtest drivers evidence`` reads it).
NOTE = "driver phase"


def evidence_note(target: Target, phase: str, start: int) -> str:
    """``driver phase NAME: steps A-B; consulted: K...; quirks: K...``: the steps
    the phase took on the lockstep ``target`` and, so far in the run, the model's
    switches consulted and the quirks that explained a difference."""
    end = getattr(target, "count", start)
    model = getattr(target, "model", None)
    asked = getattr(model, "deviations_consulted", None)
    consulted = sorted(asked()) if callable(asked) else []
    quirks = sorted(getattr(getattr(target, "quirks", None), "used", ()))
    return (f"{NOTE} {phase}: steps {start}-{end}; consulted: {' '.join(consulted)}; "
            f"quirks: {' '.join(quirks)}")


def parse_note(note: str) -> tuple[str, int, int, list[str], list[str]] | None:
    """A phase note's phase, first and end step, switches consulted, quirks; None
    for any other note."""
    m = re.fullmatch(rf"{NOTE} (\S+): steps (\d+)-(\d+); consulted: ([^;]*); quirks: (.*)",
                     note)
    if m is None:
        return None
    return (m[1], int(m[2]), int(m[3]), m[4].split(), m[5].split())


def describe(rec: dict[str, Any]) -> str:
    """One line: the driver, where and on what it was recorded, what it did."""
    src = rec["source"]
    return (f"{rec['driver']} recorded on QEMU {src['qemu']['version']} {src['machine']} "
            f"{src['controller']}: " + ", ".join(p["name"] for p in rec["phases"]) + ".")


def _scenario(rec: dict[str, Any]) -> Scenario:
    def fn(target: Target, ctx: Context) -> None:
        Replay(target, rec, ctx).run()

    params = {"recording": rec["name"], "driver": rec["driver"]}
    if rec.get("board"):  # recorded on this ARM board's controller: runs there only
        params["board"] = rec["board"]
    return Scenario(rec["name"], GROUP, fn, describe(rec), image=rec["image"],
                    sd_card=dict(rec.get("sd_card", {})), sdhci=dict(rec.get("sdhci", {})),
                    params=params)


def register(folder: Path = DATA) -> int:
    """One scenario per recording; the number registered."""
    recs = recordings(folder)
    for rec in recs:
        add(_scenario(rec))
    return len(recs)


register()
