"""Issue 11, secrets at rest: the store holds salted hashes of out-of-band codes and confirmation
tokens, never the values — checked on the raw bytes (SQLite file, WAL and SHM; every Redis key
through ``DUMP`` and a typed read) after a session that issues, redeems, burns and leaves
pending many of both. The SQLite store is created owner-only and refused when open to others."""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from safety_support import Harness, make_adapter

from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.safety.verification import DisplayChannel, normalize_code
from mcpaql.store.sqlite import InsecureStoreError, SQLiteStore

pytestmark = pytest.mark.anyio

AUTONOMY = {"deny": ["drop_*"], "requires_approval": ["delete_*"]}


class Captured(DisplayChannel):
    """The human's side of the channel: every code shown."""

    def __init__(self) -> None:
        self.codes: dict[str, str] = {}

    async def show(self, challenge: dict[str, Any]) -> None:
        self.codes[challenge["id"]] = challenge["code"]


def forms(secret: str) -> set[str]:
    """Every spelling of a secret worth looking for in raw bytes."""
    out = {secret}
    if not secret.startswith(("conf_", "quota_continue_")):
        norm = normalize_code(secret)
        out |= {norm, norm.lower(), secret.lower()}
    else:
        out.add(secret[-43:])  # the secret half of a token alone
    return out


async def exercise(store: Any, caplog: pytest.LogCaptureFixture) -> tuple[Harness, list[str], list[str], str]:
    """Issue, redeem, burn and leave pending tokens and codes for three identities."""
    caplog.set_level(logging.DEBUG)
    shown = Captured()
    app = make_adapter()
    safety = install_safety(
        app, SafetyConfig(trust="validated", loop_mode="enforcing", autonomy=AUTONOMY), store=store, channels=[shown]
    )
    h = Harness(app, safety)
    tokens: list[str] = []
    responses: list[dict[str, Any]] = []

    async def call(op: str, session: Any, **params: Any) -> dict[str, Any]:
        env = await h.call(op, session=session, **params)
        responses.append(env)
        conf = (env.get("error") or {}).get("details", {}).get("confirmation_token")
        if conf:
            tokens.append(conf)
        return env

    for who in ("alpha", "beta", "gamma"):
        s = h.as_(who)
        for i in range(3):
            await call("delete_task", s, task_id=f"{who}{i}")
        await call("delete_task", s, task_id=f"{who}0", _confirmation=tokens[-3])  # redeemed
        await call("delete_task", s, task_id=f"{who}0", _confirmation=tokens[-3])  # replayed
        await call("execute_agent", s, element_name=who)
        d = (await call("record_execution_step", s, element_name=who, next_action_hint="delete_user 1"))["data"]
        if who == "alpha":  # confirm with the human's code
            cid = next(n["metadata"]["verificationId"] for n in d["notifications"] if n["type"] == "autonomy_pause")
            await call("confirm_operation", s, challenge_id=cid, code=shown.codes[cid])
            d = (await call("record_execution_step", s, element_name=who, next_action_hint="drop_table x"))["data"]
            cid = next(n["metadata"]["verificationId"] for n in d["notifications"] if n["type"] == "danger_zone")
            await call("verify_challenge", s, challenge_id=cid, code="WRONG-CODE")  # burns it
            d = (await call("record_execution_step", s, element_name=who, next_action_hint="read_file x"))["data"]
            cid = next(n["metadata"]["verificationId"] for n in d["notifications"] if n["type"] == "danger_zone")
            await call("verify_challenge", s, challenge_id=cid, code=shown.codes[cid])
        await s.close()  # session-bound tokens are revoked (deleted) here
    persisted = build_persisted(store)
    env = await persisted.call("delete_task", session=persisted.as_("delta", per_request=True), task_id="p1")
    tokens.append(env["error"]["details"]["confirmation_token"])  # identity-bound, still pending
    assert len(shown.codes) >= 5 and len(tokens) == 10
    codes = list(shown.codes.values())
    assert_absent(json.dumps(responses), codes, [])  # a response carries the caller's own token, never a code
    logged = json.dumps(await store.read_audit()) + "\n".join(f"{r.getMessage()} {r.args}" for r in caplog.records)
    assert any(r.name == "mcpaql.audit" for r in caplog.records)
    return h, codes, tokens, logged


def build_persisted(store: Any) -> Harness:
    app = make_adapter()
    return Harness(app, install_safety(app, SafetyConfig(trust="validated", persist_tokens=True), store=store))


def assert_absent(blob: bytes | str, codes: list[str], tokens: list[str]) -> int:
    text = blob if isinstance(blob, str) else blob.decode("latin-1")
    hits = [f for secret in codes + tokens for f in forms(secret) if f in text]
    assert hits == []
    return len(text)


