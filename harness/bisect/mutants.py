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

A mutant checked on the boards (its arguments name ``--board``) or in a file
only ARM SoCs compile (:data:`ARM_FILES`) needs ``qemu-system-aarch64``: a
set holding one is built with the ARM target too (``QemuTreeBuilder(arm=True)``,
one configure, both emulators; a set of board mutants only, the ARM target
alone), and its checks get the tree's aarch64 binary; the others keep the
x86 one.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness import progress
from harness.check import report, session
from harness.errors import QemuError, SdqtestError, UsageError
from harness.provision import proc
from harness.provision.build import (
    ARM_BINARY,
    BINARY,
    RISCV_BINARY,
    QemuTreeBuilder,
    configured_flags,
)

#: The system emulators a mutant's check runs on.
X86 = "x86_64"
AARCH64 = "aarch64"
RISCV64 = "riscv64"

#: ``hw/sd`` files only ARM machines compile: ``hw/sd/meson.build`` adds each
#: under a Kconfig symbol that only ``hw/arm``'s SoCs select (PL181: versatile,
#: realview, vexpress, integrator; OMAP: sx1; RASPI; ASPEED_SOC; ALLWINNER_H3;
#: NPCM7XX; SSI_SD: stellaris, and riscv's sifive_u beside it).  No x86 build
#: holds them, so a mutant there is built and checked on aarch64.
ARM_FILES = frozenset({"hw/sd/pl181.c", "hw/sd/omap_mmc.c", "hw/sd/bcm2835_sdhost.c",
                       "hw/sd/aspeed_sdhci.c", "hw/sd/allwinner-sdhost.c",
                       "hw/sd/npcm7xx_sdhci.c", "hw/sd/ssi-sd.c"})
#: Files only riscv64 machines compile (CADENCE_SDHCI: microchip-icicle-kit):
#: a set holding such a mutant builds qemu-system-riscv64 too, checked there.
RISCV_FILES = frozenset({"hw/sd/cadence_sdhci.c"})


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
    Mutant("allwinner-descriptor-keeps-own",
           "a board controller's own DMA is held to its manual (#41 item 1: the Allwinner "
           "IDMAC hands each used descriptor back by clearing DES0.OWN, H3 manual 5.3.4.2)",
           "hw/sd/allwinner-sdhost.c",
           "desc->status &= ~DESC_STATUS_HOLD;",
           "desc->status &= ~DESC_STATUS_ERROR;",
           ("--group", "sunxi", "--board", "orangepi-pc"), "OWN"),
    Mutant("sdhost-block-irpt-lost",
           "a board controller's interrupt status is compared (#41 item 1: the BCM2835 "
           "SDHOST sets SDHSTS.BLOCK_IRPT when a write's block has gone to the card, as "
           "Linux's bcm2835.c waits for)",
           "hw/sd/bcm2835_sdhost.c",
           "s->status |= SDHSTS_BLOCK_IRPT;",
           "/* the block interrupt is lost */",
           ("--group", "sdhost", "--board", "raspi2b"), "diverge"),
    Mutant("aspeed-info-reset-sticks",
           "a board wrapper's own registers are compared (#41 item 1: the Aspeed SDC_INFO "
           "software reset bit reads back 0 after a write, as Linux's sdhci-of-aspeed expects)",
           "hw/sd/aspeed_sdhci.c",
           "sdhci->regs[TO_REG(addr)] = (uint32_t)val & ~ASPEED_SDHCI_INFO_RESET;",
           "sdhci->regs[TO_REG(addr)] = (uint32_t)val;",
           ("--board", "ast2600", "--scenario", "aspeed-wrapper-registers"), "SDC_INFO"),
)


def target(m: Mutant) -> str:
    """The emulator ``m`` is checked on: aarch64 for a check on the boards
    (``--board``) or a file only ARM SoCs compile, riscv64 for one only
    riscv64 machines compile, else x86_64."""
    if m.path in RISCV_FILES:
        return RISCV64
    return AARCH64 if "--board" in m.check_args or m.path in ARM_FILES else X86


def check_args(m: Mutant) -> tuple[str, ...]:
    """``m``'s check arguments as run: an aarch64 mutant that names no board
    is checked on the default check's boards."""
    if target(m) != AARCH64 or "--board" in m.check_args:
        return m.check_args
    from harness.check.boards import DEFAULT_BOARDS

    return (*m.check_args, "--board", ",".join(DEFAULT_BOARDS))


@dataclass
class MutantOutcome:
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


class _OverTime(BaseException):
    """A mutant's check ran past its time (a BaseException: the check
    session cancels its workers and lets it through)."""


