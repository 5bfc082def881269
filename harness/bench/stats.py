"""Small statistics for benchmark samples.

A spread needs samples: with fewer than :data:`MIN_SPREAD_SAMPLES` a figure
is printed as its median and its number of samples, never as "±0%"."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: The fewest samples a spread (half the range, in % of the median) is printed from.
MIN_SPREAD_SAMPLES = 3


def samples_text(n: int) -> str:
    return f"{n} sample" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    @property
    def spread(self) -> float | None:
        """Half the range in % of the median; None from too few samples."""
        if self.n < MIN_SPREAD_SAMPLES:
            return None
        return (self.high - self.low) / self.median * 50 if self.median else 0.0

    def fmt(self, unit: str = "", digits: int = 0) -> str:
        spread = self.spread
        tail = f"({samples_text(self.n)})" if spread is None else f"±{spread:.0f}%"
        return f"{self.median:,.{digits}f}{unit} {tail}"


def summarize(samples: list[float]) -> Summary:
    return Summary(statistics.median(samples), min(samples), max(samples), len(samples))
