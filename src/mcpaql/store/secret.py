"""The deployment secret kept in the shared store, for deployments that configure none.

Why: a cursor signed by one process must verify in every other process of the deployment. With
``--secret-file`` / ``MCPAQL_SECRET`` the operator chose the secret; without one, the first
process to start draws 256 random bits and records them in the store (``add``: create only if
absent, atomic in every backend), and every later process reads the same record, so all agree.
The record is never logged; it lives in namespace ``secret`` beside the safety state.

Rotation (:func:`rotate_shared_secret`): the new secret signs, the previous one still verifies
in processes started after the rotation (restart the processes to pick it up).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from .base import Store, open_store

NS_SECRET = "secret"
_KEY = "deployment"
KEEP_PREVIOUS = 1  # how many earlier secrets still verify after a rotation


def _keys(rec: dict[str, Any]) -> tuple[bytes, ...]:
    return tuple(str(k).encode() for k in [rec["current"], *rec.get("previous", [])])


async def shared_secret(store: Store) -> tuple[bytes, ...]:
    """The deployment's secrets in ``store`` (current first), created on first use."""
    rec = await store.get(NS_SECRET, _KEY)
    if rec is None:
        await store.add(NS_SECRET, _KEY, {"current": secrets.token_hex(32), "previous": []})
        rec = await store.get(NS_SECRET, _KEY)
    if rec is None or not isinstance(rec.get("current"), str):
        raise ConnectionError("the store did not keep the deployment secret")
    return _keys(rec)


async def rotate_shared_secret(store: Store) -> None:
    """Make a new current secret; the old one moves to ``previous`` (still verifies)."""
    while True:
        rec = await store.get(NS_SECRET, _KEY)
        if rec is None:
            await shared_secret(store)
            continue
        fresh = {"current": secrets.token_hex(32), "previous": [rec["current"], *rec.get("previous", [])][:KEEP_PREVIOUS]}
        if await store.cas(NS_SECRET, _KEY, {"current": rec["current"]}, fresh) is not None:
            return


def where(url: str) -> str:
    """``url`` without credentials (``redis://:pw@host`` → ``redis://host``), for messages."""
    return re.sub(r"^([a-z]+://)[^/@]*@", r"\1", url.split("?", 1)[0])


async def secret_from_store(url: str) -> tuple[bytes, ...]:
    """Open the store at ``url`` just long enough to read (or create) the deployment secret.
    Raises ``ConnectionError`` (one line naming the store without credentials) if it cannot,
    ``ValueError`` for an unsupported URL."""
    store = open_store(url)
    try:
        async with store:
            return await shared_secret(store)
    except Exception:  # redis-py's errors are not OSErrors; any failure means the same here
        raise ConnectionError(f"cannot read the deployment secret from the store at {where(url)}") from None