def check_request(binary: Path, args: tuple[str, ...], report_dir: Path
                  ) -> session.CheckRequest:
    """The check a mutant's ``sdqtest check`` arguments name (``--group``,
    ``--scenario``, ``--board``, ``--no-boards``, ``-j``), on ``binary``."""
    p = argparse.ArgumentParser(prog="sdqtest check", add_help=False, exit_on_error=False)
    for flag in ("--group", "--scenario", "--board"):
        p.add_argument(flag, action="append")
    p.add_argument("--no-boards", action="store_true")
    p.add_argument("-j", "--jobs", type=int, default=0)
    try:
        a = p.parse_args(list(args))
    except (argparse.ArgumentError, SystemExit) as e:
        raise UsageError(f"a mutant's check arguments {' '.join(args)!r}: {e}") from None
    return session.CheckRequest(
        qemu=(str(binary),), groups=session.names(a.group), scenarios=session.names(a.scenario),
        boards=tuple(a.board) if a.board else None, no_boards=a.no_boards, jobs=a.jobs,
        report_dir=report_dir)


def run_check(binary: Path, args: tuple[str, ...], report_dir: Path,
              timeout: float) -> tuple[int, str]:
    """``sdqtest check ARGS`` on ``binary``, in-process (the check session):
    its exit status and report, as the command prints them; 124 when it
    ran past ``timeout`` seconds (between two runs: QEMU is bounded by its
    own qtest timeouts)."""
    deadline = time.monotonic() + timeout

    def progress(_text: str) -> None:
        if time.monotonic() > deadline:
            raise _OverTime

    try:
        out = session.run(check_request(binary, args, report_dir), progress)
    except _OverTime:
        return 124, f"check did not finish in {timeout:.0f} s"
    except QemuError as e:
        return 3, f"sdqtest: QEMU error: {e}"
    except SdqtestError as e:
        return 2, f"sdqtest: error: {e}"
    return out.verdict.status, report_text(out)


def report_text(out: session.CheckOutcome) -> str:
    """A check's report as ``sdqtest check`` prints it: the table, the
    notes, the summary line and the verdict's lines."""
    text = io.StringIO()
    report.print_report(out.results, text)
    if out.notes:
        text.write("\n" + "\n".join(out.notes) + "\n")
    text.write("\n" + session.summary(out) + "\n")
    text.writelines(f"sdqtest: {line}\n" for line in out.verdict.why)
    if out.aborted:
        text.write(f"sdqtest: the check stopped:\n{out.aborted}")
    return text.getvalue()


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
    if all(m.check_args[:1] == ("--group",) and len(m.check_args) == 2 for m in mutants):
        groups = sorted({a for m in mutants for a in m.check_args[1].split(",")})
        return ("--group", ",".join(groups))
    return ()


