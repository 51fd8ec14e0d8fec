"""The human channel of a served safety loop (issue: "a human channel on by default wherever
the loop is on").

An enforcing loop pauses and blocks agents until a human reads a code the agent never sees.
Without a channel a blocked agent stays blocked for ever, so every process serving the loop
(``mcpaql serve|wrap|openapi --safety-loop …`` and ``mcpaql guard``) opens one at start:

* by default the local approval page (:class:`~.approval.ApprovalPage`) in-process, on
  loopback, on a random port (``port``) — its URL carries a per-start admin key, so it is
  written to an owner-only file (``url_file``, default ``~/.mcpaql/approval-url``) and never
  printed: MCP clients often show a server's stderr to the model;
* with ``page=False`` nothing listens here, and the start line says where codes go instead
  (the store the operator can open with ``mcpaql guard``, a webhook, the OS dialog). A
  throw-away in-memory store with no other channel leaves no way to approve anything, so that
  combination is refused at start.

Either way the process says so in **one line on stderr** (:func:`start_line`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..config import settings
from .approval import ApprovalPage, ApprovalPageError
from .install import Safety, SafetyConfig

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class ChannelError(Exception):
    """A human channel that cannot be opened; the message is one line for the operator."""


@dataclass(frozen=True)
class ChannelOptions:
    page: bool = True
    host: str = "127.0.0.1"
    port: int = 0
    url_file: Path | None = None


def wants_channel(config: SafetyConfig | None) -> bool:
    """Whether a loop is served that can pause or block agents."""
    return config is not None and config.loop_mode not in (None, "disabled")


def default_url_file() -> Path:
    return settings().home / "approval-url"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only: the directory is created 0700,
    the file is (re)created 0600 whatever its old mode, and a symlink in its place is refused."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text + "\n")


def redact_store(url: str | None) -> str:
    """The store URL as the operator may see it: credentials (``redis://:pw@host``) removed."""
    if not url:
        return "sqlite:// (the default file ~/.mcpaql/safety.db)"
    return re.sub(r"//[^/@]*@", "//", url)


def _is_private_store(url: str | None) -> bool:
    return bool(url) and ":memory:" in str(url)


def start_line(config: SafetyConfig, *, page_origin: str | None, url_file: Path | None) -> str:
    """The one stderr line saying where approvals go (never the admin key)."""
    mode = config.loop_mode
    extra = []
    if config.webhook_url:
        extra.append("a webhook")
    if config.os_dialog:
        extra.append("an OS dialog")
    also = f" (codes also go to {' and '.join(extra)})" if extra else ""
    if page_origin is not None:
        return (
            f"mcpaql: safety loop {mode}: approvals at {page_origin} — open the URL with its key from "
            f"{url_file} (owner-only){also}"
        )
    store = redact_store(config.store)
    return (
        f"mcpaql: safety loop {mode}: no approval page; challenge codes wait in {store} — "
        f"see them with: mcpaql guard --store {store} --transport http{also}"
    )


@contextlib.asynccontextmanager
async def human_channel(safety: Safety, options: ChannelOptions, announce: Callable[[str], None]) -> AsyncIterator[str | None]:
    """Open the channel for ``safety`` for the duration of the block; yields the page's keyed
    URL (or None without a page). Raises :class:`ChannelError` for a channel that cannot work."""
    config = safety.config
    if not options.page:
        if _is_private_store(config.store) and not (config.webhook_url or config.os_dialog):
            raise ChannelError(
                "the safety loop needs a human channel: with --no-approval-page, use a shared "
                "store (not :memory:), --webhook or the OS dialog"
            )
        announce(start_line(config, page_origin=None, url_file=None))
        yield None
        return
    if options.host not in LOOPBACK:
        raise ChannelError(f"the approval page binds to loopback only (127.0.0.1, ::1, localhost), not {options.host}")
    page = ApprovalPage(safety.challenges, safety.loop, host=options.host, port=options.port)
    try:
        url = await page.start()
    except ApprovalPageError as e:
        raise ChannelError(str(e)) from None
    try:
        target = options.url_file or default_url_file()
        try:
            write_private(target, url)
        except OSError as e:
            raise ChannelError(f"cannot write the approval URL file {target}: {e.strerror or e}") from None
        announce(start_line(config, page_origin=page.origin + "/", url_file=target))
        safety.challenges.link_origin = page.origin  # per-challenge links for URL-mode elicitation
        yield url
    finally:
        safety.challenges.link_origin = None
        with anyio.CancelScope(shield=True):
            await page.stop()
