"""The fuzzer's operation vocabulary, now :mod:`harness.driver.ops`.

It moved to the driver layer so that the scenario library's explore group
(:mod:`harness.scenarios.explore`) can replay the model-driven search's
inputs inside ``sdqtest check``; this module keeps the fuzzer's imports.
"""

from __future__ import annotations

from harness.driver.ops import (
    CARD_BLOCKS,
    DMA_BASE,
    DMA_SPAN,
    GENERATORS,
    Op,
    _apply,
    apply,
    describe,
    generate,
    mutate,
    normalise,
    random_op,
)

__all__ = ["CARD_BLOCKS", "DMA_BASE", "DMA_SPAN", "GENERATORS", "Op", "_apply", "apply",
           "describe", "generate", "mutate", "normalise", "random_op"]
