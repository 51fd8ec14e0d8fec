"""Rendering a :class:`Report` as text (rich), JSON (CONF §6.1 shape) or Markdown."""

from __future__ import annotations

import io
import json
from typing import Any

from .model import CATEGORIES, Report, Status

FORMATS = ("text", "json", "markdown")
_STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.WARN: "yellow", Status.SKIP: "dim"}


def render(report: Report, fmt: str = "text", *, color: bool | None = None, width: int = 120) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "text":
        return render_text(report, color=color, width=width)
    raise ValueError(f"unknown format '{fmt}' (use one of: {', '.join(FORMATS)})")


def _evidence_lines(r: Any, limit: int = 2) -> list[str]:
    out = []
    for ex in r.evidence[:limit]:
        d = ex.to_dict()
        out.append(f"request  {d['tool']}: {json.dumps(d['arguments'], ensure_ascii=False)[:300]}")
        out.append(f"response {json.dumps(d['response'], ensure_ascii=False)[:300]}")
    return out


def render_text(report: Report, *, color: bool | None = None, width: int = 120) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=bool(color), no_color=not color, width=width, highlight=False)
    console.print(
        f"[bold]MCP-AQL conformance[/bold] — {escape(report.implementation)}"
        + (f" {escape(report.version)}" if report.version else "")
        + f"  ({escape(report.target)})"
    )
    console.print(
        f"Spec {escape(report.spec_version)} · requested Level {report.requested_level} · "
        f"modes: {', '.join(report.modes) or 'none'} · tools: {len(report.tools)}"
        + (" · read-only" if report.read_only else "")
        + (" · network allowed" if report.allow_network else "")
    )
    if report.fatal:
        console.print(f"[bold red]FATAL[/bold red] {escape(report.fatal)}")
    for cat in CATEGORIES:
        rs = [r for r in report.results if r.category is cat]
        if not rs:
            continue
        st = report.category_status(cat)
        table = Table(
            title=f"{cat.name} [{'MUST' if cat.required else 'SHOULD'}] → {st.value if st else 'SKIP'}",
            title_justify="left",
            show_header=False,
            box=None,
            pad_edge=False,
            expand=False,
        )
        table.add_column("result", width=5, no_wrap=True)
        table.add_column("id", width=6, no_wrap=True)
        table.add_column("check")
        for r in rs:
            body = f"{escape(r.name)}  [dim]({escape(', '.join(r.checklist))})[/dim]"
            if r.status is not Status.PASS or r.message:
                body += f"\n[dim]{escape(r.message)}[/dim]" if r.status is Status.PASS else f"\n{escape(r.message)}"
            if r.status is not Status.PASS:
                for line in _evidence_lines(r):
                    body += f"\n[dim]  {escape(line)}[/dim]"
            for line in r.upstream_rejected[:4]:
                body += f"\n[cyan]  upstream rejected probe[/cyan] [dim]{escape(line)}[/dim]"
            table.add_row(f"[{_STYLE[r.status]}]{r.status.value}[/]", r.id, body)
        console.print()
        console.print(table)
    for n in report.notes:
        console.print(f"[yellow]note[/yellow] {escape(n)}")
    console.print()
    style = "bold green" if report.met else "bold red"
    console.print(f"[{style}]{escape(report.summary_line())}[/{style}]")
    return buf.getvalue()


def render_markdown(report: Report) -> str:
    s = report.summary()
    lines = [
        "# MCP-AQL Conformance Report",
        "",
        f"- Implementation: `{report.implementation}`" + (f" `{report.version}`" if report.version else ""),
        f"- Target: `{report.target}`",
        f"- Spec version: `{report.spec_version}`",
        f"- Requested level: `{report.requested_level}` · Conformance level: `{report.achieved_level}` · "
        f"{'**met**' if report.met else '**not met**'}",
        f"- Modes: {', '.join(report.modes) or 'none'}" + (" · read-only run" if report.read_only else ""),
        f"- Summary: {s['passed']} passed, {s['warned']} warned, {s['failed']} failed, {s['skipped']} skipped",
        "",
    ]
    if report.fatal:
        lines += [f"> **Fatal:** {report.fatal}", ""]
    for cat in CATEGORIES:
        rs = [r for r in report.results if r.category is cat]
        if not rs:
            continue
        st = report.category_status(cat)
        lines += [
            f"## {cat.name} ({'MUST' if cat.required else 'SHOULD'}) — {st.value if st else 'SKIP'}",
            "",
            "| Result | ID | Check | Checklist | Detail |",
            "|---|---|---|---|---|",
        ]
        for r in rs:
            detail = r.message.replace("|", "\\|").replace("\n", " ")
            if r.upstream_rejected:
                detail += " — upstream rejected probe: " + "; ".join(r.upstream_rejected[:4]).replace("|", "\\|")
            lines.append(f"| {r.status.value} | {r.id} | {r.name} | {', '.join(r.checklist)} | {detail} |")
        lines.append("")
        for r in rs:
            if r.status is not Status.PASS and r.evidence:
                lines += [
                    f"<details><summary>{r.id} evidence</summary>",
                    "",
                    "```json",
                    json.dumps([e.to_dict() for e in r.evidence[:3]], indent=2, ensure_ascii=False)[:4000],
                    "```",
                    "",
                    "</details>",
                    "",
                ]
    if report.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    lines += [f"**{report.summary_line()}**", ""]
    return "\n".join(lines)
