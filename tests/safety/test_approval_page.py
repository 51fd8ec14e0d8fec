"""The local approval page (REQ-OOB-004, REQ-OOB-016): a real uvicorn server on 127.0.0.1,
driven with httpx and rendered by real headless Chromium."""

from __future__ import annotations

import asyncio
import html
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from safety_support import build

from mcpaql.safety.approval import ApprovalPage
from mcpaql.store.base import NS_BLOCK

pytestmark = pytest.mark.anyio

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


async def blocked_setup(store):
    h = build(store, trust="validated", loop_mode="enforcing")
    h.agents_are_identities = True  # bot and helper are two identities (two endpoints or credentials)
    await h.call("execute_agent", element_name="bot")
    await h.call("execute_agent", element_name="helper")
    d = (await h.call("record_execution_step", element_name="bot", next_action_hint="drop_table users"))["data"]
    p = (await h.call("record_execution_step", element_name="helper", next_action_hint="delete_user 7"))["data"]
    assert d["stopped"] is True and p["continue"] is False
    page = ApprovalPage(h.safety.challenges, h.safety.loop)
    await page.start()
    return h, page


async def test_REQ_OOB_004_page_requires_key_and_binds_loopback(sqlite_store) -> None:
    h, page = await blocked_setup(sqlite_store)
    try:
        assert page.host == "127.0.0.1" and page.url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient() as c:
            base = page.url.split("?")[0]
            assert (await c.get(base)).status_code == 403
            assert (await c.get(base + "?key=wrong")).status_code == 403
            assert (await c.get(base + "api/state")).status_code == 403
            r = await c.post(base + "unblock", data={"agent": "bot"})  # no key in form: CSRF refused
            assert r.status_code == 403
        with pytest.raises(ValueError, match="loopback"):
            ApprovalPage(h.safety.challenges, h.safety.loop, host="0.0.0.0")
    finally:
        await page.stop()


async def test_REQ_OOB_016_page_lists_codes_and_admin_unblock_and_approve(sqlite_store) -> None:
    h, page = await blocked_setup(sqlite_store)
    try:
        async with httpx.AsyncClient(follow_redirects=True) as c:
            r = await c.get(page.url)
            assert r.status_code == 200 and "no-store" in r.headers["cache-control"]
            state = (await c.get(page.url.replace("/?", "/api/state?"))).json()
            codes = {ch["agent"]: ch["code"] for ch in state["challenges"]}
            assert set(codes) == {"bot", "helper"}
            for code in codes.values():
                assert html.escape(code) in r.text
            assert [b["agent"] for b in state["blocked_agents"]] == ["bot"]
            # approve the helper's pause on the page (the cookie from the first GET is reused)
            helper_cid = next(ch["id"] for ch in state["challenges"] if ch["agent"] == "helper")
            r = await c.post(page.url.split("?")[0] + "approve", data={"key": page.key, "challenge_id": helper_cid})
            assert r.status_code == 200
            d = (await h.call("record_execution_step", element_name="helper", next_action_hint="read_file x"))["data"]
            assert d["continue"] is True
            # admin unblock of the blocked agent
            r = await c.post(page.url.split("?")[0] + "unblock", data={"key": page.key, "agent": "bot"})
            assert r.status_code == 200 and "No blocked agents" in r.text
        assert await sqlite_store.get(NS_BLOCK, "bot") is None
        d = (await h.call("record_execution_step", element_name="bot", next_action_hint="read_file a"))["data"]
        assert d["continue"] is True
        events = [e["event"] for e in await sqlite_store.read_audit()]
        assert events.count("ADMIN_OVERRIDE") == 2
    finally:
        await page.stop()


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="chromium not installed (Debian package: chromium)")
async def test_REQ_OOB_016_page_renders_in_headless_chromium(sqlite_store, tmp_path: Path) -> None:
    h, page = await blocked_setup(sqlite_store)
    try:
        pending = await h.safety.challenges.pending(with_codes=True)
        base = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
        ]

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*base, *args], capture_output=True, text=True, timeout=90)

        dom = await asyncio.to_thread(run, "--dump-dom", page.url)
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert "mcpaql — human approvals" in dom.stdout
        for ch in pending:
            assert ch["code"] in dom.stdout and ch["id"] in dom.stdout
        assert 'data-agent="bot"' in dom.stdout and "Unblock" in dom.stdout
        shot = tmp_path / "approvals.png"
        res = await asyncio.to_thread(run, f"--screenshot={shot}", "--window-size=1280,900", page.url)
        assert res.returncode == 0 and shot.exists() and shot.stat().st_size > 5000
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        denied = await asyncio.to_thread(run, "--dump-dom", page.url.split("?")[0])
        assert "403" in denied.stdout and pending[0]["code"] not in denied.stdout
    finally:
        await page.stop()


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="chromium not installed (Debian package: chromium)")
async def test_REQ_OOB_016_operator_clicks_unblock_and_approve_in_chromium(sqlite_store, tmp_path: Path) -> None:
    from cdp import Chromium

    h, page = await blocked_setup(sqlite_store)
    browser = await asyncio.to_thread(Chromium, tmp_path / "profile")
    try:
        await asyncio.to_thread(browser.goto, page.url)
        shown = await asyncio.to_thread(
            browser.evaluate, "[...document.querySelectorAll('#challenges span.code')].map(e => e.textContent)"
        )
        pending = await h.safety.challenges.pending(with_codes=True)
        assert sorted(shown) == sorted(c["code"] for c in pending)
        # click "Approve" for the paused helper, then "Unblock" for the blocked bot
        await asyncio.to_thread(browser.click_and_wait, "tr.kind-confirm button", "!!document.querySelector('#blocked')")
        assert await asyncio.to_thread(browser.evaluate, "!document.querySelector('tr.kind-confirm')")
        d = (await h.call("record_execution_step", element_name="helper", next_action_hint="read_file x"))["data"]
        assert d["continue"] is True
        await asyncio.to_thread(browser.click_and_wait, "tr[data-agent='bot'] button", "!!document.querySelector('#blocked')")
        assert await asyncio.to_thread(browser.evaluate, "document.body.innerText.includes('No blocked agents')")
        assert await sqlite_store.get(NS_BLOCK, "bot") is None
        d = (await h.call("record_execution_step", element_name="bot", next_action_hint="read_file a"))["data"]
        assert d["continue"] is True
    finally:
        await asyncio.to_thread(browser.close)
        await page.stop()