async def test_sqlite_bytes_hold_no_code_or_token(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SQLiteStore(tmp_path / "safety.db")
    try:
        _h, codes, tokens, visible = await exercise(store, caplog)
        assert_absent(visible, codes, tokens)  # nor any audit entry or log record
        files = [p for p in tmp_path.iterdir() if p.name.startswith("safety.db")]
        assert {p.name for p in files} >= {"safety.db"}
        size = sum(assert_absent(p.read_bytes(), codes, tokens) for p in files)
        assert size > 4096
        for p in files:  # -wal and -shm get the database's owner-only mode
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    finally:
        await store.close()


async def test_redis_keys_and_values_hold_no_code_or_token(redis_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    import redis.asyncio as aioredis

    from mcpaql.store.redis import RedisStore

    prefix = "secrets" + os.urandom(4).hex()
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    raw = aioredis.from_url(redis_server.url)
    try:
        _h, codes, tokens, visible = await exercise(store, caplog)
        assert_absent(visible, codes, tokens)
        keys = [k async for k in raw.scan_iter(match=f"{prefix}:*")]
        assert any(b":r:token:" in k for k in keys) and any(b":r:challenge:" in k for k in keys)
        blobs = []
        for k in keys:
            blobs.append(k)
            blobs.append(await raw.dump(k) or b"")
            kind = (await raw.type(k)).decode()
            if kind == "string":
                blobs.append(await raw.get(k) or b"")
            elif kind == "set":
                blobs.extend(await raw.smembers(k))
            elif kind == "list":
                blobs.extend(await raw.lrange(k, 0, -1))
        assert assert_absent(b"\n".join(blobs), codes, tokens) > 1000
    finally:
        await raw.aclose()
        await store.close()


async def test_store_is_created_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home" / ".mcpaql"
    store = SQLiteStore(home / "safety.db")
    try:
        await store.append_audit({"event": "x"})
        wal = home / "safety.db-wal"
        assert wal.stat().st_size > 0
        await store.put("token", "k", {"v": 1})
        assert wal.stat().st_size > 0
        await store.take("token", "k")  # a secret-bearing record leaves: the WAL is folded in and truncated
        await store.checkpoint()  # (on the worker thread, off the event loop)
        assert wal.stat().st_size == 0
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        for p in home.iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    finally:
        await store.close()


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_store_open_to_other_users_is_refused(tmp_path: Path, what: str) -> None:
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    db = d / "safety.db"
    db.touch(mode=0o600)
    if what == "file":
        db.chmod(0o644)
    else:
        d.chmod(0o777)
    with pytest.raises(InsecureStoreError) as e:
        SQLiteStore(db)
    msg = str(e.value)
    assert "\n" not in msg and str(d) in msg and "chmod" in msg


async def test_cli_refuses_an_insecure_store_in_one_line(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "wrap"))
    from wrap_helpers import FIXTURES

    from mcpaql.mcp.replay import argv_for

    db = tmp_path / "safety.db"
    db.touch(mode=0o644)
    db.chmod(0o644)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"store": f"sqlite:///{db}", "trust": "validated"}))
    argv = [
        sys.executable,
        "-m",
        "mcpaql.cli",
        "wrap",
        "--safety",
        str(policy),
        "--",
        *argv_for(FIXTURES / "server-memory.tools-list.json"),
    ]
    proc = await anyio.run_process(argv, check=False, env={**os.environ, "COLUMNS": "400"})
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert "readable by other users" in err and err.strip().count("\n") == 0


async def test_a_page_in_another_process_lists_challenges_without_codes(sqlite_store: Any) -> None:
    """The store has no codes, so an approval page of another process (``mcpaql guard --store``)
    shows the challenge and can approve it, but has no code to show."""
    import httpx

    from mcpaql.safety.approval import ApprovalPage
    from mcpaql.safety.verification import Challenges

    issuer = Challenges(sqlite_store)
    pub = await issuer.create("bot", "confirm", action="x")
    elsewhere = build_persisted(sqlite_store)  # another Safety on the same store
    page = ApprovalPage(elsewhere.safety.challenges, elsewhere.safety.loop)
    await page.start()
    try:
        async with httpx.AsyncClient() as c:
            state = (await c.get(page.url.replace("/?", "/api/state?"))).json()
            assert [(ch["id"], ch["code"]) for ch in state["challenges"]] == [(pub["id"], "")]
            assert (await c.get(page.url)).status_code == 200
        assert issuer.code_of(pub["id"]) not in json.dumps(state)
    finally:
        await page.stop()
