"""``python -m harness``: the ``sdqtest`` command, for running a checkout in place."""

import sys

from harness.cli import main

sys.exit(main())
