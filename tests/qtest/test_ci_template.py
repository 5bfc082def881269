"""``ci/gitlab/sdqtest.yml`` against QEMU's GitLab CI definitions.

The template extends QEMU's templates and needs QEMU's jobs, so it is read
together with QEMU's ``.gitlab-ci.yml`` and the files it includes from
``.gitlab-ci.d/`` (GitLab's ``include: local``), and checked as GitLab would
resolve it: every ``extends``, ``needs``, ``dependencies`` and ``!reference``
names a job or template that is defined; every job's stage is one of QEMU's
stages; every image is QEMU's registry image of a container that QEMU's
container jobs build (``tests/docker/dockerfiles/NAME.docker``); a check job
runs in the image its build job built in; and each emulator a check job
passes to ``sdqtest check --qemu`` is one its build job's ``--target-list``
builds, in the build directory, inside the build job's artifacts and not
excluded from them.  The check's command line is parsed by sdqtest's own
parser, and its JUnit and JSON files are among the job's artifacts.

QEMU's real files are read from a QEMU source tree unpacked in sdqtest's
cache (``sdqtest qemu build VERSION --fetch-only``); without one, those tests
skip and the same checks run on ``data/qemu-ci-outline.yml``, an outline of
the definitions the template relies on, which the tests compare with the
real files wherever both are present.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.commands import check as check_command
from harness.commands.common import parse_one
from harness.paths import cache_dir

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "ci" / "gitlab" / "sdqtest.yml"
OUTLINE = Path(__file__).resolve().parent / "data" / "qemu-ci-outline.yml"

#: Top-level keys of a GitLab CI file that are not jobs or templates.
GLOBAL_KEYS = {"include", "stages", "variables", "default", "workflow", "image", "services",
               "cache", "before_script", "after_script"}
#: ``$CI_PROJECT_DIR`` (where the job starts and artifact paths are relative to).
PROJECT_DIR = "/builds/qemu"
#: How QEMU's jobs name the image a container job built.
REGISTRY_IMAGE = re.compile(r"^\$CI_REGISTRY_IMAGE/qemu/(\$IMAGE|[\w.-]+):\$QEMU_CI_CONTAINER_TAG$")

Defs = dict[str, dict[str, Any]]


class Reference(list[str]):
    """GitLab's ``!reference [job, key, ...]``."""


class _Loader(yaml.SafeLoader):
    """YAML with GitLab's ``!reference`` tag."""


_Loader.add_constructor("!reference", lambda loader, node: Reference(
    loader.construct_sequence(node)))


def load(path: Path) -> dict[str, Any]:
    doc = yaml.load(path.read_text(), Loader=_Loader)
    assert isinstance(doc, dict), f"{path}: not a mapping"
    return doc


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def qemu_source() -> Path | None:
    """The newest QEMU source tree in the cache that has its CI files."""
    trees = sorted((cache_dir() / "source").glob("*/src/.gitlab-ci.yml"),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p.parts[-3])])
    return trees[-1].parent if trees else None


