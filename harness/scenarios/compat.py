"""Behaviour that depends on machine-compat defaults, on the boundary
machine types: the SCR spec bits and CMD6 availability follow
``spec_version`` (2 for 9.0 and older), erased content follows
``erase-blocks-as-zero`` where the build has it (false for 11.0 and older).
The check runs this group on each boundary machine type the build offers
(``harness.check.plan`` derives them from the model's compat table).
"""

from __future__ import annotations

from harness.scenarios.common import ready
from harness.scenarios.registry import Context, scenario
from harness.target import Target


@scenario("compat-card-behaviour", "compat", needs_clock=True)
def _compat(t: Target, ctx: Context) -> None:
    """SCR, CMD6 mode 0 and an erase, on the machine type under test."""
    d = ready(t)
    d.switch_function(0)
    d.send_status()
    d.write_blocks(60, bytes(512 * 2))
    d.erase(60, 61)
    d.read_blocks(60, 2)
