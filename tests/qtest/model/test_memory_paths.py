"""The model's guest memory: the one-page and outside-RAM shortcuts of
``read``/``write`` answer as the span-by-span path does, on every layout."""

from __future__ import annotations

import random

import pytest

from harness.model.memory import PAGE_SIZE, GuestMemory


def _addresses(mem: GuestMemory, rng: random.Random) -> int:
    """An address near a page edge, a RAM range's ends, or anywhere."""
    edges = [x for s, e in mem.ranges for x in (s, e)] + [0, 1 << 32, (1 << 64) - 1]
    pick = rng.random()
    if pick < 0.4:
        return max(rng.choice(edges) + rng.randrange(-600, 600), 0)
    if pick < 0.7:
        return rng.randrange(0, 64) * PAGE_SIZE + rng.randrange(-40, 40) % PAGE_SIZE
    return rng.randrange(0, 1 << 64)


@pytest.mark.parametrize("ram, layout", [(128 << 20, "q35"), (3 << 30, "q35"),
                                          (4 << 30, "pc")])
def test_shortcuts_answer_as_the_span_path(ram: int, layout: str) -> None:
    rng = random.Random(f"{ram}:{layout}")
    fast, slow = GuestMemory(ram, layout), GuestMemory(ram, layout)
    for _ in range(4000):
        addr = _addresses(fast, rng) & ((1 << 64) - 1)
        n = rng.choice([0, 1, 2, 4, 8, 12, 512, PAGE_SIZE, PAGE_SIZE + 3, 3 * PAGE_SIZE])
        if rng.random() < 0.5:
            data = bytes(rng.choice([0, rng.randrange(256)]) for _ in range(n))
            view = memoryview(bytearray(data))  # what ADMA hands over
            assert fast.write(addr, view) == slow.write_spans(addr, data)
        else:
            assert fast.read(addr, n) == slow.read_spans(addr, n)
    assert fast._pages == slow._pages
