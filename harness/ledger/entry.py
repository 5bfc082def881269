"""What one known difference between the model's reference and QEMU holds."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Scope(enum.StrEnum):
    """What kind of difference an entry is."""

    SPEC = "spec"          #: QEMU's documented or deliberate choice against the spec
    VERSION = "version"    #: behaviour that changed between QEMU releases
    QEMU_BUG = "qemu-bug"  #: QEMU is wrong by its own intent, the spec and common sense
    RANDOM = "random"      #: a value QEMU draws (adopted by the model: RCA, ...)


def parse_version(text: str) -> tuple[int, int, int]:
    """``"11.1.3"`` -> ``(11, 1, 3)``; ``"9.1"`` -> ``(9, 1, 0)``.

    A suffix after the numbers (``"10.2.2 src"``) is ignored."""
    head = text.strip().split()[0] if text.strip() else ""
    try:
        parts = [int(p) for p in head.split(".")]
    except ValueError:
        raise ValueError(f"not a QEMU version: {text!r}") from None
    if not parts or len(parts) > 3:
        raise ValueError(f"not a QEMU version: {text!r}")
    parts += [0] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


@dataclass(frozen=True)
class Versions:
    """The QEMU releases an entry concerns."""

    #: First QEMU version with the behaviour; None: as far back as known.
    first: str | None
    #: First version without it; None: still present.
    fixed: str | None
    #: Versions of the builds it was seen on ("7.2.22", "11.1.1").
    confirmed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for v in (self.first, self.fixed, *self.confirmed):
            if v is not None:
                parse_version(v)  # refuse a malformed version at import
        if self.first is not None and self.fixed is not None and \
                parse_version(self.fixed) <= parse_version(self.first):
            raise ValueError(f"fixed {self.fixed} not after first {self.first}")
        for v in self.confirmed:
            if not self.applies(v):
                raise ValueError(f"confirmed on {v}, outside {self.describe()}")

    def applies(self, version: str | tuple[int, ...]) -> bool:
        """Whether QEMU ``version`` has the behaviour."""
        v = parse_version(version) if isinstance(version, str) else tuple(version)
        if self.first is not None and v < parse_version(self.first):
            return False
        return self.fixed is None or v < parse_version(self.fixed)

    def describe(self) -> str:
        """``QEMU >= 9.1``, ``QEMU < 8.0``, ``every version`` ..."""
        if self.first is None and self.fixed is None:
            return "every version"
        if self.first is None:
            return f"QEMU < {self.fixed}"
        if self.fixed is None:
            return f"QEMU >= {self.first}"
        return f"QEMU {self.first} .. < {self.fixed}"


@dataclass(frozen=True)
class ReadMatch:
    """How the check recognises the difference in a lockstep step: a
    register read at ``offset`` (of ``size`` bytes, when given) whose model
    and QEMU values differ only in ``mask``, QEMU answering ``qemu`` when
    given.  Plain data: a ``check -j`` worker receives it as it is."""

    offset: int
    size: int | None = None
    qemu: int | None = None
    mask: int = ~0
    #: Scenarios where it is expected (empty: any).
    scenarios: tuple[str, ...] = ()


@dataclass(frozen=True)
class Compat:
    """A ``hw_compat_X_Y`` global property: machine types up to ``upto``
    get ``prop=value`` on the QEMU device type ``device``, from the entry's
    first version on."""

    device: str
    prop: str
    value: str
    upto: tuple[int, int]
    #: only when the build has the property (an unreleased series)
    needs_property: bool = False
    source: str = ""


@dataclass(frozen=True)
class KnownDifference:
    """One known difference between the model's reference and QEMU."""

    key: str               #: stable, e.g. ``"sd.lock-pwd-len"``
    scope: Scope
    device: str            #: ``sd``, ``sdhci``, ``emmc``, ``sdhci-pci``, ``migration``
    rule: str              #: what the reference requires, in our words
    qemu: str              #: what QEMU does instead, in our words
    versions: Versions
    #: The document and section of ``rule`` (``"PLS 4.3.7"``), or the old
    #: behaviour for a version entry.
    spec: str = ""
    #: The model has a switch for it: by default it follows QEMU, in strict
    #: mode the rule (``harness.model.deviations.Deviations.qemu``).
    toggle: bool = False
    #: The check recognises it in a step instead of modelling it (a quirk).
    explains: ReadMatch | None = None
    #: The name of the value the model adopts from QEMU for it (``"RCA"``).
    adopts: str = ""
    #: A machine compat property it is.
    compat: Compat | None = None
    #: The key of the :mod:`harness.ledger.boundaries` record that dates it.
    boundary: str = ""
    #: The builds it concerns, for people; why it is not modelled; the QEMU
    #: change behind it (a quirk's report line).
    builds: str = ""
    why: str = ""
    change: str = ""
    #: Where a reproducer or the evidence lives.
    evidence: str = ""

    def __post_init__(self) -> None:
        if self.scope is Scope.RANDOM and not self.adopts:
            raise ValueError(f"{self.key}: a random value names what the model adopts")
        if self.compat is not None and self.scope is not Scope.VERSION:
            raise ValueError(f"{self.key}: a compat property is a version entry")


#: As far back as known and still present.
EVERY_VERSION = Versions(None, None)
