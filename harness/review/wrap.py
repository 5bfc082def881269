"""A QEMU binary with extra options: a two-line shell wrapper.

The direct comparison needs both QEMUs to draw the same "random" values (the
RCA since QEMU 9.1 comes from ``qemu_guest_getrandom``): every launch has the
same ``-seed`` (:data:`harness.qemu.argv.SEED`; a second ``-seed`` would
trip an assertion in QEMU's ``qemu_guest_random_seed_thread_part2``).  A
property the model does not know is set for every card with ``-global
sd-card.PROP=VALUE``, which the model never sees.  A wrapper is an
executable file, so every part of the harness that takes a binary (check,
pools, reproducers) takes it unchanged.

The wrapper names the wrapped binary's contents (its answers-cache build
id, :func:`harness.qemu.answers.build_id`) in a comment: what a build
answers about itself is kept by the contents of the file run, here the
wrapper's, so a binary rebuilt in place gets a new wrapper text and is
asked again (a wrapper that stayed the same text kept the old build's
properties and machine types).
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Sequence
from pathlib import Path

from harness.qemu import answers


def wrapper(binary: Path, options: Sequence[str], directory: Path) -> Path:
    """An executable in ``directory`` that runs ``binary`` with ``options``
    first; the same binary (contents) and options give the same file."""
    if not options:
        return binary
    key = hashlib.sha256("\0".join([str(binary), *options]).encode()).hexdigest()[:12]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"qemu-{key}"
    text = ("#!/bin/sh\n# sdqtest review: " + " ".join(shlex.quote(o) for o in options) + "\n"
            f"# wrapped build: {answers.build_id(binary)}\n"
            f"exec {shlex.quote(str(binary))} "
            + " ".join(shlex.quote(o) for o in options) + ' "$@"\n')
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(path)
    return path


def seeded(binary: Path, directory: Path, globals_: Sequence[str] = ()) -> Path:
    """``binary`` as a direct comparison runs it: with ``-global`` options
    (``DEV.PROP=VALUE``), if any; the seed is every launch's."""
    return wrapper(binary, _global_options(globals_), directory)


def with_globals(binary: Path, globals_: Sequence[str], directory: Path) -> Path:
    """``binary`` with ``-global`` options only (the model check's side)."""
    return wrapper(binary, _global_options(globals_), directory)


def _global_options(globals_: Sequence[str]) -> list[str]:
    return [opt for g in globals_ for opt in ("-global", g)]
