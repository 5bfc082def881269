"""What makes two findings the same: a short, stable signature.

* a divergence: the check's own signature (the same findings as check and
  review): what differed (for a register read the registers and decoded
  fields, ``diverge:result:PRNSTS.DATINHIBIT``; for guest memory the kind
  of zone of the first differing byte; for the interrupt line the two event
  sequences), then the SD command in progress and the card state;
* a crash: QEMU's assertion line with numbers masked, else the signal;
* a hang: the register last written before QEMU stopped answering;
* a harness or model exception: its type and innermost harness frame;
* a spec deviation (``--strict``): its key.

Addresses, values and step numbers stay out, so one bug reached by many
inputs has one signature.
"""

from __future__ import annotations

import hashlib
import re

from harness.check.lockstep import Divergence
from harness.check.scoreboard import mask_numbers, what_differs
from harness.fuzz.run import CRASH, DIVERGE, ERROR, HANG, FuzzOutcome
from harness.hwdefs import sdhci

_MMIO_WRITE = re.compile(r"^write([bwlq]) (0x[0-9a-f]+) ")


def _divergence(d: Divergence) -> str:
    """The check's signature of the divergence (:mod:`harness.check.scoreboard`):
    what differed, the command in progress, the card state."""
    return f"diverge:{d.signature or what_differs(d)}"


def _last_register_write(trace: list[str]) -> str:
    for line in reversed(trace):
        m = _MMIO_WRITE.match(line)
        if m:
            reg = sdhci.register_at(int(m.group(2), 16) & 0xFF)
            return reg.name if reg else "unassigned"
    return "none"


def signature(out: FuzzOutcome) -> str:
    """The signature of ``out`` ("" when it is no finding)."""
    if out.status == DIVERGE:
        if out.divergence is None:
            return "diverge:model-predicts-crash"
        return _divergence(out.divergence)
    if out.status == CRASH:
        return f"crash:{mask_numbers(out.crash_site)}"
    if out.status == HANG:
        return f"hang:after-write-{_last_register_write(out.trace)}"
    if out.status == ERROR:
        return f"error:{out.error_site}"
    if out.spec:
        return f"spec:{'+'.join(out.spec)}"
    return ""


def slug(sig: str) -> str:
    """A file-name-safe short name for ``sig``: readable prefix and a hash."""
    h = hashlib.blake2b(sig.encode(), digest_size=4).hexdigest()
    text = re.sub(r"[^A-Za-z0-9]+", "-", sig).strip("-")[:48]
    return f"{text}-{h}"
