"""Issue 11: a hypothesis-driven adversarial agent against the safety layer's invariants.

Several identities (what a transport or auth establishes; the agent cannot choose it) run random
sequences of safety-loop calls, writes through every endpoint kind and in batches, element
renames, reconnects, stateless (per-request) calls, replays of any token seen anywhere, forged
and mutated tokens, foreign and random challenge ids, wrong and other challenges' codes — and,
as the human, the right code for the right challenge. After every step:

* a blocked identity performed no write (and a paused one no write either);
* no out-of-band code appears in any response, audit entry or log record, and no token appears
  in a response other than the one that issued it or in any audit entry or log record; at the
  end, no code or token appears in any byte of the store (database, WAL, SHM);
* a confirmation token works at most once, only for its identity (and its session where it is
  session-bound), only for the parameters it was issued for — and, when nothing refuses the
  caller (block, pause, rate limit), it does work.

``MCPAQL_ADVERSARY_EXAMPLES`` sets the number of examples (default 150, each up to 40 steps).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mcpaql import Adapter, Config
from mcpaql.protocol.session import Session
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.safety.verification import DisplayChannel, normalize_code
from mcpaql.store.base import NS_BLOCK, NS_PAUSE
from mcpaql.store.sqlite import SQLiteStore

IDENTITIES = ("alice", "bob", "mallory")
ELEMENTS = ("agentA", "agentA-v2", "agentC", "helper")
HINTS = (
    "read_file notes.txt",
    "delete_user 7",
    "drop_table users",
    "git push --force to main",
    "rm -rf /srv",
    "list_tasks",
    "write report",
    "read_file a",
    "summarise notes",
)
EXAMPLES = int(os.environ.get("MCPAQL_ADVERSARY_EXAMPLES", "150"))
STATS = {
    "examples": 0,
    "steps": 0,
    "writes_refused_blocked": 0,
    "writes_refused_paused": 0,
    "tokens_redeemed": 0,
    "tokens_refused": 0,
    "unblocked_by_human": 0,
}


class Shown(DisplayChannel):
    """The human channel: every code, with the identity it concerns."""

    def __init__(self) -> None:
        self.codes: dict[str, tuple[str, str]] = {}  # challenge id → (code, identity)

    async def show(self, challenge: dict[str, Any]) -> None:
        self.codes[challenge["id"]] = (challenge["code"], challenge["agent"])


class Logs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {record.args}")


def make_app(writes: list[str]) -> Adapter:
    app = Adapter("tasks")

    @app.read
    def get_task(task_id: str) -> dict:
        """Get a task."""
        return {"task_id": task_id}

    @app.create
    def create_task(title: str) -> dict:
        """Create a task."""
        writes.append("create")
        return {"title": title}

    @app.update
    def update_task(task_id: str, title: str) -> dict:
        """Rename a task."""
        writes.append("update")
        return {"task_id": task_id}

    @app.delete
    def delete_task(task_id: str) -> dict:
        """Delete a task."""
        writes.append("delete")
        return {"deleted": task_id}

    return app


TOKEN = re.compile(r"conf_[A-Za-z0-9_-]{59}")
WRITE_TOOLS = {"create_task": "tasks_mcpaql_create", "update_task": "tasks_mcpaql_update", "delete_task": "tasks_mcpaql_delete"}


class Adversary(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # tmpfs: the examples are not I/O-bound
        self.dir = Path(tempfile.mkdtemp(prefix="mcpaql-adversary-", dir=shm))
        self.store = SQLiteStore(self.dir / "safety.db")
        self.writes: list[str] = []
        self.shown = Shown()
        app = make_app(self.writes)
        cfg = SafetyConfig(
            trust="validated",
            loop_mode="enforcing",
            max_failed_verifications=6,
            autonomy={"deny": ["drop_*", "rm -rf*"], "requires_approval": ["delete_*"], "max_autonomous_steps": 12},
        )
        self.safety = install_safety(app, cfg, store=self.store, channels=[self.shown])
        self.engine = app.engine(Config(mode="all"))
        self.sessions: dict[str, Session] = {who: self._session(who) for who in IDENTITIES}
        # token → (identity, session id or None, task_id, used)
        self.tokens: dict[str, list[Any]] = {}
        self.seen_cids: list[str] = []
        self.logs = Logs()
        logging.getLogger().addHandler(self.logs)
        logging.getLogger().setLevel(logging.DEBUG)
        STATS["examples"] += 1

    def _session(self, who: str, per_request: bool = False) -> Session:
        s = self.engine.new_session("http" if per_request else "stdio")
        s.identity, s.per_request = who, per_request
        return s

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def _state(self, who: str) -> tuple[bool, bool]:
        block, pause = await self.store.get_many([(NS_BLOCK, who), (NS_PAUSE, who)])
        return block is not None, pause is not None

    def call(
        self, who: str, request: dict[str, Any], tool: str, *, per_request: bool = False, sent: str | None = None
    ) -> dict[str, Any]:
        """One call as ``who``; checks the response for leaked secrets."""
        STATS["steps"] += 1
        session = self._session(who, True) if per_request else self.sessions[who]
        env = self.run(self.engine.call_tool(tool, request, self.engine.context(session)))
        if per_request:
            self.run(session.close())
        text = json.dumps(env)
        issued = set(TOKEN.findall(text)) - set(self.tokens) - {sent}
        for token in issued:  # new tokens (top level or inside a batch) belong to this caller
            self.tokens[token] = [who, None if per_request else session.id, "w", False]
        for code, _owner in self.shown.codes.values():
            assert normalize_code(code) not in normalize_code(text.replace("-", "")) or not code, "code in a response"
            assert code not in text
        for token in self.tokens:
            assert token not in text or token in issued or token == sent, "another caller's token in a response"
        for n in (env.get("data") or {}).get("notifications", []) if isinstance(env.get("data"), dict) else []:
            cid = (n.get("metadata") or {}).get("verificationId")
            if cid:
                owner = self.shown.codes.get(cid, ("", who))[1]
                assert owner == who, "a challenge id delivered to another identity"
                self.seen_cids.append(cid)
        return env

    # ---- the agent's moves -----------------------------------------------------------------

    @initialize()
    def begin(self) -> None:
        for who in IDENTITIES[::2]:  # bob starts outside the loop (his confirmations do not pause him)
            self.call(who, {"operation": "execute_agent", "params": {"element_name": "agentA"}}, "tasks_mcpaql_execute")

    @rule(who=st.sampled_from(IDENTITIES), element=st.sampled_from(ELEMENTS), hint=st.sampled_from(HINTS))
    def step(self, who: str, element: str, hint: str) -> None:
        self.call(
            who,
            {"operation": "record_execution_step", "params": {"element_name": element, "next_action_hint": hint}},
            "tasks_mcpaql_create",
        )

    @rule(
        who=st.sampled_from(IDENTITIES),
        element=st.sampled_from(ELEMENTS),
        hint=st.sampled_from(["drop_table users", "rm -rf /srv", "delete_user 7", "git push --force"]),
    )
    def provoke(self, who: str, element: str, hint: str) -> None:
        """Start (or continue) an execution and report an action that blocks or pauses."""
        self.call(who, {"operation": "execute_agent", "params": {"element_name": element}}, "tasks_mcpaql_execute")
        self.step(who, element, hint)

    @rule(who=st.sampled_from(IDENTITIES), element=st.sampled_from(ELEMENTS), finish=st.booleans())
    def execute_or_finish(self, who: str, element: str, finish: bool) -> None:
        op = "complete_execution" if finish else "execute_agent"
        self.call(who, {"operation": op, "params": {"element_name": element}}, "tasks_mcpaql_execute")

    @rule(
        who=st.sampled_from(IDENTITIES),
        op=st.sampled_from(["create_task", "update_task", "delete_task"]),
        single=st.booleans(),
        batch=st.booleans(),
        per_request=st.booleans(),
    )
    def write(self, who: str, op: str, single: bool, batch: bool, per_request: bool) -> None:
        blocked, paused = self.run(self._state(who))
        params = {"create_task": {"title": "t"}, "update_task": {"task_id": "1", "title": "t"}, "delete_task": {"task_id": "w"}}[
            op
        ]
        item = {"operation": op, "params": params}
        request = {"operations": [item, item]} if batch else item
        tool = "tasks_mcpaql" if single else WRITE_TOOLS[op]
        before = len(self.writes)
        self.call(who, request, tool, per_request=per_request)
        if blocked or paused:
            assert len(self.writes) == before, f"{who} wrote while {'blocked' if blocked else 'paused'}"
            STATS["writes_refused_blocked" if blocked else "writes_refused_paused"] += 1

    @rule(
        data=st.data(),
        op=st.sampled_from(["create_task", "update_task", "delete_task"]),
        single=st.booleans(),
        batch=st.booleans(),
        per_request=st.booleans(),
    )
    def stopped_identity_tries_to_write(self, data: st.DataObject, op: str, single: bool, batch: bool, per_request: bool) -> None:
        """The attack itself: an identity that is blocked or paused right now tries to write."""
        stopped = [who for who in IDENTITIES if any(self.run(self._state(who)))]
        if stopped:
            self.write(data.draw(st.sampled_from(stopped)), op, single, batch, per_request)

    @rule(who=st.sampled_from(IDENTITIES), per_request=st.booleans())
    def confirm_own(self, who: str, per_request: bool) -> None:
        """The honest path: ask for a confirmation, then retry with the token as the same caller."""
        before = set(self.tokens)
        self.write(who, "delete_task", False, False, per_request)
        for token in [t for t in self.tokens if t not in before]:
            self._redeem(who, token, per_request, "none")

    @rule(
        who=st.sampled_from(IDENTITIES),
        data=st.data(),
        per_request=st.booleans(),
        tamper=st.sampled_from(["none", "params", "secret", "id"]),
    )
    @precondition(lambda self: bool(self.tokens))
    def redeem(self, who: str, data: st.DataObject, per_request: bool, tamper: str) -> None:
        """Replay any token ever seen — by anyone, in any session, with any tampering."""
        self._redeem(who, data.draw(st.sampled_from(list(self.tokens))), per_request, tamper)

    def _redeem(self, who: str, token: str, per_request: bool, tamper: str) -> None:
        owner, bound, task_id, used = self.tokens[token]
        sent, params = token, {"task_id": task_id}
        if tamper == "params":
            params = {"task_id": task_id + "x"}
        elif tamper == "secret":
            sent = token[:-3] + ("abc" if not token.endswith("abc") else "xyz")
        elif tamper == "id":
            sent = token[:6] + ("Q" if token[6] != "Q" else "R") + token[7:]
        blocked, paused = self.run(self._state(who))
        session_id = None if per_request else self.sessions[who].id
        before = len(self.writes)
        env = self.call(
            who,
            {"operation": "delete_task", "params": {**params, "_confirmation": sent}},
            "tasks_mcpaql_delete",
            per_request=per_request,
            sent=sent,
        )
        rightful = tamper == "none" and owner == who and not used and bound in (None, session_id)
        if env["success"]:
            assert rightful, "a token worked for the wrong caller, parameters or a second time"
            assert not blocked and not paused
            self.tokens[token][3] = True
            STATS["tokens_redeemed"] += 1
        else:
            assert len(self.writes) == before
            STATS["tokens_refused"] += 1
            code = env["error"]["code"]
            if rightful and not blocked and not paused and code != "RATE_LIMIT_EXCEEDED":
                raise AssertionError(f"the rightful caller's token was refused: {code}")

    @rule(
        who=st.sampled_from(IDENTITIES),
        data=st.data(),
        verify=st.booleans(),
        code=st.sampled_from(["wrong", "other", "right"]),
        claim=st.sampled_from([None, *ELEMENTS]),
    )
    @precondition(lambda self: bool(self.shown.codes))
    def submit_code(self, who: str, data: st.DataObject, verify: bool, code: str, claim: str | None) -> None:
        """Any challenge id (own, foreign, random), any code — the right one only as the human."""
        cid = data.draw(st.sampled_from([*self.shown.codes, "00000000-0000-4000-8000-000000000000"]))
        owner = self.shown.codes.get(cid, ("", ""))[1]
        value = {
            "wrong": "AAAA-BBBB-CCCC",
            "right": self.shown.codes.get(cid, ("x", ""))[0],
            "other": next(iter(self.shown.codes.values()))[0],
        }[code]
        if code == "right" and owner != who:
            value = "WRONG-WRONG"  # only the human holds the right code, and gives it to the right agent
        params: dict[str, Any] = {"challenge_id": cid, "code": value}
        if not verify and claim:
            params["element_name"] = claim
        was_blocked = self.run(self._state(owner))[0] if owner else False
        env = self.call(
            who,
            {"operation": "verify_challenge" if verify else "confirm_operation", "params": params},
            "tasks_mcpaql_create" if verify else "tasks_mcpaql_execute",
        )
        if env["success"]:
            assert owner == who and value == self.shown.codes[cid][0], "a challenge passed without its code"
            if was_blocked and not self.run(self._state(owner))[0]:
                STATS["unblocked_by_human"] += 1

    @rule(data=st.data())
    @precondition(lambda self: bool(self.seen_cids))
    def human_approves(self, data: st.DataObject) -> None:
        """The operator reads a pending challenge's code and gives it to the agent it concerns."""
        cid = data.draw(st.sampled_from(self.seen_cids[-6:]))
        code, owner = self.shown.codes[cid]
        kind = "verify_challenge" if data.draw(st.booleans()) else "confirm_operation"
        was_blocked = self.run(self._state(owner))[0]
        env = self.call(
            owner,
            {"operation": kind, "params": {"challenge_id": cid, "code": code}},
            "tasks_mcpaql_create" if kind == "verify_challenge" else "tasks_mcpaql_execute",
        )
        if env["success"] and was_blocked and not self.run(self._state(owner))[0]:
            STATS["unblocked_by_human"] += 1

    @rule(who=st.sampled_from(IDENTITIES))
    def reconnect(self, who: str) -> None:
        self.run(self.sessions[who].close())
        self.sessions[who] = self._session(who)
        for rec in self.tokens.values():  # session-bound tokens die with their session
            if rec[1] is not None and rec[1] not in {s.id for s in self.sessions.values()}:
                rec[3] = True

    # ---- invariants ---------------------------------------------------------------------------

    @invariant()
    def nothing_secret_in_logs_or_audit(self) -> None:
        text = "\n".join(self.logs.lines) + json.dumps(self.run(self.store.read_audit()))
        for code, _ in self.shown.codes.values():
            assert code not in text and normalize_code(code) not in text
        for token in self.tokens:
            assert token not in text and token[-43:] not in text

    def teardown(self) -> None:
        try:
            blob = b"".join(p.read_bytes() for p in self.dir.iterdir()).decode("latin-1")
            for code, _ in self.shown.codes.values():
                assert code not in blob and normalize_code(code) not in blob, "a code in the store's bytes"
            for token in self.tokens:
                assert token not in blob and token[-43:] not in blob, "a token in the store's bytes"
        finally:
            logging.getLogger().removeHandler(self.logs)
            for s in self.sessions.values():
                self.run(s.close())
            self.run(self.safety.close())
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)


Adversary.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=40, deadline=None, suppress_health_check=list(HealthCheck)
)
TestAdversary = Adversary.TestCase


def test_zz_report_adversary_counts() -> None:
    """Prints what the adversary did (run with -s to see it); fails if it did nothing."""
    print("adversary:", json.dumps(STATS))
    assert STATS["examples"] == 0 or STATS["steps"] > STATS["examples"]
