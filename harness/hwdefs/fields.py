"""Registers and bit fields as data, and their decoding for reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Access(Enum):
    """How software sees a field (SD Host Controller Spec 1.2, "Register types")."""

    RO = "RO"      #: read only
    RW = "RW"      #: read/write
    RW1C = "RW1C"  #: read, write 1 to clear
    WO = "WO"      #: write only (reads 0)
    RSVD = "RSVD"  #: reserved, reads 0
    ROC = "ROC"    #: read only, cleared on read (SD card status)


@dataclass(frozen=True)
class Field:
    """A bit field ``[lsb, lsb+width)`` of a register."""

    name: str
    lsb: int
    width: int = 1
    access: Access = Access.RW
    doc: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, value: int) -> int:
        return (value >> self.lsb) & ((1 << self.width) - 1)

    def put(self, value: int, field_value: int) -> int:
        return (value & ~self.mask) | ((field_value << self.lsb) & self.mask)


@dataclass(frozen=True)
class Register:
    """A register at ``offset``, ``width`` bytes wide, with named fields."""

    name: str
    offset: int
    width: int
    fields: tuple[Field, ...] = field(default_factory=tuple)
    doc: str = ""

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name}")

    def mask(self, *names: str) -> int:
        """OR of the masks of the named fields."""
        m = 0
        for n in names:
            m |= self.field(n).mask
        return m

    def decode(self, value: int) -> dict[str, int]:
        """Field name -> field value, for every named field."""
        return {f.name: f.get(value) for f in self.fields}

    def describe(self, value: int) -> str:
        """``NORINTSTS=0x0003 [CMDCMPL TRNSCMPL]`` style rendering."""
        parts = []
        for f in self.fields:
            v = f.get(value)
            if not v:
                continue
            parts.append(f.name if f.width == 1 else f"{f.name}={v:#x}")
        digits = self.width * 2
        return f"{self.name}=0x{value:0{digits}x} [{' '.join(parts)}]"

    def diff(self, a: int, b: int) -> list[tuple[str, int, int]]:
        """Fields whose values differ between ``a`` and ``b``; bits outside
        any named field are reported as ``(unnamed)``."""
        out = [(f.name, f.get(a), f.get(b)) for f in self.fields if f.get(a) != f.get(b)]
        named = 0
        for f in self.fields:
            named |= f.mask
        rest_a, rest_b = a & ~named, b & ~named
        if rest_a != rest_b:
            out.append(("(unnamed)", rest_a, rest_b))
        return out