def qemu_ci(src: Path) -> tuple[Defs, list[str]]:
    """The jobs and templates of ``src``'s CI, and its stages, following
    ``include: local`` from ``.gitlab-ci.yml``."""
    defs: Defs = {}
    stages: list[str] = []
    todo, seen = ["/.gitlab-ci.yml"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        doc = load(src / name.lstrip("/"))
        for inc in _listed(doc.get("include")):
            local = inc if isinstance(inc, str) else inc.get("local")
            if local:
                todo.append(local)
        stages += [s for s in _listed(doc.get("stages")) if s not in stages]
        defs.update(definitions(doc))
    return defs, stages


def definitions(doc: dict[str, Any]) -> Defs:
    return {k: v for k, v in doc.items() if k not in GLOBAL_KEYS and isinstance(v, dict)}


def _merge(base: Any, over: Any) -> Any:
    """GitLab's ``extends`` merge: mappings deeply, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v)
        return out
    return over


def resolved(defs: Defs, name: str) -> dict[str, Any]:
    """Job ``name`` with what it extends merged in, as GitLab resolves it."""
    job = defs[name]
    out: dict[str, Any] = {}
    for parent in _listed(job.get("extends")):
        out = _merge(out, resolved(defs, parent))
    return dict(_merge(out, {k: v for k, v in job.items() if k != "extends"}))


def ancestry(defs: Defs, name: str) -> set[str]:
    return {name}.union(*(ancestry(defs, p) for p in _listed(defs[name].get("extends"))))


def _needed(job: dict[str, Any]) -> list[tuple[str, bool]]:
    """``(job, artifacts)`` of each ``needs`` entry (artifacts default true)."""
    return [(n, True) if isinstance(n, str) else (n["job"], n.get("artifacts", True))
            for n in _listed(job.get("needs"))]


def _references(value: Any) -> list[Reference]:
    if isinstance(value, Reference):
        return [value]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _references(v)]
    if isinstance(value, list):
        return [r for v in value for r in _references(v)]
    return []


def reference_problems(mine: Defs, defs: Defs) -> list[str]:
    """What the template's ``extends``, ``needs``, ``dependencies`` and
    ``!reference`` name that is not defined (or, for a job, is hidden)."""
    out = []
    for name, job in mine.items():
        out += [f"{name}: extends {p}: not defined" for p in _listed(job.get("extends"))
                if p not in defs]
        named = [n for n, _ in _needed(job)] + _listed(job.get("dependencies"))
        out += [f"{name}: needs {n}: no such job" for n in named
                if n not in defs or n.startswith(".")]
        out += [f"{name}: !reference {list(r)}: {r[0]} not defined" for r in _references(job)
                if r[0] not in defs]
    return out


def container_names(defs: Defs) -> dict[str, str]:
    """Container job -> the image name it builds (its ``NAME``; QEMU's job that
    starts the weekly rebuilds of every container has none)."""
    jobs = [n for n in defs
            if not n.startswith(".") and ".container_job_template" in ancestry(defs, n)]
    named = {n: resolved(defs, n).get("variables", {}).get("NAME") for n in jobs}
    return {n: str(name) for n, name in named.items() if name}


def image_of(job: dict[str, Any]) -> str | None:
    """The registry image name a resolved job runs in, or None if not QEMU's."""
    m = REGISTRY_IMAGE.match(str(job.get("image", "")))
    if m is None:
        return None
    return str(job.get("variables", {}).get("IMAGE")) if m.group(1) == "$IMAGE" else m.group(1)


def image_problems(name: str, job: dict[str, Any], defs: Defs,
                   dockerfiles: set[str] | None) -> list[str]:
    """Job ``name`` (resolved) runs in an image QEMU's container jobs build,
    the one its container job (if it needs one) builds, the one its build
    job (if it takes one's artifacts) ran in."""
    image, names = image_of(job), container_names(defs)
    if image is None:
        return [f"{name}: image {job.get('image')!r} is not QEMU's registry image"]
    out = []
    if image not in names.values():
        out.append(f"{name}: image {image}: no container job builds it")
    if dockerfiles is not None and image not in dockerfiles:
        out.append(f"{name}: image {image}: no tests/docker/dockerfiles/{image}.docker")
    for need, artifacts in _needed(job):
        if need in names and names[need] != image:
            out.append(f"{name}: runs in {image} but needs {need}, which builds {names[need]}")
        elif need in defs and artifacts and need not in names:
            built_in = image_of(resolved(defs, need))
            if built_in != image:
                out.append(f"{name}: runs in {image}, its build job {need} in {built_in}")
    return out


def expand(text: str, env: dict[str, str]) -> str:
    """Shell expansion of ``$V``, ``${V}``, ``${V:-default}`` and
    ``${V:+alternative}`` from ``env``."""
    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1) or m.group(4), "")
        if m.group(2) == "+":
            return expand(m.group(3), env) if value else ""
        return value or (m.group(3) or "")
    return re.sub(r"\$\{(\w+)(?::([-+])([^}]*))?\}|\$(\w+)", one, text)


def check_command_line(name: str, job: dict[str, Any]) -> list[str]:
    """The arguments after ``sdqtest check`` in job ``name``'s script, expanded
    as the job's shell would (one node of one, no node index)."""
    env = {k: str(v) for k, v in job.get("variables", {}).items()}
    env |= {"CI_JOB_NAME_SLUG": name, "CI_PROJECT_DIR": PROJECT_DIR}
    for line in _listed(job.get("script")):
        words = shlex.split(expand(str(line), env))
        if len(words) > 1 and words[0].endswith("/sdqtest") and words[1] == "check":
            return words[1:]
    raise AssertionError(f"{name}: no 'sdqtest check' line in its script")


def _in_artifacts(path: str, artifacts: dict[str, Any]) -> bool:
    path = path.removeprefix(PROJECT_DIR + "/")
    inside = any(path == a or path.startswith(a.rstrip("/") + "/") or fnmatch.fnmatch(path, a)
                 for a in _listed(artifacts.get("paths")))
    return inside and not any(fnmatch.fnmatch(path, x) for x in _listed(artifacts.get("exclude")))


