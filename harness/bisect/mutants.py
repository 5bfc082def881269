"""Proof that the check catches regressions: small deliberate changes to a
QEMU tree's ``hw/sd``, each built and checked (``sdqtest mutants``).

Each :class:`Mutant` names the kind of regression it stands for (a device
default that moves, a DMA engine that writes one byte too many, an
interrupt pulse, a write that lands twice on the card), the one place in
the tree it edits, and the part of the check that should catch it.  An
edit is described by a short *anchor* (a few tokens that must occur exactly
once in the file) and what replaces it: the tree's own text is never kept
here.  A tree where an anchor does not match exactly once reports the
mutant as *not applicable*, never as caught.

The run first builds and checks the unchanged tree (a mutant proves nothing
against a baseline that already fails), then each mutant in turn: edit,
incremental build, ``sdqtest check`` on the mutant's groups, restore.  The
tree is restored after every mutant, on errors and interrupts too, and the
build directory is rebuilt from the unchanged tree at the end.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.errors import SdqtestError
from harness.provision import proc
from harness.provision.build import QemuTreeBuilder, configured_flags


class MutantError(SdqtestError):
    """The tree cannot be used for mutants (not clean, not a QEMU tree)."""


@dataclass(frozen=True)
class Mutant:
    name: str
    #: Which promise of the check it tests (issue #11's items).
    stands_for: str
    path: str                          #: file in the tree
    anchor: str                        #: occurs exactly once in the file
    replacement: str
    #: ``sdqtest check`` arguments that should catch it.
    check_args: tuple[str, ...]
    #: What a catching report is expected to mention (a result kind, a property).
    expect: str


MUTANTS: tuple[Mutant, ...] = (
    Mutant("capareg-default-drops-high-speed",
           "defaults are the model's, not the build's (#11 item 1)",
           "hw/sd/sdhci-internal.h",
           "capareg, SDHC_CAPAB_REG_DEFAULT)",
           "capareg, SDHC_CAPAB_REG_DEFAULT & ~(1ULL << 21))",
           ("--group", "compat,registers"), "capareg"),
    Mutant("sd-spec-version-default-2",
           "defaults are the model's, not the build's (#11 item 1)",
           "hw/sd/sd.c",
           "spec_version, SD_PHY_SPECv3_01_VERS)",
           "spec_version, SD_PHY_SPECv2_00_VERS)",
           ("--group", "compat"), "spec_version"),
    Mutant("sdma-writes-one-byte-more",
           "every byte of the DMA arena is compared (#11 item 2)",
           "hw/sd/sdhci.c",
           "&s->fifo_buffer[begin],\n                             s->data_count - begin,",
           "&s->fifo_buffer[begin],\n                             s->data_count - begin + 1,",
           ("--group", "data"), "memory"),
    Mutant("adma-writes-one-byte-late",
           "every byte of the DMA arena is compared (#11 item 2)",
           "hw/sd/sdhci.c",
           "res = dma_memory_write(s->dma_as, dscr.addr,",
           "res = dma_memory_write(s->dma_as, dscr.addr + 1,",
           ("--group", "data"), "diverge"),
    Mutant("irq-pulse-on-every-update",
           "interrupts are compared as events (#11 item 3)",
           "hw/sd/sdhci.c",
           "    qemu_set_irq(s->irq, pending);\n",
           "    qemu_set_irq(s->irq, !pending);\n    qemu_set_irq(s->irq, pending);\n",
           ("--group", "interrupts"), "irq"),
    Mutant("block-write-lands-twice",
           "the whole card image is compared (#11 item 7)",
           "hw/sd/sd.c",
           "    if (!sd->blk || blk_pwrite(sd->blk, addr, len, sd->data, 0) < 0) {",
           "    if (sd->blk && addr + len + (4 << 20) <= blk_getlength(sd->blk)) {\n"
           "        blk_pwrite(sd->blk, addr + (4 << 20), len, sd->data, 0);\n"
           "    }\n"
           "    if (!sd->blk || blk_pwrite(sd->blk, addr, len, sd->data, 0) < 0) {",
           ("--group", "data"), "image"),
    Mutant("pl181-response3-keeps-end-bit",
           "independent expectations are verdicts, on a board's own controller (#11 item 4; "
           "#41 item 1: the PL181)",
           "hw/sd/pl181.c",
           "s->response[3] = ldl_be_p(&response[12]) & ~1;",
           "s->response[3] = ldl_be_p(&response[12]);",
           ("--group", "mmci", "--board", "vexpress-a9"), "MCIResponse3"),
    Mutant("omap-cmd12-no-card-busy",
           "independent expectations are verdicts, on a board's own controller (#11 item 4; "
           "#41 item 1: the OMAP MMC/SD host)",
           "hw/sd/omap_mmc.c",
           "host->status |= 0x0005;",
           "host->status |= 0x0001;",
           ("--group", "omap", "--board", "sx1"), "MMC_STAT"),
    Mutant("omap-adtc-type-mismatch",
           "independent expectations are verdicts, on a board's own controller (#11 item 4; "
           "#41 item 1: the OMAP MMC/SD host; the regression upstream's 'hw/sd/omap_mmc: "
           "Don't use sd_cmd_type_t' fixed: the TYPE field compared with another enum)",
           "hw/sd/omap_mmc.c",
           "if (type == SD_TYPE_ADTC) {",
           "if (type == SD_TYPE_ADTC + 1) {",
           ("--group", "omap", "--board", "sx1"), "MMC_DATA"),
    Mutant("cadence-swr-keeps-sdhci",
           "independent expectations are verdicts, on a board's own controller (#11 item 4; "
           "#41 item 1: the Cadence SD4HC's own reset)",
           "hw/sd/cadence_sdhci.c",
           "device_cold_reset(DEVICE(&s->sdhci));",
           "/* the SDHCI inside is not reset */",
           ("--group", "registers", "--board", "icicle"), "NORINTSTSEN"),
)


@dataclass
class Outcome:
    mutant: str
    status: str                        #: caught, MISSED, timed out, not applicable, build failed
    detail: str = ""
    seconds: float = 0.0
    #: The check's groups with a failing result, and what failed in each.
    groups: str = ""


def _git_clean(src: Path, paths: list[str]) -> bool:
    r = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", *paths],
                       capture_output=True, text=True, timeout=60, check=False)
    return r.returncode == 0 and not r.stdout.strip()


def applicable(m: Mutant, text: str) -> bool:
    return text.count(m.anchor) == 1


def run_check(binary: Path, args: tuple[str, ...], report_dir: Path,
              timeout: float) -> tuple[int, str]:
    """``sdqtest check`` on ``binary`` in a child process: exit status and output."""
    cmd = [sys.executable, "-m", "harness.cli", "check", "--qemu", str(binary),
           "--report-dir", str(report_dir), *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"check did not finish in {timeout:.0f} s"
    return r.returncode, r.stdout + r.stderr


def first_finding(output: str) -> str:
    """The first line of a check's output that names a failing result (a
    result line, a divergence, an error that stopped the check), else the
    first that mentions a difference."""
    hard = ("DIVERGE", "divergence in", "SPEC-MISS", "CRASH", "QEMU error:", "sdqtest: error:")
    lines = [x.strip() for x in output.splitlines()]
    for s in lines:
        if any(w in s for w in hard) or (s.startswith("[") and s.endswith((": ERROR",
                                                                          ": TIMEOUT"))):
            return s[:200]
    return next((s[:200] for s in lines if "differs" in s), "")


#: A result kind of the check's summary table that is not an agreement.
_FAILING = re.compile(r"(\d+ (?:DIVERGE|ERROR|CRASH|SPEC-MISS|TIMEOUT|REFUSED|UNEXPLAINED)\w*)")


def failing_groups(output: str) -> str:
    """``group: N KIND`` for each group of the check's summary table with a
    result that is not an agreement (``commands: 1 DIVERGE; explore: ...``)."""
    found: list[str] = []
    for line in output.splitlines():
        m = re.match(r"^([a-z][\w-]*)\s{2,}(.*)$", line)
        if m is None:
            continue
        bad = _FAILING.findall(m.group(2))
        if bad:
            found.append(f"{m.group(1)}: {', '.join(bad)}")
    return "; ".join(found)


def verdict(rc: int, output: str) -> str:
    """A mutant's verdict from its check: caught (a failing result named),
    timed out, or MISSED (the exit status beside it)."""
    if rc == 124 and "did not finish" in output:
        return "timed out"
    return "caught" if rc != 0 and (first_finding(output) or failing_groups(output)) \
        else f"MISSED (exit {rc})"


def baseline_args(mutants: tuple[Mutant, ...]) -> tuple[str, ...]:
    """The unchanged tree's check: the mutants' own arguments when they all
    share them, else the union of their groups, else the default check."""
    if len({m.check_args for m in mutants}) == 1:
        return mutants[0].check_args
    if all(m.check_args[:1] == ("--group",) for m in mutants):
        groups = sorted({a for m in mutants for a in m.check_args[1].split(",")})
        return ("--group", ",".join(groups))
    return ()


def _record(name: str, status: str, out: str, t0: float, where: Path) -> Outcome:
    """The outcome of one check, its output kept as ``where/check-output.txt``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "check-output.txt").write_text(out)
    return Outcome(name, status, first_finding(out), time.monotonic() - t0, failing_groups(out))


