"""A slot of the Aspeed SD controller: a generic sysbus SDHCI behind
Aspeed's wrapper (``aspeed.sdhci-ast2600``, hw/sd/aspeed_sdhci.c).

The wrapper is a 4 KiB window whose first 0x100 bytes are its own
registers (slot presence, debounce, a copy of each slot's capabilities,
the slots' interrupt status) and whose slot *n* lies at ``0x100 * (n + 1)``;
it ORs the slots' interrupt lines into the SoC's GIC input.  The board
description puts the register window at slot 0, so what the driver and
the model see is the standard SDHCI, realized by the wrapper with
``sd-spec-version`` 2 and the SoC's capabilities (0x0000000701f80080 on
the AST2600 since 10.0, boundary ``aspeed.capareg-per-soc``; 0x01e80080
before, :mod:`harness.hwdefs.aspeed`).  The wrapper's own registers lie outside that window: not
modelled.

The AST2600 EVB wires its SD slots' write-protect signal inverted, and
QEMU says so with the SDHCI property ``wp-inverted`` since 10.0 (boundary
``aspeed.wp-inverted``): an unprotected card then reads as write-protected
in Present State (Write Protect Switch Pin Level 0, SDHC 3.00 2.2.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.hwdefs import aspeed
from harness.ledger import boundaries
from harness.model.sdhci import SDHCI
from harness.profile import NEWEST, BuildProfile

__all__ = ["AspeedSdhci"]


class AspeedSdhci(SDHCI):
    """Slot 0 of an ``aspeed.sdhci-ast2600`` wrapper (ast2600-evb's SD
    controller, fuji-bmc's eMMC controller)."""

    def __init__(self, *args: Any, capareg: int | str | None = None,
                 wp_inverted: bool = False, **kwargs: Any) -> None:
        profile = kwargs.get("profile", NEWEST)
        if capareg is None:
            capareg = self.board_capareg({}, profile)
        # The board asks for it (hw/arm/aspeed.c: the EVBs' SD slots); builds
        # before the property's boundary have no way to.
        wp_inverted = wp_inverted and profile.version >= boundaries.ASPEED_WP_INVERTED.since
        super().__init__(*args, capareg=capareg, wp_inverted=wp_inverted, **kwargs)

    @classmethod
    def board_capareg(cls, props: Mapping[str, object], profile: BuildProfile) -> int:
        """The wrapper's capabilities for its slots on a build of ``profile``."""
        if "capareg" in props:
            return super().board_capareg(props, profile)
        return (aspeed.CAPAREG_AST2600 if profile.version >= boundaries.ASPEED_CAPAREG.since
                else aspeed.CAPAREG_BEFORE_10_0)
