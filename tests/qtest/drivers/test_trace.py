"""Reading a recording boot's QEMU trace: the kept events, the times, the phase marks."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenarios import drivers_trace as T

ACCESS = ("memory_region_ops_read cpu 0 mr 0x55d0c2a4bef0 addr 0xfebfe024 value 0x1ff0000 "
          "size 4 name 'sdhci'")


def test_an_access_of_the_controller_with_the_log_backends_times() -> None:
    assert T.parse_line(ACCESS) == T.TraceAccess("r", 0xFEBFE024, 4, 0x1FF0000, 0)
    # QEMU 7.2's log backend: PID@SEC.USEC: ; later QEMUs: an ISO 8601 UTC time
    old = T.parse_line("4242@1765080053.000123:" + ACCESS)
    new = T.parse_line("2025-12-07T04:00:53.000123Z " + ACCESS)
    assert isinstance(old, T.TraceAccess) and isinstance(new, T.TraceAccess)
    assert old.us == 1765080053_000123
    assert new.us == old.us  # 1765080053 s is 2025-12-07T04:00:53Z
    write = T.parse_line(ACCESS.replace("_read", "_write").replace("0x1ff0000", "0x3"))
    assert write == T.TraceAccess("w", 0xFEBFE024, 4, 3, 0)


def test_other_regions_and_events_are_not_kept() -> None:
    assert T.parse_line(ACCESS.replace("'sdhci'", "'serial'")) is None
    assert T.parse_line("memory_region_ops_read cpu 0 mr 0x1 addr 0x80 value 0x2 size 1 "
                        "name 'ioport80'") is None  # a read of the POST port marks nothing
    assert T.parse_line("sdhci_adma_loop addr=0x121c9000, len=4096, attr=0x21") == \
        T.TraceDescriptor(0x121C9000, 4096, 0x21)
    assert T.parse_line("sdhci_send_command CMD17 ARG[0x00800000]") == T.TraceCommand(17, 0x800000)
    assert T.parse_line("kvm_run_exit cpu_index 0, reason 2") is None


def _mark(v: int) -> str:
    return (f"memory_region_ops_write cpu 0 mr 0x1 addr 0x80 value {v:#x} size 1 "
            "name 'ioport80'")


def test_phases_by_the_marks_the_kernels_io_delay_ignored() -> None:
    lines = [ACCESS, _mark(1), ACCESS, _mark(0), ACCESS, _mark(2), ACCESS, _mark(255), ACCESS]
    ph = T.phases(T.parse(lines), ["probe", "read"])
    assert [len(ph["probe"]), len(ph["read"])] == [2, 1]  # before 1 and after 255: dropped


def test_bad_marks_and_no_marks_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(T.TraceError, match="phase mark 7 outside 1..2"):
        T.phases(T.parse([_mark(7)]), ["a", "b"])
    with pytest.raises(T.TraceError, match="no phase mark"):
        T.phases(T.parse([ACCESS]), ["a"])
    with pytest.raises(T.TraceError, match="cannot read the trace"):
        T.read_trace(tmp_path / "missing.log", ["a"])


def test_a_mark_word_split_into_bytes_is_one_mark() -> None:
    """Exynos 4210's chip ID block takes bytes only (hw/arm/exynos4210.c): busybox
    ``devmem 0x10000000 32 3`` shows as four byte writes, the number in the first."""
    lines = [f"memory_region_ops_write cpu 0 mr 0x1 addr {0x10000000 + i:#x} value "
             f"{3 if i == 0 else 0:#x} size 1 name 'exynos4210.chipid'" for i in range(4)]
    assert list(T.parse(lines, mark_at=0x10000000)) == [T.Mark(3)]
