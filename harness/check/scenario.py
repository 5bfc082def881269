"""Moved: the scenario registry lives in the scenarios layer now.

Use :mod:`harness.scenarios` (``all_scenarios``, ``select``, ``Scenario``,
``Context``) and, inside scenario modules, :mod:`harness.scenarios.registry`.
This re-export keeps branches written before the move importing; remove it
once they are merged.
"""

from __future__ import annotations

from harness.scenarios import REGISTRY as REGISTRY
from harness.scenarios import Context as Context
from harness.scenarios import Requirement as Requirement
from harness.scenarios import Scenario as Scenario
from harness.scenarios import all_scenarios as all_scenarios
from harness.scenarios import has_property as has_property
from harness.scenarios import scenario as scenario
from harness.scenarios import select as select
from harness.scenarios.registry import add as add
