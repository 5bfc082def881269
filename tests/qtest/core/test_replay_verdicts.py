"""How a replay names what QEMU did, told apart on stand-ins for QEMU
(small programs speaking ``-qtest stdio``): refused its command line,
crashed (signal, assertion) at a line, hung, a sanitizer report (QEMU
stopped, or went on as with ``halt_on_error=0``), or clean; and the pipe
channel's lack of a line limit."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.replay import engine as replay

_ASAN = """\
==42==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6190 at pc 0x55 bp 0x7f sp 0x7f
WRITE of size 4 at 0x619000001e80 thread T0
    #0 0x55d1c0a3 in sdhci_write_dataport ../hw/sd/sdhci.c:479:35
    #1 0x55d1c0b4 in sdhci_write ../hw/sd/sdhci.c:1148:13
    #2 0x55d1c0c5 in memory_region_write_accessor ../system/memory.c:497:5
SUMMARY: AddressSanitizer: heap-buffer-overflow ../hw/sd/sdhci.c:479:35 in sdhci_write_dataport
"""


def _fake(tmp_path: Path, body: str) -> list[str]:
    """A stand-in QEMU: ``body`` runs once per qtest line read (``line``,
    ``n`` the count so far, ``ok()`` answers)."""
    script = tmp_path / "fake-qemu.py"
    script.write_text(textwrap.dedent("""\
        import os, signal, sys, time
        def ok(text="OK"):
            sys.stdout.write(text + "\\n"); sys.stdout.flush()
        BEFORE
        n = 0
        for line in sys.stdin:
            n += 1
        BODY
        """).replace("BEFORE", "").replace(
            "BODY", textwrap.indent(textwrap.dedent(body), "    ")))
    return [sys.executable, str(script)]


def _run(argv: list[str], lines: int = 3, timeout: float = 5.0) -> replay.ReplayResult:
    trace = ["readw 0xe00000fe"] * lines
    return replay.replay_qemu(Path(argv[0]), trace, replay.DEFAULT_MACHINE, argv=argv,
                              timeout=timeout)


def test_exit_before_the_first_answer_is_a_refusal(tmp_path: Path) -> None:
    script = tmp_path / "refuse.py"
    script.write_text("import sys\nsys.stderr.write('qemu-system-x86_64: -drive if=sd,"
                      "index=0: machine type does not support if=sd,bus=0,unit=0\\n')\n"
                      "sys.exit(1)\n")
    res = _run([sys.executable, str(script)])
    assert res.verdict == replay.REFUSED and not res.crashed and not res.finding
    assert res.summary() == ("refused: machine type does not support if=sd,bus=0,unit=0 "
                             "(QEMU names -drive if=sd,index=0)")


def test_a_refusal_says_qemus_error_line_not_its_trace_output(tmp_path: Path) -> None:
    """With ``-trace`` (log backend) QEMU prints trace lines before its error,
    and qtest's log and a warning may be there too: the refusal is the error
    line, and the argument it names."""
    stderr = ("sdhci_capareg async interrupt: 0\nsdhci_capareg ADMA2: 1\n"
              "[I 1609122395.789698] OPENED\n"
              "qemu-system-x86_64: -drive if=sd,id=d: warning: bogus if=sd is deprecated\n"
              "qemu-system-x86_64: -device sd-card,drive=d: Drive 'd' is already in use by "
              "another device\n1234@1609.1:sd_reset\n")
    script = tmp_path / "refuse.py"
    script.write_text(f"import sys\nsys.stderr.write({stderr!r})\nsys.exit(1)\n")
    res = _run([sys.executable, str(script)])
    assert res.verdict == replay.REFUSED
    assert res.refusal == ("Drive 'd' is already in use by another device "
                           "(QEMU names -device sd-card,drive=d)")
    r = replay.refusal("qemu-system-x86_64: unsupported machine type: \"pc-q35-5.0\"\n"
                       "Use -machine help to list supported machines\n")
    assert r == replay.Refusal('unsupported machine type: "pc-q35-5.0" (Use -machine help '
                               "to list supported machines)")
    assert replay.refusal("sdhci_capareg ADMA2: 1\n") is None


def test_a_signal_after_the_trace_started_is_a_crash_at_its_line(tmp_path: Path) -> None:
    argv = _fake(tmp_path, """\
        if n == 2:
            sys.stderr.write("qemu: ../hw/sd/sd.c:1234: sd_foo: Assertion `x' failed.\\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGABRT)
        ok()
        """)
    res = _run(argv)
    assert res.verdict == replay.CRASHED and res.crashed and res.answered == 1
    assert res.signal == 6
    assert "at trace line 2 of 3" in res.summary() and "Assertion" in res.summary()


def test_a_non_zero_exit_mid_trace_is_a_crash_not_a_refusal(tmp_path: Path) -> None:
    argv = _fake(tmp_path, """\
        if n == 3:
            sys.exit(1)
        ok()
        """)
    res = _run(argv)
    assert res.verdict == replay.CRASHED and res.answered == 2
    assert "exit status 1" in res.summary()


def test_no_answer_in_time_is_a_hang(tmp_path: Path) -> None:
    argv = _fake(tmp_path, """\
        if n == 2:
            time.sleep(60)
        ok()
        """)
    res = _run(argv, timeout=0.5)
    assert res.verdict == replay.HUNG and res.finding and not res.crashed
    assert "no answer within 0.5 s at trace line 2 of 3" in res.summary()


@pytest.mark.parametrize("halts", [True, False])
def test_a_sanitizer_report_is_a_finding_whether_qemu_stops_or_not(
        tmp_path: Path, halts: bool) -> None:
    argv = _fake(tmp_path, f"""\
        if n == 2:
            sys.stderr.write({_ASAN!r}); sys.stderr.flush()
            if {halts}:
                sys.exit(1)
        ok()
        """)
    res = _run(argv)
    assert res.verdict == replay.SANITIZER and res.crashed
    assert res.reports[0].signature == "asan:heap-buffer-overflow:sdhci_write_dataport"
    s = res.summary()
    assert s.startswith("AddressSanitizer: heap-buffer-overflow, WRITE of size 4 in "
                        "sdhci_write_dataport (sdhci.c:479) < sdhci_write (sdhci.c:1148)")
    if halts:
        assert res.answered == 1 and "at trace line 2 of 3" in s
    else:
        assert res.answered == 3 and "halt_on_error=0" in s


def test_served_to_the_end_then_stopped_by_us_is_clean(tmp_path: Path) -> None:
    argv = _fake(tmp_path, "ok()\n")  # then waits on stdin: EOF ends it
    res = _run(argv)
    assert res.verdict == replay.CLEAN and res.answered == 3


def test_long_lines_cross_the_channel_whole(tmp_path: Path) -> None:
    """An 11 KiB command reaches QEMU whole and its answer comes back whole
    (a pty's canonical mode cuts lines at 4095 bytes)."""
    argv = _fake(tmp_path, """\
        ok("OK " + str(len(line.rstrip("\\n"))) + " " + "x" * 20000)
        """)
    long_line = "b64write 0x100000 0x2c00 " + "A" * 15020
    res = replay.replay_qemu(Path(argv[0]), [long_line], replay.DEFAULT_MACHINE, argv=argv)
    assert res.verdict == replay.CLEAN
    words = res.answers[0][1].split()
    assert int(words[1]) == len(long_line) and len(words[2]) == 20000