def emulator_problems(name: str, binaries: list[str], build_name: str,
                      build: dict[str, Any]) -> list[str]:
    """Each emulator is built by ``build`` (its ``--target-list``), in its
    build directory, and is among its artifacts."""
    out = []
    targets = str(build.get("variables", {}).get("TARGETS", "")).split()
    script = [str(s) for s in _listed(build.get("script"))]
    for path in binaries:
        target = Path(path).name.removeprefix("qemu-system-")
        if f"{target}-softmmu" not in targets:
            out.append(f"{name}: --qemu {path}: {build_name} builds no {target}-softmmu")
        if f"cd {Path(path.removeprefix(PROJECT_DIR + '/')).parent}" not in script:
            out.append(f"{name}: --qemu {path}: not in {build_name}'s build directory")
        if not _in_artifacts(path, build.get("artifacts", {})):
            out.append(f"{name}: --qemu {path}: not among {build_name}'s artifacts")
    return out


def check_job_problems(name: str, job: dict[str, Any], defs: Defs) -> list[str]:
    """Job ``name`` (resolved) runs a check sdqtest parses, on emulators its
    build jobs' artifacts hold, and keeps its reports as artifacts."""
    args = parse_one(check_command.register, check_command_line(name, job))
    artifacts = job.get("artifacts", {})
    out = []
    builds = [n for n, artifacts_too in _needed(job) if artifacts_too and n in defs]
    if not builds:
        out.append(f"{name}: takes no build job's artifacts")
    for b in builds:
        out += emulator_problems(name, list(args.qemu or []), b, resolved(defs, b))
    junit = _listed(artifacts.get("reports", {}).get("junit"))
    if not args.junit or not any(fnmatch.fnmatch(args.junit, g) for g in junit):
        out.append(f"{name}: --junit {args.junit} is not its JUnit report ({junit})")
    for kept in (args.json, args.report_dir):
        if kept and not _in_artifacts(kept, {"paths": [
                p.rstrip("/") for p in _listed(artifacts.get("paths"))]}):
            out.append(f"{name}: {kept} is not among its artifacts")
    return out


def problems(template: dict[str, Any], qemu: Defs, stages: list[str],
             dockerfiles: set[str] | None = None) -> list[str]:
    """Everything in ``template`` that would not resolve in QEMU's pipeline."""
    mine = definitions(template)
    defs = qemu | mine
    out = reference_problems(mine, defs)
    if out:
        return out
    for name in (n for n in mine if not n.startswith(".")):
        job = resolved(defs, name)
        if job.get("stage") not in stages:
            out.append(f"{name}: stage {job.get('stage')!r} is not one of {stages}")
        out += image_problems(name, job, defs, dockerfiles)
        if "sdqtest" in str(job.get("script")) and job.get("stage") == "test":
            out += check_job_problems(name, job, defs)
    return out


def outline() -> tuple[Defs, list[str]]:
    doc = load(OUTLINE)
    return definitions(doc), list(doc["stages"])


def test_the_template_resolves_against_the_outline() -> None:
    defs, stages = outline()
    template = load(TEMPLATE)
    assert problems(template, defs, stages) == []
    jobs = [n for n in definitions(template) if not n.startswith(".")]
    assert {"build-sdqtest", "sdqtest-check-pc", "sdqtest-check-boards"} <= set(jobs)


def _variant(edit: str) -> dict[str, Any]:
    """The template with one job's fields replaced (``job: {yaml}``)."""
    template = load(TEMPLATE)
    job, _, body = edit.partition(":")
    template[job] = _merge(template[job], yaml.safe_load(body))
    return template


