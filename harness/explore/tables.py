"""Inputs generated from the specification's tables (issue #19 item 6).

Not the model's branches but the tables of ``harness/hwdefs/``: every SD
command (and application command) of the command table in each card state
a short prefix reaches (idle, transfer, stand-by, sending-data,
receiving-data, inactive); every addressed data or protection command at
the last address in range and the first out of range of the search's
card; every writable field of every controller register written with each
value class (zero, one, all ones, the top value).  They open the search
(:func:`harness.explore.search.search` runs them first), so they are kept
only where they reach something new, as any input.
"""

from __future__ import annotations

from harness.driver.ops import CARD_BLOCKS, Op
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.fields import Access

_SETUP: Op = {"op": "setup", "freq": 400_000}
_INIT: Op = {"op": "init", "bus_width": 4, "hcs": True, "block_len": 512}

#: Card states reached by a prefix of operations (PLS 4.2, 4.3, Figure 4-13).
STATE_PREFIXES: dict[str, list[Op]] = {
    "idle": [_SETUP],
    "tran": [_SETUP, _INIT],
    "stby": [_SETUP, _INIT, {"op": "cmd", "index": 7, "arg": 0, "app": False}],
    "data": [_SETUP, _INIT, {"op": "cmd", "index": 17, "arg": 0, "app": False}],
    "rcv": [_SETUP, _INIT, {"op": "cmd", "index": 24, "arg": 0, "app": False}],
    "inactive": [_SETUP, _INIT, {"op": "cmd", "index": 15, "arg": 0, "app": False,
                                 "rca": True}],
}
#: Commands whose argument is the card's RCA (PLS 4.7.4, Table 4-21ff: "[31:16] RCA").
_RCA_ARG = frozenset({7, 9, 10, 13, 15, 55})
#: Commands whose argument is a data address (PLS 4.7.4; SDSC: a byte address).
ADDRESSED = (17, 18, 24, 25, 28, 29, 30, 32, 33)
_READS = frozenset({6, 17, 18, 19, 30, 46, 48, 56, 58})


def _command(spec: S.SpecCommand) -> Op:
    op: Op = {"op": "cmd", "index": spec.index, "arg": 0, "app": spec.app}
    if spec.index in _RCA_ARG and not spec.app:
        op["rca"] = True
    if spec.kind is S.CmdType.ADTC:
        op["data"] = {"read": spec.index in _READS or spec.app, "bs": 512 if not spec.app
                      else 64, "count": 1, "mode": "pio"}
    return op


def command_states() -> list[list[Op]]:
    """Every command of the table in every state of :data:`STATE_PREFIXES`."""
    out = []
    specs = [c for t in (S.SD_COMMANDS, S.SD_APP_COMMANDS) for c in t.values()
             if not c.reserved]
    for prefix in STATE_PREFIXES.values():
        for spec in specs:
            out.append([*prefix, _command(spec)])
    return out


def address_bounds() -> list[list[Op]]:
    """Each addressed command at the last block in range and the first out."""
    out = []
    for index in ADDRESSED:
        for block in (CARD_BLOCKS - 1, CARD_BLOCKS):
            op: Op = {"op": "cmd", "index": index, "arg": block * 512, "app": False}
            if index in (17, 18, 24, 25, 30):
                op["data"] = {"read": index in _READS, "bs": 4 if index == 30 else 512,
                              "count": 2 if index in (18, 25) else 1, "mode": "pio"}
            out.append([_SETUP, _INIT, op])
    return out


def register_fields() -> list[list[Op]]:
    """Every writable field of every register, each value class, after set-up."""
    out = []
    for reg in H.REGISTERS:
        if reg.offset >= H.REGISTER_WINDOW or reg.name == "BDATA":
            continue
        size = min(reg.width, 4)
        for f in reg.fields:
            if f.access is Access.RSVD or f.lsb >= 8 * size:
                continue
            top = (1 << f.width) - 1
            for v in dict.fromkeys((0, 1, top, top >> 1)):
                out.append([_SETUP, _INIT, {"op": "write", "off": reg.offset, "size": size,
                                            "value": (v << f.lsb) & ((1 << 8 * size) - 1)}])
    return out


def table_inputs() -> list[list[Op]]:
    """All of them, in a fixed order."""
    return command_states() + address_bounds() + register_fields()
