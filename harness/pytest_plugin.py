"""pytest plugin: run tests against each selected QEMU build.

Active only where asked, since it probes every installed QEMU when a session
starts: ``pytest -p harness.pytest_plugin``, ``pytest_plugins =
["harness.pytest_plugin"]`` in a top-level ``conftest.py`` (this project's
``tests/qtest/conftest.py``), or ``addopts = "-p harness.pytest_plugin"`` in the
ini file.  It is not registered as a ``pytest11`` entry point, so installing
sdqtest changes no other pytest session.

Options:

* ``--sdq-qemu NAME|PATH`` (repeatable): an installed build (``7.2``, ``10.0``,
  ``11.1``) or a binary.  Default: ``$QTEST_QEMU_BINARY`` if set, as in
  QEMU's own qtests, else every installed build.
* ``--sdq-machine TYPE`` (repeatable): machine types for tests that take the
  ``machine`` fixture (default ``q35`` and ``pc``).

Fixtures: ``qemu_build`` (parametrised over the builds, ids are build names),
``machine`` (parametrised over machine types) and ``qemu_pool`` (one
:class:`harness.qemu.pool.QemuPool` per test process, so per xdist worker:
tests that pass it to ``runner.run`` reuse QEMU processes).  A test that needs a
capability the build lacks is skipped with the reason, never silently.  A
selected or installed build whose probe fails is an error, with one line
saying why, for every test (or collection) that asks for the builds, rather
than a skip of every QEMU test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.qemu import builds as _builds
from harness.qemu.pool import QemuPool

_STASH_BUILDS = pytest.StashKey[list[_builds.QemuBuild]]()
_STASH_PROBE_ERROR = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("sdqtest", "QEMU SD/SDHCI cross-check")
    g.addoption(
        "--sdq-qemu", action="append", default=None, metavar="NAME|PATH",
        help="QEMU build to test (repeatable; default: $QTEST_QEMU_BINARY or all installed)",
    )
    g.addoption(
        "--sdq-machine", action="append", default=None, metavar="TYPE",
        help="machine type for machine-parametrised tests (repeatable; default q35 and pc)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "qemu: needs a real QEMU build")
    try:
        config.stash[_STASH_BUILDS] = _builds.selected(config.getoption("sdq_qemu"))
    except _builds.BuildError as e:
        # Kept until a test asks for the builds: a session whose tests need
        # no QEMU (a bisect step's own test file) still runs.
        config.stash[_STASH_PROBE_ERROR] = f"sdqtest: {e}"


def selected_builds(config: pytest.Config) -> list[_builds.QemuBuild]:
    """The selected builds.  A build that was asked for (``--sdq-qemu``,
    ``$QTEST_QEMU_BINARY``) or is installed but cannot be probed fails the
    test or collection that asks: skipping every QEMU test instead would
    pass a run that checked nothing."""
    error = config.stash.get(_STASH_PROBE_ERROR, None)
    if error is not None:
        raise pytest.UsageError(error)
    return config.stash.get(_STASH_BUILDS, [])


def pytest_report_header(config: pytest.Config) -> list[str]:
    error = config.stash.get(_STASH_PROBE_ERROR, None)
    if error is not None:
        return [f"{error} (every test that needs QEMU fails)"]
    found = selected_builds(config)
    if not found:
        return ["sdqtest: no QEMU build (none installed; run 'sdqtest qemu install')"]
    return [
        f"sdqtest: QEMU {b.name} = {b.version} {b.profile.package} ({b.binary}), "
        f"qtest accel: {'yes' if b.profile.has_qtest_accel else 'no'}"
        for b in found
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    if "qemu_build" in metafunc.fixturenames:
        found = selected_builds(config)
        if found:
            metafunc.parametrize(
                "qemu_build", found, ids=[f"qemu-{b.name}" for b in found], scope="session"
            )
        else:
            metafunc.parametrize(
                "qemu_build",
                [pytest.param(None, marks=pytest.mark.skip(
                    reason="no QEMU build: run 'sdqtest qemu install' or pass --sdq-qemu PATH"))],
                ids=["no-qemu"],
            )
    if "machine" in metafunc.fixturenames:
        machines = config.getoption("sdq_machine") or ["q35", "pc"]
        metafunc.parametrize("machine", machines, scope="session")


@pytest.fixture(scope="session")
def qemu_pool() -> Iterator[QemuPool]:
    """Reused QEMU processes for this test process (closed at its end)."""
    with QemuPool() as pool:
        yield pool


@pytest.fixture(scope="module")
def newest_build(pytestconfig: pytest.Config) -> _builds.QemuBuild:
    """The newest of the selected builds, for tests that need one QEMU and
    not each (a campaign, a reuse comparison): skipped without any."""
    found = selected_builds(pytestconfig)
    if not found:
        pytest.skip("no QEMU build: run 'sdqtest qemu install' or pass --sdq-qemu PATH")
    return max(found, key=lambda b: b.profile.version)


def require_clock(build: _builds.QemuBuild) -> None:
    """Skip (with the reason) a test that needs virtual time on ``build``."""
    if not build.profile.has_qtest_accel:
        pytest.skip(f"QEMU {build.name} has no qtest accelerator: virtual time cannot move")
