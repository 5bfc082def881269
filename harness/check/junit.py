"""``check --junit FILE``: the results as JUnit XML, for CI (GitLab shows
each scenario run as a test case).

One ``<testsuite>`` per build; each run is a ``<testcase>`` named
``scenario[machine]`` in class ``sdqtest.<build>.<group>``: a divergence,
spec miss or error is a ``<failure>``, a crash an ``<error>``, a skip a
``<skipped>`` with its reason, and so is a run the build cannot start
(``cannot run on this build: <QEMU's words>``); a run that ended on an
internal error of sdqtest is an ``<error>`` of type ``internal-error``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.check.runner import CANNOT_RUN, CRASH, DIVERGE, ERROR, SKIP, SPEC_MISS, Result


def to_xml(results: list[Result], name: str = "sdqtest check") -> ET.Element:
    """The ``<testsuites>`` element of ``results``."""
    root = ET.Element("testsuites", name=name)
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.build, []).append(r)
    for build, rs in by.items():
        suite = ET.SubElement(root, "testsuite", name=f"sdqtest {build}", tests=str(len(rs)),
                              failures=str(sum(r.status in (DIVERGE, ERROR, SPEC_MISS)
                                               and not r.internal for r in rs)),
                              errors=str(sum(r.status == CRASH or r.internal for r in rs)),
                              skipped=str(sum(r.status in (SKIP, CANNOT_RUN) for r in rs)),
                              time=f"{sum(r.seconds for r in rs):.3f}")
        for r in rs:
            case = ET.SubElement(suite, "testcase", classname=f"sdqtest.{build}.{r.group}",
                                 name=f"{r.scenario}[{r.machine}]", time=f"{r.seconds:.3f}")
            detail = r.divergence.render() if r.divergence else r.reason
            if r.divergence and r.divergence.trace_file:
                detail += f"\nreproducer: {r.divergence.trace_file}"
            if r.status in (SKIP, CANNOT_RUN):
                ET.SubElement(case, "skipped", message=r.reason)
            elif r.internal:
                ET.SubElement(case, "error", message=r.reason, type="internal-error").text = \
                    "\n".join([detail, *r.notes[:1]])
            elif r.status == CRASH:
                ET.SubElement(case, "error", message=r.reason, type=r.status).text = detail
            elif r.status in (DIVERGE, ERROR, SPEC_MISS):
                ET.SubElement(case, "failure", message=r.reason.splitlines()[0] if r.reason
                              else r.status, type=r.status).text = detail
    return root


def write(results: list[Result], path: Path) -> None:
    tree = ET.ElementTree(to_xml(results))
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
