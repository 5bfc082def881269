"""Which side the model follows at each switch of the ledger.

The model follows QEMU by default.  In strict mode it follows the rule
instead, so a cross-check in strict mode turns each known difference that a
build still has into a finding.  The switches are the ledger's entries with
``toggle`` (:mod:`harness.ledger`); each device model consults its own
through :meth:`Deviations.qemu` ("behave as QEMU here?").
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.ledger import KnownDifference, toggles

#: ``False``: follow QEMU everywhere; ``True``: the rule everywhere; a set
#: of keys: the rule for those entries only (keys of another device's
#: switches are ignored), which is how a strict check attributes a
#: divergence to one entry.
Strictness = bool | frozenset[str]


class Deviations:
    """The switches of some devices and the mode that says which side to follow."""

    def __init__(self, devices: tuple[str, ...], strict: Strictness = False) -> None:
        self.items: dict[str, KnownDifference] = {d.key: d for d in toggles(*devices)}
        if isinstance(strict, bool):
            self.spec_keys = frozenset(self.items) if strict else frozenset()
        else:
            self.spec_keys = frozenset(k for k in strict if k in self.items)
        self.strict = bool(self.spec_keys)
        #: Every key the model asked about: the switches a run exercised.
        self.consulted: set[str] = set()

    def qemu(self, key: str) -> bool:
        """True when the model should follow QEMU for switch ``key``."""
        if key not in self.items:
            raise KeyError(f"{key!r} is no switch of the ledger for this device")
        self.consulted.add(key)
        return key not in self.spec_keys

    def __iter__(self) -> Iterator[KnownDifference]:
        return iter(self.items.values())
