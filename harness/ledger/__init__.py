"""The ledger: every known difference between the model's reference and QEMU.

One registry, one type (:class:`KnownDifference`) with a *scope*: a spec
deviation QEMU chose, behaviour that changed between releases, a QEMU bug,
or a value QEMU draws at random.  The model's strict-mode switches
(``toggle``), the check's quirk matching (``explains``), the adoptions
(``adopts``), the version differences and the machine compat properties
(``compat``) are all read from here; nothing else lists them.

``Versions.confirmed`` of a switch lists the Debian builds on which
``check --strict`` credited it or the default check met it as an explained
expectation (2026-12-02: 7.2.22, 10.0.13, 11.1.3); an entry without any is
stated from QEMU's documented behaviour and source, not yet seen on a build.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.ledger.allwinner import ALLWINNER
from harness.ledger.boards import BOARDS
from harness.ledger.emmc import EMMC
from harness.ledger.entry import (
    EVERY_VERSION,
    Compat,
    KnownDifference,
    ReadMatch,
    Scope,
    Versions,
    parse_version,
)
from harness.ledger.observed import OBSERVED
from harness.ledger.omap import OMAP
from harness.ledger.pl181 import PL181
from harness.ledger.sd import SD
from harness.ledger.sdhci import SDHCI
from harness.ledger.sdhost import SDHOST
from harness.ledger.spi import SPI
from harness.ledger.versions import VERSION

__all__ = [
    "EVERY_VERSION", "LEDGER", "Compat", "KnownDifference", "ReadMatch", "Scope", "Versions",
    "adopting", "by_device", "entry", "of_scope", "parse_version", "toggles",
]


def _build(*tables: tuple[KnownDifference, ...]) -> Mapping[str, KnownDifference]:
    out: dict[str, KnownDifference] = {}
    for table in tables:
        for d in table:
            if d.key in out:
                raise ValueError(f"known difference {d.key!r} listed twice")
            out[d.key] = d
    return MappingProxyType(out)


#: Key -> entry, in a stable order: SD card, controller, eMMC, the
#: observed ones, the version entries, the board controllers, SPI mode, the PL181,
#: Allwinner, the BCM2835 SDHOST, the OMAP MMC.
LEDGER: Mapping[str, KnownDifference] = _build(SD, SDHCI, EMMC, OBSERVED, VERSION, BOARDS, SPI,
                                               PL181, ALLWINNER, SDHOST, OMAP)


def entry(key: str) -> KnownDifference:
    """The entry ``key``; a KeyError naming it when there is none."""
    try:
        return LEDGER[key]
    except KeyError:
        raise KeyError(f"no known difference {key!r} in the ledger") from None


def of_scope(scope: Scope) -> tuple[KnownDifference, ...]:
    """Every entry of ``scope``, in ledger order."""
    return tuple(d for d in LEDGER.values() if d.scope is scope)


def by_device(*devices: str) -> tuple[KnownDifference, ...]:
    """Every entry of the given devices, in ledger order."""
    return tuple(d for d in LEDGER.values() if d.device in devices)


def toggles(*devices: str) -> tuple[KnownDifference, ...]:
    """The entries the model of ``devices`` switches between QEMU and the rule."""
    return tuple(d for d in by_device(*devices) if d.toggle)


def adopting(what: str) -> KnownDifference:
    """The entry whose value the model adopts under the name ``what`` (``"RCA"``)."""
    for d in LEDGER.values():
        if d.adopts == what:
            return d
    raise KeyError(f"no known difference adopts {what!r}")
