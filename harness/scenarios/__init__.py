"""The scenario library: importing it registers every scenario.

One module per concern; each scenario drives a Target (usually through the
host driver) and lets the lockstep target compare model and QEMU.
"""

from harness.scenarios import (  # noqa: F401
    commands,
    compat,
    data,
    erase,
    images,
    interrupts,
    misc,
    mmc_test,
    registers,
    sizes,
)
