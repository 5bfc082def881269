"""AddressSanitizer and UBSan reports read from QEMU's stderr.  The sample
texts are written here in the sanitizers' documented formats (compiler-rt
``asan_report``/``ubsan_diag`` output), not taken from a run."""

from __future__ import annotations

from harness.qemu import sanitizer

ASAN_READ = """\
qemu-system-x86_64: warning: something unrelated
=================================================================
==77==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x62100001a100 at pc 0x5 bp 0x7
READ of size 1 at 0x62100001a100 thread T0
    #0 0x5601 in sdhci_read_dataport /build/qemu-10.2.2/build/../hw/sd/sdhci.c:442:19
    #1 0x5602 in sdhci_read /build/qemu-10.2.2/build/../hw/sd/sdhci.c:1012:19
    #2 0x5603 in memory_region_read_accessor ../system/memory.c:445:11
    #3 0x5604 in qtest_process_command ../system/qtest.c:520:13

0x62100001a100 is located 0 bytes after 512-byte region [0x62100001a000,0x62100001a200)
allocated by thread T0 here:
    #0 0x7f01 in malloc (/lib/x86_64-linux-gnu/libasan.so.8+0xf0000)
    #1 0x5605 in g_malloc0 ../glib/gmem.c:133
    #2 0x5606 in sdhci_initfn ../hw/sd/sdhci.c:1480:23

SUMMARY: AddressSanitizer: heap-buffer-overflow ../hw/sd/sdhci.c:442:19 in sdhci_read_dataport
==77==ABORTING
"""

UBSAN_RECOVERED = """\
../hw/sd/sd.c:1712:9: runtime error: index 512 out of bounds for type 'uint8_t [512]'
    #0 0x5611 in sd_write_byte ../hw/sd/sd.c:1712:9
    #1 0x5612 in sdbus_write_byte ../hw/sd/core.c:120:9
    #2 0x5613 in sdhci_write_dataport ../hw/sd/sdhci.c:500:13

../hw/sd/sdhci.c:600:30: runtime error: shift exponent 40 is too large for 32-bit type 'int'
"""

LEAK = """\
==78==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x7f01 in malloc (/lib/x86_64-linux-gnu/libasan.so.8+0xf0000)
"""


def test_asan_report_kind_access_and_hw_sd_frames() -> None:
    [r] = sanitizer.parse(ASAN_READ)
    assert (r.tool, r.kind, r.access, r.size) == (
        "AddressSanitizer", "heap-buffer-overflow", "READ", 1)
    # the access stack only: the allocation stack after it is not the access
    assert [f.function for f in r.frames] == [
        "sdhci_read_dataport", "sdhci_read", "memory_region_read_accessor",
        "qtest_process_command"]
    assert [f.line for f in r.sd_frames] == [442, 1012]
    assert r.signature == "asan:heap-buffer-overflow:sdhci_read_dataport"
    assert r.summary() == ("AddressSanitizer: heap-buffer-overflow, READ of size 1 in "
                           "sdhci_read_dataport (sdhci.c:442) < sdhci_read (sdhci.c:1012)")
    assert sanitizer.first(ASAN_READ) is r or sanitizer.first(ASAN_READ) == r


def test_ubsan_reports_pile_up_with_halt_on_error_0() -> None:
    rs = sanitizer.parse(UBSAN_RECOVERED)
    assert [r.kind for r in rs] == ["index out of bounds",
                                    "shift exponent is too large for -bit type"]
    assert rs[0].signature == "ubsan:index-out-of-bounds:sd_write_byte"
    assert [f.function for f in rs[0].sd_frames] == [
        "sd_write_byte", "sdbus_write_byte", "sdhci_write_dataport"]
    # no stack (print_stacktrace=0): the file UBSan names stands in
    assert rs[1].frames == [] and rs[1].where == "../hw/sd/sdhci.c:600"
    assert rs[1].signature.endswith(":sdhci.c")


