"""``python -m harness.bisect bisect|bisect-run ...`` (same as ``sdqtest bisect...``)."""

import sys

from harness.bisect.cli import main

sys.exit(main())
