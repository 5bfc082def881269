"""A deterministic split of work (scenarios, fuzz seeds) across machines.

``--shard K/N`` keeps the items whose key hashes to shard ``K`` of ``N``
(``K`` counts from 1, as GitLab's ``CI_NODE_INDEX`` does).  The hash is
SHA-256 of the key's UTF-8 bytes, so the split depends on the key alone:
the same on every machine, Python version and QEMU build, and a scenario
keeps its shard when others are added or removed.  Keys for ``check`` are
``"<scenario>@<machine>"``, so a scenario run on several machine types may
spread over shards; the build is not part of the key, so every build of a
run checks the same scenarios on a given shard.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

from harness.errors import UsageError

T = TypeVar("T")


def shard_of(key: str, n: int) -> int:
    """The shard (``0 .. n-1``) that owns ``key`` among ``n`` shards."""
    if n < 1:
        raise ValueError(f"shard count must be at least 1, not {n}")
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``1 <= K <= N``; a :class:`UsageError` otherwise."""
    k_text, sep, n_text = text.partition("/")
    try:
        k, n = int(k_text), int(n_text)
    except ValueError:
        k = n = 0
    if not sep or not 1 <= k <= n:
        raise UsageError(f"--shard wants K/N with 1 <= K <= N, not {text!r}")
    return k, n


def take_shard(items: Iterable[T], key: Callable[[T], str], k: int, n: int) -> list[T]:
    """The items of shard ``k`` (1-based) of ``n``, in their given order."""
    return [it for it in items if shard_of(key(it), n) == k - 1]
