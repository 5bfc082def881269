"""Small statistics for benchmark samples."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    def fmt(self, unit: str = "", digits: int = 0) -> str:
        spread = (self.high - self.low) / self.median * 50 if self.median else 0.0
        return f"{self.median:,.{digits}f}{unit} ±{spread:.0f}%"


def summarize(samples: list[float]) -> Summary:
    return Summary(statistics.median(samples), min(samples), max(samples), len(samples))
