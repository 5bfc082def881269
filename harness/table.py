"""Plain-text tables for reports: left-aligned columns, two spaces apart."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO


def print_table(
    head: Sequence[str], rows: Sequence[Sequence[str]], file: TextIO | None = None
) -> None:
    """``head``, a rule, then ``rows``; each column as wide as its widest cell."""
    out = file or sys.stdout
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(),
              file=out)
