"""The scenario library: importing it registers every scenario.

One module per concern; each scenario drives a Target (usually through the
host driver) and lets the lockstep target compare model and QEMU.  The
registry (:mod:`harness.scenarios.registry`) is what the modules use; this
package is what the check layer uses: :func:`all_scenarios`, :func:`select`.
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.scenarios import (  # noqa: F401  (registers on import)
    boundaries,
    commands,
    compat,
    data,
    drivers,
    emmc,
    emmc_rpmb,
    erase,
    explore,
    images,
    interrupts,
    migration,
    misc,
    mmc_test,
    mmci,
    omap,
    registers,
    restart,
    sdhost,
    sizes,
    spi,
    spi_sifive,
    sunxi,
    vendor_registers,
)
from harness.scenarios.registry import REGISTRY as REGISTRY
from harness.scenarios.registry import Context as Context
from harness.scenarios.registry import Miss as Miss
from harness.scenarios.registry import Requirement as Requirement
from harness.scenarios.registry import Scenario as Scenario
from harness.scenarios.registry import has_property as has_property
from harness.scenarios.registry import scenario as scenario


def all_scenarios() -> dict[str, Scenario]:
    """Every registered scenario (importing this package registered them)."""
    return REGISTRY


def select(groups: list[str] | None = None, names: list[str] | None = None) -> Iterator[Scenario]:
    scs = all_scenarios()
    unknown = [n for n in names or [] if n not in scs]
    if unknown:
        raise KeyError(f"unknown scenario(s): {', '.join(unknown)}")
    known_groups = {s.group for s in scs.values()}
    bad = [g for g in groups or [] if g not in known_groups]
    if bad:
        known = ", ".join(sorted(known_groups))
        raise KeyError(f"unknown group(s): {', '.join(bad)} (known: {known})")
    for s in scs.values():
        if names and s.name not in names:
            continue
        if groups and s.group not in groups:
            continue
        yield s
