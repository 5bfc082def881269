"""Where QEMU departs from the SD specifications, named once.

The model follows QEMU by default.  In strict mode it follows the
specification instead, so a cross-check in strict mode turns each deviation
that a build still has into a finding.  ``sd_deviations`` and
``sdhci_deviations`` hold the lists; each model consults its own through
:meth:`Deviations.qemu` ("behave as QEMU here?").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    """One departure of QEMU from a specification rule."""

    key: str          #: stable identifier, e.g. ``"sd.cmd6-v1-card"``
    spec: str         #: the document and section, e.g. ``"SD PLS 9.10 4.3.10"``
    rule: str         #: what the specification requires, in our words
    qemu: str         #: what QEMU does instead, in our words


#: ``False``: follow QEMU everywhere; ``True``: the specification
#: everywhere; a set of keys: the specification for those deviations only
#: (keys of the other device's list are ignored), which is how a strict
#: check attributes a divergence to one deviation.
Strictness = bool | frozenset[str]


class Deviations:
    """A set of deviations and the mode that says which side to follow."""

    def __init__(self, items: tuple[Deviation, ...], strict: Strictness = False) -> None:
        self.items = {d.key: d for d in items}
        if len(self.items) != len(items):
            raise ValueError("duplicate deviation key")
        if isinstance(strict, bool):
            self.spec_keys = frozenset(self.items) if strict else frozenset()
        else:
            self.spec_keys = frozenset(k for k in strict if k in self.items)
        self.strict = bool(self.spec_keys)
        #: Every key the model asked about: the deviations a run exercised.
        self.consulted: set[str] = set()

    def qemu(self, key: str) -> bool:
        """True when the model should follow QEMU for deviation ``key``."""
        if key not in self.items:
            raise KeyError(f"unknown deviation {key!r}")
        self.consulted.add(key)
        return key not in self.spec_keys

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items.values())
