"""What the driver reports: requests, observations and the errors it raises.

The driver is not a checker.  Each result holds what the driver saw (status
registers, responses, interrupt line, data); callers compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from harness.driver.adma import AdmaOptions
from harness.errors import SdqtestError
from harness.hwdefs import sdhci as H
from harness.hwdefs.sd import Resp

#: CMDREG encoding of each response type (SD Host Controller 2.2.6, table
#: "Relation between parameters and the name of response type"):
#: (Response Type Select, CRC check, index check).
RESPONSE_ENCODING: dict[Resp, tuple[int, bool, bool]] = {
    Resp.NONE: (H.RSP_NONE, False, False),
    Resp.R1: (H.RSP_48, True, True),
    Resp.R1B: (H.RSP_48_BUSY, True, True),
    Resp.R2: (H.RSP_136, True, False),
    Resp.R3: (H.RSP_48, False, False),
    Resp.R6: (H.RSP_48, True, True),
    Resp.R7: (H.RSP_48, True, True),
}


class Mode(Enum):
    """How the data phase moves bytes (SD Host Controller 3.7.2)."""

    PIO = "pio"
    SDMA = "sdma"
    ADMA2 = "adma2"


@dataclass
class Transfer:
    """The data phase of a command.

    ``data`` is what to write (``block_size * block_count`` bytes) or None
    for a read.  ``buffer`` is the guest address for DMA (the driver's data
    area when None).  ``multi`` defaults to ``block_count > 1``.  ``auto_cmd``
    selects Auto CMD12 or Auto CMD23 (TRNMOD 2.2.5); ``auto_cmd23_arg`` goes
    to Argument 2 (the SDMA System Address register, 2.2.1).
    ``sdma_boundary`` is the SDMA buffer boundary in bytes.  ``pio_access``
    is the Buffer Data Port access size (1, 2 or 4); with ``pio_full_tail``
    the last access of a block is full width even past the block's end.
    """

    read: bool
    block_size: int = 512
    block_count: int = 1
    mode: Mode = Mode.PIO
    data: bytes | None = None
    buffer: int | None = None
    multi: bool | None = None
    block_count_enable: bool = True
    auto_cmd: int = 0  #: 0 none, 12 Auto CMD12, 23 Auto CMD23
    auto_cmd23_arg: int | None = None
    sdma_boundary: int = 512 * 1024
    adma: AdmaOptions = field(default_factory=AdmaOptions)
    pio_access: int = 4
    pio_full_tail: bool = False

    @property
    def length(self) -> int:
        return self.block_size * self.block_count

    @property
    def is_multi(self) -> bool:
        return self.block_count > 1 if self.multi is None else self.multi


@dataclass
class Observation:
    """One status the driver waited for: ``stage``, the 32-bit NORINTSTS |
    ERRINTSTS << 16 value that ended the wait, the IRQ line then, and whether
    the wait ended because the condition held (``ok``) or it ran out."""

    stage: str
    status: int
    irq: bool
    ok: bool

    @property
    def norintsts(self) -> int:
        return self.status & 0xFFFF

    @property
    def errintsts(self) -> int:
        return self.status >> 16


@dataclass
class CommandResult:
    """Everything observed while sending one command and moving its data."""

    cmd: int
    arg: int
    resp_type: Resp
    cmdreg: int
    trnmod: int | None
    response: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: OR of every NORINTSTS / ERRINTSTS value seen during the command.
    norintsts: int = 0
    errintsts: int = 0
    #: The IRQ line when command complete (or the error) was seen.
    irq: bool = False
    observations: list[Observation] = field(default_factory=list)
    #: Name of the stage whose wait ran out, or None.
    timeout: str | None = None
    data: bytes | None = None
    #: RSPREG3 after the transfer when Auto CMD12 was used (2.2.7).
    auto_cmd12_response: int | None = None
    acmd12errsts: int = 0
    admaerr: int | None = None
    dma_interrupts: int = 0
    #: Register snapshot taken on error or timeout (name -> value).
    snapshot: dict[str, int] | None = None
    #: Resets the driver did to recover ("cmd", "dat").
    recovered: list[str] = field(default_factory=list)
    #: Commands sent for this one: CMD55 before an ACMD, CMD23 before or
    #: CMD12 after a multi-block transfer, CMD16 around a lock command.
    related: list[CommandResult] = field(default_factory=list)
    #: Sent as an application command (after CMD55).
    app: bool = False

    @property
    def error(self) -> bool:
        """The controller flagged an error or a wait ran out."""
        return bool(self.errintsts) or self.timeout is not None

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def r1(self) -> int:
        """Bits [39:8] of a 48-bit response: card status, OCR, RCA|status or
        R7 echo (RSPREG0, 2.2.7)."""
        return self.response[0]

    @property
    def r2(self) -> int:
        """A 136-bit response as the 128-bit register it carries (CID or
        CSD) with bits [7:0] (CRC7 and end bit) zero: RSPREG holds R[127:8]."""
        r0, r1, r2, r3 = self.response
        v = (r3 << 96) | (r2 << 64) | (r1 << 32) | r0
        return (v << 8) & ((1 << 128) - 1)

    def describe(self) -> str:
        nor = H.NORINTSTS.describe(self.norintsts)
        err = H.ERRINTSTS.describe(self.errintsts)
        t = f" timeout@{self.timeout}" if self.timeout else ""
        name = f"{'ACMD' if self.app else 'CMD'}{self.cmd}"
        return f"{name}({self.arg:#010x}) rsp={self.r1:#010x} {nor} {err}{t}"


class DriverError(SdqtestError):
    """A step failed; ``result`` (when there is one) holds what was seen."""

    def __init__(self, message: str, result: CommandResult | None = None,
                 snapshot: dict[str, int] | None = None) -> None:
        detail = f": {result.describe()}" if result is not None else ""
        super().__init__(message + detail)
        self.result = result
        self.snapshot = snapshot if snapshot is not None else (
            result.snapshot if result is not None else None)


class DriverTimeout(DriverError):
    """A bounded wait ran out."""