def test_several_asan_reports_and_leaks_kept_apart() -> None:
    text = ASAN_READ.replace("READ of size 1", "WRITE of size 4") + ASAN_READ + LEAK
    rs = sanitizer.parse(text)
    assert [(r.tool, r.access) for r in rs] == [
        ("AddressSanitizer", "WRITE"), ("AddressSanitizer", "READ"), ("LeakSanitizer", "")]
    first = sanitizer.first(LEAK + ASAN_READ)
    assert first is not None and first.tool == "AddressSanitizer"
    assert sanitizer.first(LEAK) is None and sanitizer.parse("all fine\n") == []


def test_signature_ignores_addresses_and_lines() -> None:
    moved = ASAN_READ.replace("442:19", "450:7").replace("0x62100001a100", "0x6190000")
    assert sanitizer.parse(moved)[0].signature == sanitizer.parse(ASAN_READ)[0].signature


def test_environment_adds_defaults_only_where_unset() -> None:
    env = sanitizer.environment({"ASAN_OPTIONS": "halt_on_error=0"})
    assert env["ASAN_OPTIONS"] == "halt_on_error=0"
    assert env["UBSAN_OPTIONS"] == "print_stacktrace=1"


class _Session:
    def __init__(self) -> None:
        self.text = ""

    def stderr(self) -> str:
        return self.text


class _Target:
    def __init__(self) -> None:
        self.session = _Session()


class _Wrapper:  # a recording around a QEMU target
    def __init__(self, inner: _Target) -> None:
        self.inner = inner


def test_reports_after_the_mark_belong_to_this_run() -> None:
    """A reused QEMU keeps one stderr: a report from an earlier input (before
    the mark) is not this run's; one after it is, also through a wrapper."""
    t = _Target()
    t.session.text = ASAN_READ
    at = sanitizer.mark(t)
    assert sanitizer.since(t, at) is None
    t.session.text += UBSAN_RECOVERED
    r = sanitizer.since(_Wrapper(t), at)
    assert r is not None and r.signature == "ubsan:index-out-of-bounds:sd_write_byte"
    assert sanitizer.mark(object()) == 0 and sanitizer.since(object(), 0) is None


def test_qemu_died_names_the_sanitizer_report() -> None:
    from harness.qemu.session import QemuDied

    e = QemuDied(1, ASAN_READ, ["writel 0xe0000020 0x1"], ["qemu"])
    assert e.sanitizer is not None and e.assertion is None
    assert "AddressSanitizer: heap-buffer-overflow, READ of size 1 in sdhci_read_dataport" \
        in str(e)


ASAN_VIA_MEMCPY = """\
==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6150 at pc 0x56 bp 0x7f sp 0x7f
WRITE of size 786432 at 0x61500001e500 thread T0
    #0 0x5651bce1a93f in __asan_memcpy (/build/qemu-system-i386+0x2d2893f)
    #1 0x5651bf4197ce in flatview_read_continue /build/../exec.c:3246:13
    #2 0x5651bf41bff3 in flatview_read /build/../exec.c:3279:12
    #3 0x5651bd61b052 in sdhci_do_adma /build/../hw/sd/sdhci.c:792:21
    #4 0x5651bd60d3c4 in sdhci_data_transfer /build/../hw/sd/sdhci.c:887:13
    #5 0x5651c0c4d917 in timerlist_run_timers /build/../util/qemu-timer.c:572:9
"""


def test_signature_names_the_top_hw_sd_frame_not_the_copy() -> None:
    """DMA overflows are reported in ``__asan_memcpy``/``flatview_read``:
    the signature and summary name the controller function that did it."""
    [r] = sanitizer.parse(ASAN_VIA_MEMCPY)
    assert r.frames[0].function == "__asan_memcpy" and r.size == 786432
    assert r.signature == "asan:heap-buffer-overflow:sdhci_do_adma"
    assert "in sdhci_do_adma (sdhci.c:792) < sdhci_data_transfer (sdhci.c:887)" in r.summary()
