"""Which QEMU builds there are, and what each can do, detected from the binary.

A build is named either by an installed name (``7.2``, ``10.0``, ``11.1``:
see :mod:`harness.qemu.install`) or by a path.  ``QTEST_QEMU_BINARY``, as in
QEMU's own qtests, names the build to use when none is given.  Capabilities
come from QMP (``query-version``, ``query-machines``,
``device-list-properties``) and from an accelerator probe, never from the
version number; they are cached per binary (path, size, mtime).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import SdqtestError
from harness.profile import BuildProfile, parse_version
from harness.qemu.session import QemuError, QemuSession


class BuildError(SdqtestError):
    """A build cannot be found or cannot run what the suite needs."""


@dataclass(frozen=True)
class QemuBuild:
    """A QEMU binary and what it offers."""

    name: str
    binary: Path
    version: str = ""
    package: str = ""
    has_qtest_accel: bool = False
    machines: tuple[str, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    default_machine: str = ""
    sd_card_properties: dict[str, str | None] = field(default_factory=dict)
    sdhci_properties: dict[str, str | None] = field(default_factory=dict)
    has_sdhci_pci: bool = False

    @property
    def profile(self) -> BuildProfile:
        return BuildProfile(
            version=parse_version(self.version),
            machine_types=self.machines,
            sd_card_properties=self.sd_card_properties,
            sdhci_properties=self.sdhci_properties,
            has_qtest_accel=self.has_qtest_accel,
            package=self.package,
        )

    @property
    def has_erase_blocks_as_zero(self) -> bool:
        return "erase-blocks-as-zero" in self.sd_card_properties

    def versioned_machines(self, family: str) -> list[str]:
        """``pc-q35-*`` or ``pc-i440fx-*`` machine types, oldest first."""
        prefix = {"q35": "pc-q35-", "pc": "pc-i440fx-"}[family]
        found = [m for m in self.machines if re.fullmatch(re.escape(prefix) + r"\d+\.\d+", m)]
        return sorted(found, key=lambda m: tuple(int(x) for x in m[len(prefix):].split(".")))

    def digest(self) -> str:
        h = hashlib.sha256()
        with open(self.binary, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()


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


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_memo: dict[tuple[str, int, int], QemuBuild] = {}


def probe(binary: str | Path, name: str | None = None) -> QemuBuild:
    """Detect what ``binary`` offers, by running it (about 0.1 s).

    Not cached on disk: whether the qtest accelerator loads depends on
    module files beside the binary, which can change without it.
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
        _memo[key] = _probe_live(path, str(path))
    b = _memo[key]
    return b if name is None else _renamed(b, name)


def _probe_live(path: Path, name: str) -> QemuBuild:
    try:
        with QemuSession(path, machine="none", accel="auto", timeout=20) as s:
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
            accel = s.accel == "qtest"
    except QemuError as e:
        raise BuildError(f"cannot probe {path}: {e}") from e
    return QemuBuild(
        name=name,
        binary=path,
        version=version,
        package=str(v.get("package", "")).strip(),
        has_qtest_accel=accel,
        machines=tuple(sorted(machines)),
        aliases=aliases,
        default_machine=default,
        sd_card_properties=sd or {},
        sdhci_properties=host or {},
        has_sdhci_pci=host is not None and sd is not None,
    )


def _to_json(b: QemuBuild) -> dict[str, Any]:
    d = asdict(b)
    d["binary"] = str(b.binary)
    d["machines"] = list(b.machines)
    return d


def _from_json(d: dict[str, Any]) -> QemuBuild:
    d = dict(d)
    d["binary"] = Path(d["binary"])
    d["machines"] = tuple(d["machines"])
    return QemuBuild(**d)


def _renamed(b: QemuBuild, name: str) -> QemuBuild:
    d = _to_json(b)
    d["name"] = name
    return _from_json(d)


def installed() -> dict[str, Path]:
    """Installed builds by name -> binary, from the cache (nothing is run)."""
    from harness.qemu import install

    return {b.name: b.binary for b in install.installed_builds()}


def resolve(spec: str) -> QemuBuild:
    """A build from an installed name or a path to a binary."""
    inst = installed()
    if spec in inst:
        return probe(inst[spec], spec)
    if os.sep in spec or Path(spec).exists():
        return probe(spec)
    known = ", ".join(sorted(inst)) or "none installed"
    raise BuildError(
        f"unknown QEMU build {spec!r} (installed: {known}); "
        "give a path to a qemu-system-x86_64 or run 'sdqtest qemu install'"
    )


def selected(specs: list[str] | None = None) -> list[QemuBuild]:
    """The builds to use: ``specs`` if given, else ``$QTEST_QEMU_BINARY``,
    else every installed build."""
    if specs:
        found = [resolve(s) for s in specs]
    elif os.environ.get("QTEST_QEMU_BINARY"):
        found = [probe(os.environ["QTEST_QEMU_BINARY"])]
    else:
        found = [probe(p, n) for n, p in sorted(installed().items(), key=_version_key)]
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