def prove(
    src: Path,
    build_dir: Path,
    mutants: tuple[Mutant, ...],
    log: IO[str],
    report_dir: Path,
    say: IO[str] = sys.stdout,
    timeout: float = 1800.0,
    check_timeout: float | None = None,
    budget: float | None = None,
) -> list[Outcome]:
    """Baseline, then each mutant: edit, build, check (``check_timeout``
    seconds at most, default ``timeout``), restore.  A mutant that does not
    build is reported and the next one built incrementally, without
    configuring afresh.  After ``budget`` seconds no further mutant starts
    (the rest are reported ``not run``)."""
    started = time.monotonic()
    paths = sorted({m.path for m in mutants})
    if not (src / ".git").exists():
        raise MutantError(f"{src} is not a git tree (needed to prove it is restored)")
    if not _git_clean(src, paths):
        raise MutantError(f"{src} has local changes in {', '.join(paths)}: commit or stash "
                          "them first (mutants edit those files and restore them)")
    # an existing coverage build stays one (no reconfigure, no full rebuild)
    builder = QemuTreeBuilder(build_dir=build_dir, coverage="--enable-gcov" in configured_flags(
        build_dir))
    outcomes: list[Outcome] = []

    def build() -> Path | None:
        res = builder.build(src, "HEAD", log, timeout)
        return res.binary if res.ok else None

    t0 = time.monotonic()
    binary = build()
    if binary is None:
        raise MutantError(f"the unchanged tree does not build (log: {log.name})")
    check_timeout = check_timeout or timeout
    rc, out = run_check(binary, baseline_args(mutants), report_dir / "baseline", check_timeout)
    outcomes.append(_record("(unchanged tree)", "agrees" if rc == 0 else f"FAILS (exit {rc})",
                            out, t0, report_dir / "baseline"))
    builder.retry_configure = False  # a mutant that does not compile is just that
    print(f"baseline: {outcomes[-1].status}", file=say, flush=True)
    if rc != 0:
        return outcomes
    try:
        for m in mutants:
            t0 = time.monotonic()
            if budget is not None and t0 - started > budget:
                outcomes.append(Outcome(m.name, "not run", f"the budget of {budget:.0f} s "
                                        "was spent"))
                continue
            f = src / m.path
            original = f.read_text()
            if not applicable(m, original):
                outcomes.append(Outcome(m.name, "not applicable",
                                        f"anchor found {original.count(m.anchor)} times in "
                                        f"{m.path}"))
                print(f"{m.name}: not applicable", file=say, flush=True)
                continue
            try:
                f.write_text(original.replace(m.anchor, m.replacement))
                binary = build()
                if binary is None:
                    outcomes.append(Outcome(m.name, "build failed", f"see {log.name}",
                                            time.monotonic() - t0))
                    print(f"{m.name}: build failed", file=say, flush=True)
                    continue
                rc, out = run_check(binary, m.check_args, report_dir / m.name, check_timeout)
            finally:
                f.write_text(original)
            outcomes.append(_record(m.name, verdict(rc, out), out, t0, report_dir / m.name))
            print(f"{m.name}: {outcomes[-1].status}", file=say, flush=True)
    finally:
        for p in paths:
            proc.capture(["git", "-C", str(src), "checkout", "--", p], timeout=60)
        build()  # leave the build directory as the unchanged tree
    return outcomes