def baseline_runs(mutants: tuple[Mutant, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """``(emulator, check arguments)`` of the unchanged tree's checks: the x86
    mutants' :func:`baseline_args` on x86_64, and each distinct board check
    of the aarch64 mutants on aarch64 (boards' groups do not pool: one
    board's group is not on another's bus)."""
    runs: list[tuple[str, tuple[str, ...]]] = []
    x86 = tuple(m for m in mutants if target(m) == X86)
    if x86:
        runs.append((X86, baseline_args(x86)))
    for emu in (AARCH64, RISCV64):
        runs += [(emu, a) for a in dict.fromkeys(check_args(m) for m in mutants
                                                 if target(m) == emu)]
    return runs


def _record(name: str, status: str, out: str, t0: float, where: Path) -> MutantOutcome:
    """The outcome of one check, its output kept as ``where/check-output.txt``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "check-output.txt").write_text(out)
    return MutantOutcome(name, status, first_finding(out), time.monotonic() - t0,
                         failing_groups(out))


def _binaries(first: Path) -> dict[str, Path]:
    """The tree's emulators, by :func:`target` name, beside the first it built."""
    return {X86: first.parent / BINARY, AARCH64: first.parent / ARM_BINARY,
            RISCV64: first.parent / RISCV_BINARY}


def _baseline(binaries: dict[str, Path], mutants: tuple[Mutant, ...], report_dir: Path,
              timeout: float) -> MutantOutcome:
    """The unchanged tree's checks (:func:`baseline_runs`): ``agrees`` when
    each exits 0, else the first that fails, its output kept beside."""
    t0 = time.monotonic()
    runs = baseline_runs(mutants)
    outs: list[str] = []
    for k, (emu, args) in enumerate(runs, 1):
        where = report_dir / ("baseline" if len(runs) == 1 else f"baseline-{k}-{emu}")
        rc, out = run_check(binaries[emu], args, where, timeout)
        outs.append(f"$ sdqtest check --qemu {binaries[emu]} {' '.join(args)}\n{out}")
        if rc != 0:
            return _record("(unchanged tree)", f"FAILS (exit {rc}) on {emu}", out, t0, where)
    return _record("(unchanged tree)", "agrees", "\n".join(outs), t0, report_dir / "baseline")


def _restored(src: Path, paths: list[str]) -> None:
    for p in paths:
        proc.capture(["git", "-C", str(src), "checkout", "--", p], timeout=60)


def _text(f: Path) -> str:
    """A file's text; empty for one this tree does not have (the anchor is then
    found 0 times: not applicable)."""
    return f.read_text() if f.is_file() else ""


def _skip(m: Mutant, text: str, started: float, budget: float | None) -> MutantOutcome | None:
    """Why ``m`` is not run (budget spent, anchor), or None."""
    if budget is not None and time.monotonic() - started > budget:
        return MutantOutcome(m.name, "not run", f"the budget of {budget:.0f} s was spent")
    if not applicable(m, text):
        return MutantOutcome(m.name, "not applicable",
                       f"anchor found {text.count(m.anchor)} times in {m.path}")
    return None


def _builder(build_dir: Path, mutants: tuple[Mutant, ...]) -> QemuTreeBuilder:
    """The builder of the emulators the mutants' checks run on (a board-only
    set: aarch64 alone).  An existing build directory stays as it was
    configured when it already makes those emulators (a coverage build stays
    one; its other targets stay too): no reconfigure, no full rebuild."""
    flags = configured_flags(build_dir)
    emulators = {target(m) for m in mutants} or {X86}
    built = {e for e in (X86, AARCH64, RISCV64)
             if any(f.startswith("--target-list=") and f"{e}-softmmu" in f for f in flags)}
    if emulators <= built:
        emulators = built
    return QemuTreeBuilder(build_dir=build_dir, coverage="--enable-gcov" in flags,
                           arm=AARCH64 in emulators, riscv=RISCV64 in emulators,
                           x86=X86 in emulators)


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
) -> list[MutantOutcome]:
    """Baseline, then each mutant: edit, build, check (``check_timeout``
    seconds at most, default ``timeout``) on its emulator, restore.  A
    mutant that does not build is reported and the next one built
    incrementally, without configuring afresh.  After ``budget`` seconds no
    further mutant starts (the rest are reported ``not run``)."""
    started = time.monotonic()
    paths = sorted({m.path for m in mutants})
    if not (src / ".git").exists():
        raise MutantError(f"{src} is not a git tree (needed to prove it is restored)")
    if not _git_clean(src, paths):
        raise MutantError(f"{src} has local changes in {', '.join(paths)}: commit or stash "
                          "them first (mutants edit those files and restore them)")
    builder = _builder(build_dir, mutants)
    doing = ["baseline"]  # what the status line names (harness.progress)

    def build() -> dict[str, Path] | None:
        progress.show(f"{doing[0]}: building {src} (log: {log.name})")
        res = builder.build(src, "HEAD", log, timeout)
        progress.show(f"{doing[0]}: checking")
        return _binaries(res.binary) if res.ok and res.binary is not None else None

    binaries = build()
    if binaries is None:
        raise MutantError(f"the unchanged tree does not build (log: {log.name})")
    check_timeout = check_timeout or timeout
    outcomes = [_baseline(binaries, mutants, report_dir, check_timeout)]
    progress.show("")
    builder.retry_configure = False  # a mutant that does not compile is just that
    print(f"baseline: {outcomes[-1].status}", file=say, flush=True)
    if outcomes[0].status != "agrees":
        return outcomes
    try:
        for i, m in enumerate(mutants, 1):
            doing[0] = f"mutant {i}/{len(mutants)} {m.name}"
            outcomes.append(_one(m, src, build, report_dir, check_timeout, log.name,
                                 _skip(m, _text(src / m.path), started, budget)))
            progress.show("")
            print(f"{m.name}: {outcomes[-1].status}", file=say, flush=True)
    finally:
        _restored(src, paths)
        doing[0] = "restoring the unchanged tree"
        build()  # leave the build directory as the unchanged tree
        progress.show("")
    return outcomes


def _one(m: Mutant, src: Path, build: Callable[[], dict[str, Path] | None], report_dir: Path,
         timeout: float, log_name: str, skipped: MutantOutcome | None) -> MutantOutcome:
    """One mutant: edit, build, check on its emulator, restore the file."""
    if skipped is not None:
        return skipped
    t0 = time.monotonic()
    f = src / m.path
    original = f.read_text()
    try:
        f.write_text(original.replace(m.anchor, m.replacement))
        binaries = build()
        if binaries is None:
            return MutantOutcome(m.name, "build failed", f"see {log_name}", time.monotonic() - t0)
        rc, out = run_check(binaries[target(m)], check_args(m), report_dir / m.name, timeout)
    finally:
        f.write_text(original)
    return _record(m.name, verdict(rc, out), out, t0, report_dir / m.name)
