"""Every error sdqtest raises, as one tree under :class:`SdqtestError`.

The lowest layer: it imports nothing from harness, and every layer may
import it.  Classes defined here are the ones callers catch across layers;
the others stay beside the code that raises them (module in brackets) and
derive from the base shown.  ``tests/qtest/core/test_errors.py`` keeps this
tree and the code in step.

::

    SdqtestError
    +-- UsageError                   bad input from the user; the CLI prints
    |   |                            it as one line, exit status 2
    |   +-- InputError               [check.inputs] bad --image/--machine/build
    |   +-- ReplayError (ValueError) [replay.engine] a trace header it cannot use
    +-- TargetError                  a request a Target refuses; every Target
    |   |                            raises the same type for the same misuse
    |   +-- AccessSizeError (ValueError)  register access size not 1, 2, 4, 8
    |   +-- OffsetError (ValueError)      register offset beyond the bus's reach
    |   +-- AddressError (ValueError)     guest memory range not in 64-bit space
    |   +-- ClockStepError (ValueError)   a negative virtual-time step
    |   +-- ClockUnavailable         virtual time cannot move (no qtest accel)
    |   +-- Departed                 [check.recording] a replayed run left QEMU's
    |                                recorded path
    +-- QemuError                    a QEMU process failed the harness
    |   +-- QemuLaunchError          [qemu.session] could not start / refused argv
    |   +-- QemuTargetError          [qemu.target] machine not one it can drive
    |   +-- BoardError               [qemu.board] the board QEMU built is not the one
    |   |                            described, or qtest cannot watch its IRQ
    |   +-- QtestError               [qemu.qtest] a FAIL/ERR answer
    |   +-- StdioTimeout             [qemu.stdio] no answer on -qtest stdio in time
    |   +-- MigrationRefused         [qemu.migrate] QEMU could not save or load
    |   |                            a migration stream (QEMU's reason)
    |   +-- StreamError (ValueError) [qemu.vmstate] a stream it cannot split
    |   +-- QemuGone                 QEMU stopped serving the session: a crash
    |       +-- QemuDied             [qemu.session] exited or was killed
    |       +-- QtestClosed          [qemu.qtest] the qtest stream ended
    |       +-- QtestTimeout         [qemu.qtest] no answer in time (hung, stopped)
    +-- ModelConfigError (ValueError)  a device property the model cannot take
    |   +-- SDHCIConfigError         [model.sdhci_state] bad sdhci-pci property
    |   +-- UnknownMachineError      [model.compat] machine type the build lacks
    +-- BuildError                   [qemu.builds] no such build, or cannot probe it
    +-- InstallError (RuntimeError)  [provision.install] installing a build failed
    +-- SourceError                  [provision.source] a source release cannot be
    |                                fetched, unpacked or built
    +-- ImageError                   [images] no such recipe, or cannot make it
    +-- FormatError (ValueError)     [scenarios.drivers] a driver recording cannot be read
    +-- TraceError                   [scenarios.drivers_trace] a trace no recording comes from
    +-- DriverError                  [driver.results] the device did not do what
    |   |                            the host driver asked
    |   +-- DriverTimeout            [driver.results] ... in time
    |   +-- SpiError                 [driver.spi] no R1, token or end of busy in SPI mode
    |   +-- MmciError                [driver.pl181] a PL181 command or transfer never ended
    |   +-- SdhostError              [driver.sdhost] SDCMD.NEW_FLAG never cleared
    |   +-- SunxiError               [driver.allwinner] a command, transfer or IDMAC chain hung
    |   +-- OmapMmcError             [driver.omap_mmc] an OMAP MMC command never settled
    +-- BenchError                   [bench.data] a benchmark's check failed
    +-- GuestError                   the Linux guest could not run its jobs
    |   |                            (one line naming the cause)
    |   +-- GuestRunError            [guest.runner] a boot failed: job, transcript
    |   +-- ProtocolError            [guest.protocol] a malformed result line
    |   +-- CardError                [guest.card] the card image is not as made
    |   +-- ElfError                 [guest.elf] a file of the guest is not ELF64
    +-- BisectError                  [bisect.driver] a bisect cannot go on
    +-- GitError                     [bisect.step] a git command failed
    +-- BuildSetupError              [provision.build] a QEMU tree cannot be built
    +-- MutantError                  [bisect.mutants] a tree cannot take the mutants
    +-- CoverageError                [check.coverage] not a gcov build, or gcov failed
    +-- SeriesError                  [review.series] a series cannot be read or applied
                                     (names the patch)
    +-- ReuseDependent               [explore.search] an explored input reads card
                                     state a reused QEMU carries over (not kept)

Anything else raised (a ``KeyError``, an ``IndexError``) is a bug of
sdqtest: the command line turns it into exit status :data:`EXIT_INTERNAL`,
one line on stderr and the traceback in a file
(:mod:`harness.commands.failure`).

Not an error: ``check.divergence.Divergence`` is a result (the first step
where model and QEMU disagree); it is raised to stop a scenario and caught
by the runner.  Nor is ``check.lockstep.ModelStopped``: it ends a run
where the model stopped a transfer QEMU keeps running (the runner reports
the run as skipped there).  Nor is ``check.optimistic.Fallback``: it ends
an optimistic lockstep attempt, which the runner (or the fuzzer) then runs
step by step.  Nor is ``check.scoreboard.Stopped``: it ends a run that
reached its limit of distinct differences (``--max-differences``).  Nor
is ``bisect.mutants._OverTime``: it stops a mutant's in-process check at
its time limit (the mutant is then "timed out").
"""

from __future__ import annotations

#: The exit status of an internal error of sdqtest: an exception no layer
#: expected (not one of this tree), or a run a harness or model bug ended.
#: 70 is ``EX_SOFTWARE`` of BSD's ``sysexits.h``; no command exits 70 for
#: anything else (0-4 are a check's verdicts, 130 an interrupt), so CI never
#: takes a bug of sdqtest for a QEMU regression.
EXIT_INTERNAL = 70


class SdqtestError(Exception):
    """Root of every error sdqtest raises."""


class UsageError(SdqtestError):
    """A problem the user can fix; the CLI prints it as one line (exit 2)."""


# -- Target ---------------------------------------------------------------------------


class TargetError(SdqtestError):
    """A request a Target refuses (the same type whichever Target)."""


class AccessSizeError(TargetError, ValueError):
    """A register access of a size other than 1, 2, 4 or 8 bytes."""


class OffsetError(TargetError, ValueError):
    """A register offset that is not an int the bus can reach."""


class AddressError(TargetError, ValueError):
    """A guest memory range outside the 64-bit physical address space."""


class ClockStepError(TargetError, ValueError):
    """A virtual-time step that goes backwards."""


class ClockUnavailable(TargetError):
    """The target cannot move virtual time (a QEMU build without qtest accel)."""


# -- QEMU -----------------------------------------------------------------------------


class QemuError(SdqtestError):
    """Base of the errors about a QEMU process."""


class QemuGone(QemuError):
    """QEMU stopped serving the session (exited, closed the stream, hung):
    the cross-check reports it as a crash, never as a harness bug."""


# -- model ----------------------------------------------------------------------------


class ModelConfigError(SdqtestError, ValueError):
    """A device property or machine the model cannot take (a ValueError too)."""


class GuestError(SdqtestError):
    """The Linux guest could not run its jobs; the message names the cause."""
