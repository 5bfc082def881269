"""Image recipes: sizes QEMU accepts, computable content, sparse files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import images


def test_pattern_is_deterministic_and_distinct() -> None:
    a, b = images.pattern_block(0), images.pattern_block(1)
    assert len(a) == images.BLOCK and a == images.pattern_block(0) and a != b
    # word i of block n is (n << 16 | i) * 0x9E3779B97F4A7C15 mod 2**64
    assert int.from_bytes(b[8:16], "little") == ((1 << 16) + 1) * 0x9E3779B97F4A7C15 % 2**64


@pytest.mark.parametrize("name", sorted(images.recipes()))
def test_recipe_sizes_are_ones_qemu_accepts(name: str) -> None:
    """QEMU's sd-card: a power of two up to 2 GiB, a multiple of 512 KiB above
    (an eMMC image: its user area, after the boot and RPMB partitions)."""
    size = images.recipe(name).user_size
    if size <= 2 << 30:
        assert size & (size - 1) == 0
    else:
        assert size % (512 << 10) == 0


def test_generated_image_matches_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDQTEST_CACHE", str(tmp_path))
    r = images.recipe("sdhc-4g")
    p = images.ensure("sdhc-4g")
    assert p.stat().st_size == r.size
    assert p.stat().st_blocks * 512 < 16 << 20  # sparse
    with open(p, "rb") as f:
        f.seek(r.size - 4096)
        assert f.read(4096) == r.expected(r.size - 4096, 4096)
        f.seek(1 << 30)
        assert f.read(512) == bytes(512) == r.expected(1 << 30, 512)
    assert not p.stat().st_mode & 0o222  # read-only: checks never write it
    assert images.ensure("sdhc-4g") == p


def test_unknown_recipe() -> None:
    with pytest.raises(images.ImageError, match="no image recipe"):
        images.recipe("nope")
