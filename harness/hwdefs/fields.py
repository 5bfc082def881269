"""Registers and bit fields as data, and their decoding for reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property


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
    """A bit field ``[lsb, lsb+width)`` of a register.

    ``since`` is the major version of the specification that defined the
    field (SD Host Controller Spec: 1, 2, 3, 4); before it the bits are
    reserved.
    """

    name: str
    lsb: int
    width: int = 1
    access: Access = Access.RW
    doc: str = ""
    since: int = 1

    @cached_property
    def mask(self) -> int:
        """The field's bits in the register (made once: the model asks often)."""
        return ((1 << self.width) - 1) << self.lsb

    def value(self, field_value: int) -> int:
        """``field_value`` placed in this field (the rest of the register 0)."""
        return (field_value << self.lsb) & self.mask

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

    def defined(self, version: int | None = None) -> int:
        """OR of the masks of every field (defined by spec ``version``, when
        given)."""
        m = 0
        for f in self.fields:
            if version is None or f.since <= version:
                m |= f.mask
        return m

    def reserved(self, version: int | None = None) -> int:
        """The register's bits no field covers (in spec ``version``, when
        given): reserved bits, which read 0 by the specification."""
        return ((1 << (self.width * 8)) - 1) & ~self.defined(version)

    def part(self, offset: int, value: int) -> int:
        """This register's bits of ``value``, read by an access at
        ``offset`` (the access may start before or inside the register)."""
        shift = 8 * (self.offset - offset)
        moved = value >> shift if shift >= 0 else value << -shift
        return int(moved & ((1 << (8 * self.width)) - 1))

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
        named = self.defined()
        rest_a, rest_b = a & ~named, b & ~named
        if rest_a != rest_b:
            out.append(("(unnamed)", rest_a, rest_b))
        return out
