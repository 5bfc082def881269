"""``--shard K/N``: a deterministic, stable, complete split of keys."""

from __future__ import annotations

import pytest

from harness.check.shard import parse_shard, shard_of, take_shard
from harness.errors import UsageError


def test_shard_of_is_fixed_by_the_key_alone() -> None:
    """Pinned values: the split must not change across machines or releases."""
    keys = ("pio-read-7@q35", "sdma-write-7@q35", "seed-1")
    assert [shard_of(k, 4) for k in keys] == [0, 2, 0]
    assert [shard_of(k, 3) for k in keys] == [0, 1, 2]
    assert shard_of("pio-read-7@q35", 1) == 0
    assert shard_of("a", 7) == int.from_bytes(
        bytes.fromhex("ca978112ca1bbdca"), "big") % 7  # sha256("a")[:8]


def test_shards_partition_the_items() -> None:
    keys = [f"scenario-{i}@q35" for i in range(200)]
    parts = [take_shard(keys, str, k, 3) for k in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(keys)
    assert all(len(p) > 40 for p in parts)          # roughly even
    assert parts[0] == [k for k in keys if k in parts[0]]  # order kept


@pytest.mark.parametrize("bad", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2"])
def test_parse_shard_refuses(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(bad)


def test_parse_shard() -> None:
    assert parse_shard("2/5") == (2, 5)
    with pytest.raises(ValueError):
        shard_of("x", 0)
