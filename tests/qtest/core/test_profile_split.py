"""``bench check --profile``: a profile's own time split by concern.

A function of the harness is charged to the concern of its file; a builtin
or standard library function to its callers' concerns, in proportion to
the time it spent under each (``socket.recv`` under the qtest client is
wire time; ``min`` under both the model and the driver is split).
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.bench import profile_split

MODEL = ("/w/harness/model/sdhci.py", 10, "read")
DRIVER = ("/w/harness/driver/controller.py", 20, "rd")
QTEST = ("/w/harness/qemu/qtest.py", 30, "read_answers")
RESET = ("/w/harness/qemu/target.py", 40, "reuse")
WIRE_TARGET = ("/w/harness/qemu/target.py", 50, "op_lines")
RECV = ("~", 0, "<method 'recv' of '_socket.socket' objects>")
MIN = ("~", 0, "<built-in method builtins.min>")
HELPER = ("/usr/lib/python3.11/base64.py", 60, "b64decode")


class FakeStats:
    """What :func:`profile_split.split` reads of ``pstats.Stats``."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = stats


def test_builtins_and_stdlib_go_to_their_callers() -> None:
    stats = FakeStats({
        MODEL: (1, 1, 1.0, 2.0, {DRIVER: (1, 1, 1.0, 2.0)}),
        DRIVER: (1, 1, 0.5, 3.0, {}),
        QTEST: (1, 1, 0.25, 4.0, {}),
        RESET: (1, 1, 2.0, 2.0, {}),
        WIRE_TARGET: (1, 1, 0.125, 0.125, {}),
        RECV: (1, 1, 3.0, 3.0, {QTEST: (1, 1, 3.0, 3.0)}),
        MIN: (2, 2, 0.4, 0.4, {MODEL: (1, 1, 0.3, 0.3), DRIVER: (1, 1, 0.1, 0.1)}),
        # a stdlib function called from the wire, itself calling a builtin
        HELPER: (1, 1, 0.5, 0.5, {QTEST: (1, 1, 0.5, 0.5)}),
    })
    got = profile_split.split(stats)  # type: ignore[arg-type]
    assert got["model"] == pytest.approx(1.0 + 0.3)
    assert got["driver"] == pytest.approx(0.5 + 0.1)
    assert got["qtest wire"] == pytest.approx(0.25 + 3.0 + 0.125 + 0.5)
    assert got["launch/reset"] == pytest.approx(2.0)
    assert sum(got.values()) == pytest.approx(sum(v[2] for v in stats.stats.values()))


def test_a_table_names_every_concern() -> None:
    split = dict.fromkeys(profile_split.ORDER, 1.0)
    text = "\n".join(profile_split.lines([("step", 10.0, 5.0, 2.0, split),
                                          ("optimistic", 4.0, 3.0, 1.0, split)]))
    for concern in profile_split.ORDER:
        assert concern in text
    assert "QEMU CPU" in text and "10.00 s" in text and "4.00 s" in text
