"""The live conformance suite: connect to any MCP-AQL server over MCP, drive it using only
its introspection, and grade it against the spec's conformance levels.

    report = await run_conformance("http://127.0.0.1:8000/mcp", level=2)
    print(render(report, "text")); write_evidence(report, "evidence.json")
    sys.exit(report.exit_code)

``target`` is a URL (streamable HTTP), a command line (string or argv list) for stdio, or an
already-open connection object with ``list_tools_raw()`` and ``call_tool()`` (see
:class:`mcpaql.mcp.Connection`). The suite never changes data it did not create, and sends
no address that is not loopback unless ``allow_network=True`` (docs/conformance.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .evidence import build_bundle, clean_envelope, write_evidence
from .grade import Grade, grade_bundle, grade_file
from .model import CATEGORIES, ROUND_TRIP, Category, CheckResult, Exchange, Report, Status
from .render import FORMATS, render
from .schemas import Validators, default_schema_dir
from .suite import Suite

__all__ = [
    "CATEGORIES",
    "FORMATS",
    "Category",
    "CheckResult",
    "Exchange",
    "Grade",
    "Report",
    "Status",
    "Validators",
    "build_bundle",
    "clean_envelope",
    "default_schema_dir",
    "grade_bundle",
    "grade_cli",
    "grade_file",
    "render",
    "run_cli",
    "run_conformance",
    "write_evidence",
]


async def run_conformance(
    target: str | Sequence[str] | Any,
    *,
    level: int = 2,
    read_only: bool = False,
    schemas: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    use_schemas: bool = True,
    allow_network: bool = False,
) -> Report:
    """Run the suite against ``target`` and return the :class:`Report` (with its evidence bundle).

    ``schemas`` is the directory holding the spec's JSON Schemas (default: ``MCPAQL_SPEC_SCHEMAS``
    or ``../shared/spec/schemas``); without them structural checks are used and schema
    validation is reported as SKIP. ``env``/``headers`` go to the stdio process / HTTP requests.
    ``allow_network`` lets calls carry non-loopback addresses (and open-world tools be called
    with an address), which a server like a URL fetcher needs to be tested fully.
    """
    if level not in (1, 2):
        raise ValueError("level must be 1 or 2")
    validators = Validators(schemas, use_schemas=use_schemas)
    if hasattr(target, "call_tool") and hasattr(target, "list_tools_raw"):
        report = Report(
            target=str(getattr(target, "spec", "connection")),
            requested_level=level,
            read_only=read_only,
            allow_network=allow_network,
        )
        await _run(target, report, level, read_only, validators, allow_network)
        return report
    from ..mcp.client import connect, parse_server_spec

    spec = parse_server_spec(target)
    report = Report(target=str(spec), requested_level=level, read_only=read_only, allow_network=allow_network)
    try:
        async with connect(spec, env=env, headers=headers) as conn:
            await _run(conn, report, level, read_only, validators, allow_network)
    except Exception as e:
        if not report.results and report.fatal is None:
            report.fatal = f"could not connect to {spec}: {type(e).__name__}: {e}"
        elif report.fatal is None:
            report.notes.append(f"connection error after the run: {type(e).__name__}: {e}")
        if not report.evidence_bundle:
            report.evidence_bundle = build_bundle(report, {})
    return report


def run_cli(
    target: str | Sequence[str],
    *,
    level: int = 2,
    fmt: str = "text",
    evidence: str | os.PathLike[str] | None = None,
    read_only: bool = False,
    color: bool | None = None,
    inherit_env: bool = True,
    allow_network: bool = False,
) -> tuple[str, int]:
    """Everything ``mcpaql conformance SERVER [--level] [--format] [--evidence] [--read-only]
    [--allow-network]`` does:
    run, render, write the evidence bundle; returns ``(output, exit_code)``.

    Exit codes: 0 requested level met, 1 a MUST check failed, 2 Level 1 met but Level 2 was
    requested and not met, 3 the server could not be reached or has no MCP-AQL tools.
    A stdio server inherits this process's environment (``inherit_env``), like a shell would.
    """
    import anyio

    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}' (use one of: {', '.join(FORMATS)})")
    env = dict(os.environ) if inherit_env else None
    report = anyio.run(lambda: run_conformance(target, level=level, read_only=read_only, env=env, allow_network=allow_network))
    if evidence is not None:
        write_evidence(report, evidence)
    return render(report, fmt, color=color), report.exit_code


def grade_cli(
    evidence: str | os.PathLike[str], *, level: int = 2, fmt: str = "text", schemas: str | os.PathLike[str] | None = None
) -> tuple[str, int]:
    """``mcpaql conformance grade EVIDENCE``: grade an evidence file as the spec's runner does
    (``test EVIDENCE --level N --tier 1``); returns ``(output, exit_code)`` with the runner's exit
    codes (0 met, 1 a MUST category failed, 2 a SHOULD category warned, 3 unreadable input)."""
    import json

    directory = schemas if schemas is not None else default_schema_dir()
    if directory is None:
        return "cannot grade: the spec's JSON schemas were not found (set MCPAQL_SPEC_SCHEMAS)", 3
    try:
        grade = grade_file(evidence, level, directory)
    except ValueError as e:
        return str(e), 3
    if fmt == "json":
        return json.dumps(grade.to_dict(), indent=2, ensure_ascii=False), grade.exit_code
    return grade.render_text(), grade.exit_code


async def _run(
    conn: Any, report: Report, level: int, read_only: bool, validators: Validators, allow_network: bool = False
) -> None:
    info = getattr(conn, "server_info", None)
    if info is not None:
        report.implementation = getattr(info, "name", None) or report.implementation
        report.version = getattr(info, "version", None)
    suite = Suite(conn, report, level=level, read_only=read_only, validators=validators, allow_network=allow_network)
    try:
        await suite.run()
    finally:
        if level < 2:
            report.results = [r for r in report.results if r.category.level <= 1]
        order = {c.key: i for i, c in enumerate(CATEGORIES)}
        report.results.sort(key=lambda r: (order[r.category.key], int(r.id.rsplit("-", 1)[1])))
        report.exchanges = suite.exchanges
        if suite.held_back:
            report.notes.append(
                f"{len(suite.held_back)} call(s) not made because they would reach the network "
                f"(run with --allow-network to make them): {'; '.join(suite.held_back[:6])}"
            )
        report.evidence_bundle = build_bundle(report, suite.bundle)
        if validators.directory is not None:
            apply_runner_grade(report, grade_bundle(report.evidence_bundle, level, validators.directory))
        report.unverified = unverified_reasons(report)


def apply_runner_grade(report: Report, grade: Grade) -> None:
    """Fold the spec runner's verdict on the evidence into the report: each runner test that
    fails (or warns in a SHOULD category) becomes a result in the category of the same name, so
    ``mcpaql conformance`` never says MET where ``run-conformance-tests.mjs`` fails."""
    report.runner = grade
    by_name = {c.name: c for c in CATEGORIES}
    n = 0
    for cat in grade.categories:
        target = by_name.get(cat.name)
        if target is None or (target.level > report.requested_level):
            continue
        for t in cat.tests:
            if t.result == "FAIL" or (t.result == "WARN" and not cat.required):
                n += 1
                # the runner's category result: a failing test fails a MUST category, warns a SHOULD one
                status = Status.FAIL if t.result == "FAIL" and cat.required else Status.WARN
                report.results.append(
                    CheckResult(f"RUNNER-{n}", f"Spec runner: {t.name}", target, status, ("REQ-CONF-001",), t.detail)
                )


def unverified_reasons(report: Report) -> list[str]:
    """Why the round trip (a MUST category) was not exercised: a read-only run, no deletable
    element type, records already present… — the verdict then says UNVERIFIED, not MET."""
    return sorted(
        {
            f"{r.id} not run: {r.message}"
            for r in report.results
            if r.category is ROUND_TRIP and r.status is Status.SKIP and r.id in ("RT-1", "RT-2")
        }
    )