@pytest.mark.parametrize("edit, found", [
    ("sdqtest-check-pc: {needs: [{job: build-system-debian}]}",
     "build-system-debian builds no x86_64-softmmu"),
    ("sdqtest-check-pc: {extends: .sdqtest_check_job}", "extends .sdqtest_check_job"),
    ("sdqtest-check-pc: {needs: [build-system-x86]}", "needs build-system-x86: no such job"),
    ("sdqtest-check-pc: {dependencies: [.sdqtest_build_job_template]}",
     "needs .sdqtest_build_job_template"),
    ("build-sdqtest: {variables: {IMAGE: ubuntu2404}}", "image ubuntu2404: no container job"),
    ("sdqtest-check-pc: {image: 'debian:bookworm'}", "is not QEMU's registry image"),
    ("sdqtest-check-pc: {variables: {SDQTEST_ARGS: --qemu qemu-system-x86_64}}",
     "not in build-sdqtest's build directory"),
    ("build-sdqtest: {artifacts: {exclude: [build/qemu-system-*]}}",
     "not among build-sdqtest's artifacts"),
    ("sdqtest-check-boards: {variables: {IMAGE: alpine}}", "image alpine: no container job"),
    ("sdqtest-check-pc: {artifacts: {reports: {junit: junit.xml}}}", "is not its JUnit report"),
    ("sdqtest-check-pc: {stage: check}", "stage 'check'"),
])
def test_the_checks_find_what_would_not_resolve(edit: str, found: str) -> None:
    defs, stages = outline()
    assert any(found in p for p in problems(_variant(edit), defs, stages)), found


def test_a_check_job_runs_in_its_build_jobs_image() -> None:
    defs, stages = outline()
    defs["amd64-alpine-container"] = {"extends": ".container_job_template",
                                      "variables": {"NAME": "alpine"}}
    found = problems(_variant("sdqtest-check-pc: {variables: {IMAGE: alpine}}"), defs, stages)
    assert found == ["sdqtest-check-pc: runs in alpine, its build job build-sdqtest in debian"]


def test_a_check_line_sdqtest_refuses_is_found() -> None:
    defs, stages = outline()
    with pytest.raises(SystemExit):
        problems(_variant("sdqtest-check-pc: {variables: {SDQTEST_ARGS: --qemu-binary x}}"),
                 defs, stages)


def _real() -> Path:
    src = qemu_source()
    if src is None:
        pytest.skip(f"no QEMU source tree with its CI files in {cache_dir() / 'source'} "
                    "(sdqtest qemu build VERSION --fetch-only): checked on the outline only")
    return src


def test_the_template_resolves_against_qemus_ci() -> None:
    src = _real()
    defs, stages = qemu_ci(src)
    dockerfiles = {p.name.removesuffix(".docker")
                   for p in (src / "tests" / "docker" / "dockerfiles").glob("*.docker")}
    assert len(defs) > 50, f"{src}: too few jobs read ({len(defs)}): includes not followed?"
    assert problems(load(TEMPLATE), defs, stages, dockerfiles) == []


def test_the_outline_agrees_with_qemus_ci() -> None:
    """Each definition of the outline is in QEMU's files, extending what it
    extends, with the same stage, image, needs, artifact paths and variables; the build
    directory the outline's build template enters is QEMU's."""
    defs, stages = qemu_ci(_real())
    mine, my_stages = outline()
    assert [s for s in stages if s in my_stages] == my_stages
    for name, job in mine.items():
        assert name in defs, f"{name}: not in QEMU's CI"
        real = defs[name]
        assert set(_listed(job.get("extends"))) <= ancestry(defs, name), f"{name}: extends"
        for key in ("stage", "image", "needs"):
            assert key not in job or job[key] == real.get(key), f"{name}: {key}"
        for key, listed in job.get("artifacts", {}).items():
            assert set(listed) <= set(real["artifacts"][key]), f"{name}: artifacts {key}"
        assert job.get("variables", {}).items() <= real.get("variables", {}).items(), name
        script = [str(s) for s in _listed(real.get("script"))]
        for line in _listed(job.get("script")):
            assert line in script or "--target-list=\"$TARGETS\"" in line and any(
                "--target-list=\"$TARGETS\"" in s for s in script), f"{name}: {line}"


def test_no_qemu_job_keeps_the_three_emulators() -> None:
    """The reason docs/ci.md gives for a build job of its own: no job of
    QEMU's pipeline keeps x86_64, aarch64 and riscv64 emulators as artifacts
    (were there one, the check jobs could take its artifacts instead)."""
    defs, _ = qemu_ci(_real())
    needed = {"x86_64-softmmu", "aarch64-softmmu", "riscv64-softmmu"}
    building = {n for n in defs if not n.startswith(".") and needed <= set(
        str(resolved(defs, n).get("variables", {}).get("TARGETS", "")).split())}
    assert "build-some-softmmu" in building  # builds them, ...
    keeping = sorted(n for n in building
                     if _in_artifacts("build/qemu-system-x86_64",
                                      resolved(defs, n).get("artifacts", {})))
    assert keeping == [], f"{keeping} keep the three emulators: use their artifacts"
