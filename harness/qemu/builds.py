"""Which QEMU builds there are, and what each can do, detected from the binary.

A build is named either by an installed name (``7.2``, ``10.0``, ``11.1``:
see :mod:`harness.provision.install`) or by a path.  ``QTEST_QEMU_BINARY``, as in
QEMU's own qtests, names the build to use when none is given.  Capabilities
come from QMP (``query-version``, ``query-machines``,
``device-list-properties``) and from an accelerator probe, never from the
version number; they are kept per binary's contents and modules
(:mod:`harness.qemu.answers`).
"""

from __future__ import annotations

import contextlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import SdqtestError
from harness.machine import Machine
from harness.profile import BuildProfile, parse_version
from harness.qemu.session import QemuError, QemuSession


class BuildError(SdqtestError):
    """A build cannot be found or cannot run what the suite needs."""


@dataclass(frozen=True)
class QemuBuild:
    """A QEMU binary and what it offers: its :class:`BuildProfile` (version,
    machine types, device properties, qtest accelerator, package) and the
    facts only the QEMU side needs."""

    name: str
    binary: Path
    profile: BuildProfile
    aliases: dict[str, str] = field(default_factory=dict)
    default_machine: str = ""
    has_sdhci_pci: bool = False

    @property
    def version(self) -> str:
        """``"11.1.3"``: the profile's version as text."""
        return ".".join(str(x) for x in self.profile.version)

    @property
    def has_erase_blocks_as_zero(self) -> bool:
        return self.profile.has_erase_blocks_as_zero

    def offers(self, machine: str) -> bool:
        """``machine`` is one of the build's machine types or aliases."""
        return machine in self.profile.machine_types or machine in self.aliases

    def versioned_machines(self, family: str) -> list[str]:
        """``pc-q35-*`` or ``pc-i440fx-*`` machine types, oldest first."""
        prefix = {"q35": "pc-q35-", "pc": "pc-i440fx-"}[family]
        pattern = re.escape(prefix) + r"\d+\.\d+"
        found = [m for m in self.profile.machine_types if re.fullmatch(pattern, m)]
        return sorted(found, key=lambda m: tuple(int(x) for x in m[len(prefix):].split(".")))

    def digest(self) -> str:
        """SHA-256 of the binary's contents (kept by its stat: :mod:`harness.qemu.answers`)."""
        from harness.qemu import answers

        return answers.file_digest(self.binary)


def _props(session: QemuSession, typename: str) -> dict[str, str | None] | None:
    try:
        props = session.qmp_cmd("device-list-properties", typename=typename)
    except QemuError:
        return None
    out: dict[str, str | None] = {}
    for p in props:
        dv = p.get("default-value")
        out[p["name"]] = None if dv is None else _text(dv)
    return out


def _pluggable(session: QemuSession, typename: str) -> bool:
    """``typename`` is user-creatable: HMP ``device_add help`` lists it."""
    try:
        text = session.qmp_cmd("human-monitor-command", **{"command-line": "device_add help"})
    except QemuError:
        return False
    return f'name "{typename}"' in str(text)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_memo: dict[tuple[str, int, int], QemuBuild] = {}


def probe(binary: str | Path, name: str | None = None) -> QemuBuild:
    """Detect what ``binary`` offers, by running it (about 0.1 s), or from
    the answer kept for the same contents and module files
    (:mod:`harness.qemu.answers`: whether the qtest accelerator loads
    depends on the modules beside the binary, so they are in the key).
    """
    path = Path(binary).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BuildError(
            f"QEMU binary {path} does not exist or is not executable; "
            "install builds with 'sdqtest qemu install' or pass --qemu PATH"
        )
    path = path.absolute()
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _memo:
        _memo[key] = _probe_cached(path)
    b = _memo[key]
    return b if name is None else _renamed(b, name)


def probe_all(items: list[tuple[str | Path, str | None]]) -> list[QemuBuild]:
    """:func:`probe` of each ``(binary, name)``, the binaries run at once
    (a probe waits on QEMU's start-up: the six installed builds took 0.9 s
    one after the other); a failure raises as :func:`probe`'s does."""
    if len(items) > 1:
        with ThreadPoolExecutor(max_workers=len(items)) as ex:
            list(ex.map(_probe_quietly, [b for b, _ in items]))
    return [probe(b, n) for b, n in items]


def _probe_quietly(binary: str | Path) -> None:
    """Fill the memo for ``binary``; an error is raised again by :func:`probe`."""
    with contextlib.suppress(BuildError):
        probe(binary)


def _probe_cached(path: Path) -> QemuBuild:
    """:func:`_probe_live`'s answer, kept by the binary's contents and its
    modules (:mod:`harness.qemu.answers`: a changed qtest accelerator
    module is probed again)."""
    from harness.qemu import answers
    from harness.qemu.session import socket_dir

    try:  # as a live probe would: a session's sockets must have somewhere to go
        socket_dir().rmdir()
    except QemuError as e:
        raise BuildError(f"cannot probe {path}: {e}") from e
    got = answers.cached(path, "probe", str(CACHE_FORMAT),
                         lambda: to_json(_probe_live(path, str(path))))
    try:
        b = from_json(got)
    except (ValueError, KeyError, TypeError):
        b = _probe_live(path, str(path))
    return replace(b, name=str(path), binary=path)


