"""Signal dispositions a test sets for the processes it starts."""

from __future__ import annotations

import signal
from collections.abc import Callable


def inherit(disposition: signal.Handlers) -> Callable[[], None]:
    """A ``preexec_fn`` giving the child SIGINT, SIGTERM and SIGHUP set to
    ``disposition``: what a test depends on is set here, not inherited from
    however pytest was started (``cmd &`` ignores SIGINT, ``nohup`` SIGHUP)."""
    def child() -> None:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, disposition)
    return child