def _probe_live(path: Path, name: str) -> QemuBuild:
    try:
        with QemuSession(path, Machine.bare("none"), accel="auto", timeout=20) as s:
            v = s.qmp_cmd("query-version")
            q = v["qemu"]
            version = f"{q['major']}.{q['minor']}.{q['micro']}"
            machines: list[str] = []
            aliases: dict[str, str] = {}
            default = ""
            for m in s.qmp_cmd("query-machines"):
                machines.append(m["name"])
                if m.get("alias"):
                    aliases[m["alias"]] = m["name"]
                if m.get("is-default"):
                    default = m["name"]
            sd = _props(s, "sd-card")
            host = _props(s, "sdhci-pci")
            emmc = _props(s, "emmc")
            pluggable = emmc is not None and _pluggable(s, "emmc")
            accel = s.accel == "qtest"
    except QemuError as e:
        raise BuildError(f"cannot probe {path}: {e}") from e
    profile = BuildProfile(
        version=parse_version(version),
        machine_types=tuple(sorted(machines)),
        sd_card_properties=sd or {},
        sdhci_properties=host or {},
        has_qtest_accel=accel,
        package=str(v.get("package", "")).strip(),
        emmc_properties=emmc,
        emmc_pluggable=pluggable,
    )
    return QemuBuild(
        name=name,
        binary=path,
        profile=profile,
        aliases=aliases,
        default_machine=default,
        has_sdhci_pci=host is not None and sd is not None,
    )


#: Version of the JSON shape of :func:`to_json` (2: the profile nested).
CACHE_FORMAT = 2


def to_json(b: QemuBuild) -> dict[str, Any]:
    """A probe result as JSON."""
    return {"format": CACHE_FORMAT, "name": b.name, "binary": str(b.binary),
            "profile": b.profile.to_json(), "aliases": dict(b.aliases),
            "default_machine": b.default_machine, "has_sdhci_pci": b.has_sdhci_pci}


def from_json(d: dict[str, Any]) -> QemuBuild:
    """A probe result from :func:`to_json`; another format raises ``ValueError``
    (probe again)."""
    if d.get("format") != CACHE_FORMAT:
        raise ValueError(f"probe cache format {d.get('format')!r}, not {CACHE_FORMAT}")
    return QemuBuild(name=str(d["name"]), binary=Path(d["binary"]),
                     profile=BuildProfile.from_json(d["profile"]),
                     aliases=dict(d.get("aliases", {})),
                     default_machine=str(d.get("default_machine", "")),
                     has_sdhci_pci=bool(d.get("has_sdhci_pci", False)))


def _renamed(b: QemuBuild, name: str) -> QemuBuild:
    return replace(b, name=name)


def installed() -> dict[str, Path]:
    """Installed builds by name -> binary, from the cache (nothing is run)."""
    from harness.provision import install

    return {b.name: b.binary for b in install.installed_builds()}


def installed_arm() -> dict[str, Path]:
    """Installed board builds by name (``7.2-arm``, ``7.2-riscv``) -> the binary
    the boards run on (``qemu-system-aarch64``, which has every ARM board;
    ``qemu-system-riscv64``), from the cache (nothing is run)."""
    from harness.provision import install_arm

    return {b.name: b.binaries[f.runs] for f, b in install_arm.installed_board_builds()}


def selected_arm(specs: list[str] | None = None) -> list[QemuBuild]:
    """The builds boards run on: ``specs`` if given, else ``$QTEST_QEMU_BINARY``
    when it is an ARM or RISC-V binary, else every installed board build."""
    if specs:
        return _unique_names([resolve(s) for s in specs])
    env = os.environ.get("QTEST_QEMU_BINARY", "")
    if any(t in Path(env).name for t in ("arm", "aarch64", "riscv")):
        return _unique_names([probe(env)])
    return probe_all([(p, n) for n, p in installed_arm().items()])


def resolve(spec: str) -> QemuBuild:
    """A build from an installed name (x86 or ARM), a source build's name
    (``11.1.1-src``: :func:`harness.provision.source.source_builds`) or a path."""
    from harness.provision import source

    inst = {**installed(), **installed_arm(), **source.source_builds()}
    if spec in inst:
        return probe(inst[spec], spec)
    if os.sep in spec or Path(spec).exists():
        return probe(spec)
    known = ", ".join(sorted(inst)) or "none installed"
    raise BuildError(
        f"unknown QEMU build {spec!r} (installed: {known}); "
        "give a path to a qemu-system-x86_64, run 'sdqtest qemu install', or build a "
        "source release: 'sdqtest qemu build VERSION' (then --qemu VERSION-src)"
    )


def selected(specs: list[str] | None = None) -> list[QemuBuild]:
    """The builds to use: ``specs`` if given, else ``$QTEST_QEMU_BINARY``,
    else every installed build."""
    if specs:
        found = [resolve(s) for s in specs]
    elif os.environ.get("QTEST_QEMU_BINARY"):
        found = [probe(os.environ["QTEST_QEMU_BINARY"])]
    else:
        found = probe_all([(p, n) for n, p in sorted(installed().items(), key=_version_key)])
    return _unique_names(found)


def _unique_names(found: list[QemuBuild]) -> list[QemuBuild]:
    """Builds given by path are named by their version (``11.1.3``); two of
    the same version get ``-2``, ``-3``... so reports and test ids stay short."""
    out: list[QemuBuild] = []
    seen: set[str] = set()
    for b in found:
        name = b.version if b.name == str(b.binary) else b.name
        base, n = name, 2
        while name in seen:
            name, n = f"{base}-{n}", n + 1
        seen.add(name)
        out.append(b if name == b.name else _renamed(b, name))
    return out


def _version_key(item: tuple[str, Path]) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in item[0].split("."))
    except ValueError:
        return (9999,)
