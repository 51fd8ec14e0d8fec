"""The execution safety loop (CORE §8.6–§8.8, ESL; REQ-LOOP-*, REQ-AUTO-*, REQ-OOB-*): the six
reserved operations and the state behind them.

State is kept per *identity* — who the caller is as the transport established it, never a
request field (:mod:`.identity`); ``element_name`` names the element being executed (which
execution a call concerns), it cannot select or escape the identity a block or pause applies
to. All of it lives in the store so it is shared by every process using it:

The pause/block rules are the table in :mod:`.holds`; this module follows it.

* **block** (``stopped: true``; deny pattern or ``danger_zone`` tier) — persists across
  restarts; the gatekeeper (:meth:`SafetyLoop.guard`) refuses every operation of that
  identity except ``introspect``, ``record_execution_step`` and the two code submissions,
  in every endpoint mode and batch item, until ``verify_challenge`` succeeds or an admin
  unblocks it (approval page). New executions and renamed elements cannot bypass it.
* **pause** (``continue: false``) — ``confirm``-kind pauses (requires-approval pattern,
  confirm tier, step limit, failed outcome, tolerance, gatekeeper ``permission_pending``)
  clear through ``confirm_operation``; ``verify``-kind pauses clear through
  ``verify_challenge`` or expiry and do not survive a restart (they carry this process's
  boot id, CORE §8.8.3). While paused, the gatekeeper refuses the identity's writes (every
  category but READ) and ``execute_agent``; reads, introspection and the other loop
  operations stay open.
* one-shot **notifications** delivered on the next ``record_execution_step`` (pull-based).
  ``danger_zone`` notifications are derived from the live blocks, so they reach every
  executing agent without a fan-out write; the ``verificationId`` goes only to the blocked
  identity itself (a challenge is a handle on that identity's approval).

Self-approval is prevented because ``confirm_operation`` and ``verify_challenge`` need a code
shown only on a human channel (REQ-AUTO-015); an agent naming itself as the approver is also
refused. Modes: ``enforcing``; ``monitoring`` (evaluated, ``continue`` always true, never
``stopped``, no state); ``logging`` (recorded only); ``disabled`` (no-op tracking).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from ..protocol.categories import Category
from ..protocol.compile import CompiledOperation
from ..protocol.context import Context
from ..protocol.errors import MCPAQLError, not_found_resource
from ..protocol.operations import OperationSpec, ParamSpec, TypeRef, TypeSpec
from ..store.base import NS_BLOCK, NS_MARK, NS_NOTIFY, NS_PAUSE, Store
from .audit import Auditor, now_iso
from .autonomy import AutonomyConfig, Verdict, evaluate
from .holds import HOLDS, pause_record, rule_of
from .identity import DEFAULT_AGENT_ID, identity_of, token_session
from .lifecycle import LIFECYCLE_INFO, Event, Executions
from .verification import Challenges

MODES = ("enforcing", "monitoring", "logging", "disabled")
STEP_WINDOW = 2**31  # step counters are store windows that never roll over in practice
RETAIN_FINISHED = 7 * 86400.0


def note(kind: str, message: str, **metadata: Any) -> dict[str, Any]:
    n: dict[str, Any] = {"type": kind, "message": message, "timestamp": now_iso()}
    meta = {k: v for k, v in metadata.items() if v is not None}
    if meta:
        n["metadata"] = meta
    return n


def _blocked_error(block: dict[str, Any]) -> MCPAQLError:
    return MCPAQLError(
        "PERMISSION_DENIED",
        "Permission denied: 'this agent is hard-blocked until a human completes verify_challenge'",
        {"reason": "agent_blocked", "element_name": block.get("element_name"), "verificationId": block.get("challenge_id")},
    )


def _paused_error(pause: dict[str, Any]) -> MCPAQLError:
    what = rule_of(pause).cleared_by
    return MCPAQLError(
        "PERMISSION_DENIED",
        f"Permission denied: 'this agent is paused until a human completes {what}'",
        {"reason": "agent_paused", "verificationId": pause.get("challenge_id")},
    )


# While blocked, only these stay open: discovery, the directive (which carries the
# verificationId) and the two ways out, each needing a code only a human has.
_OPEN_WHILE_BLOCKED = frozenset({"introspect", "record_execution_step", "confirm_operation", "verify_challenge"})


class SafetyLoop:
    def __init__(
        self,
        store: Store,
        challenges: Challenges,
        *,
        mode: str = "enforcing",
        autonomy: AutonomyConfig | None = None,
        audit: Auditor | None = None,
        approve_start: bool = False,
        agent_id: str = DEFAULT_AGENT_ID,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"safety loop mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.store = store
        self.mode = mode
        self.cfg = autonomy or AutonomyConfig()
        self.challenges = challenges
        self.clock = clock  # wall-clock seconds; injectable so pause expiry is tested without sleeping
        self.executions = Executions(store, clock=clock)
        self.audit = audit or Auditor(store, "safety")
        self.boot = uuid.uuid4().hex  # verify pauses from an earlier process are ignored
        # REQ-LOOP-007: with approve_start, execute_agent leaves the execution pending until a
        # human approves it (confirm_operation / approval page); otherwise the client's own
        # per-call approval of the EXECUTE tool is the one-time gate.
        self.approve_start = approve_start
        self.agent_id = agent_id  # identity of callers whose transport established none

    def identity(self, ctx: Context) -> str:
        return identity_of(ctx, self.agent_id)

    async def guard(self, compiled: CompiledOperation, values: dict[str, Any], ctx: Context) -> None:
        """Engine guard (runs for every operation, endpoint mode and batch item): a hard-blocked
        identity gets nothing but :data:`_OPEN_WHILE_BLOCKED`; a paused one no writes."""
        if self.mode != "enforcing":
            return
        spec = compiled.spec
        if spec.name == "introspect" or (spec.extensions.get("safety_loop") and spec.name in _OPEN_WHILE_BLOCKED):
            return
        identity = self.identity(ctx)
        block, pause = await self.store.get_many([(NS_BLOCK, identity), (NS_PAUSE, identity)])
        if block is not None:
            await self.audit("OPERATION_REFUSED", agent=identity, operation=spec.name, reason="agent_blocked")
            raise _blocked_error(block)
        if pause is None or spec.category is Category.READ:
            return
        if spec.extensions.get("safety_loop") and spec.name != "execute_agent":
            return  # finishing or aborting stays open; starting another execution does not
        pause = await self._pause_of(identity, pause)
        if pause is not None:
            await self.audit("OPERATION_REFUSED", agent=identity, operation=spec.name, reason="agent_paused")
            raise _paused_error(pause)

    # ---- state helpers ------------------------------------------------------------------------

    async def block_of(self, agent: str) -> dict[str, Any] | None:
        return await self.store.get(NS_BLOCK, agent)

    async def _ensure_block_challenge(self, agent: str, block: dict[str, Any]) -> dict[str, Any]:
        """A block outlives its challenge (expiry, failed attempt); issue a fresh one then."""
        cid = block.get("challenge_id")
        if cid and await self.challenges.get(cid) is not None:
            return block
        ch = await self.challenges.create(
            agent,
            HOLDS["block"].challenge,
            action=block.get("action", ""),
            reason=block.get("reason", ""),
            element_name=block.get("element_name"),
        )
        return await self.store.cas(NS_BLOCK, agent, {"challenge_id": cid}, {"challenge_id": ch["id"]}) or (
            await self.block_of(agent) or block
        )

    async def _pause_of(self, agent: str, pause: dict[str, Any] | None = None) -> dict[str, Any] | None:
        if pause is None:
            pause = await self.store.get(NS_PAUSE, agent)
        if pause is None:
            return None
        if rule_of(pause).volatile:
            stale = pause.get("boot") != self.boot
            expired = pause.get("expires_at", 0) < self.clock()
            if stale or expired:  # verify pauses lift on expiry and do not survive restarts
                await self.store.delete(NS_PAUSE, agent)
                return None
        return pause

    async def _ensure_pause_challenge(self, agent: str, pause: dict[str, Any]) -> dict[str, Any]:
        """A failed attempt burns the challenge; the pause stays and gets a fresh one."""
        cid = pause.get("challenge_id")
        if cid and await self.challenges.get(cid) is not None:
            return pause
        kind = rule_of(pause).challenge
        ch = await self.challenges.create(
            agent,
            kind,
            action=pause.get("action") or "",
            reason=pause.get("reason") or "",
            execution_id=pause.get("execution_id"),
            element_name=pause.get("element_name"),
        )
        changes = {"challenge_id": ch["id"], "expires_at": ch["expires_at"]}
        return await self.store.cas(NS_PAUSE, agent, {"challenge_id": cid}, changes) or {**pause, **changes}

    async def _notify(self, agent: str, n: dict[str, Any]) -> None:
        for _ in range(8):
            cur = await self.store.get(NS_NOTIFY, agent)
            if cur is None:
                if await self.store.add(NS_NOTIFY, agent, {"items": [n]}):
                    return
                continue
            if await self.store.cas(NS_NOTIFY, agent, {"items": cur["items"]}, {"items": [*cur["items"], n][-50:]}):
                return

    async def _drain(self, agent: str) -> list[dict[str, Any]]:
        rec = await self.store.take(NS_NOTIFY, agent)
        return list(rec["items"]) if rec else []

    async def _danger_broadcast(self, identity: str) -> list[dict[str, Any]]:
        """Every live block, to every executing agent (REQ-AUTO-013); the challenge id only to
        the blocked identity itself, so no one else holds a handle on its approval."""
        return [
            note(
                "danger_zone",
                f"Agent '{b.get('element_name') or b['agent']}' is hard-blocked: {b.get('reason', '')}",
                operation=b.get("action"),
                reason=b.get("reason"),
                verificationId=b.get("challenge_id") if b["agent"] == identity else None,
                agent=b.get("element_name") or b["agent"],
            )
            for b in await self.store.scan(NS_BLOCK)
        ]

    def _pause_note(self, pause: dict[str, Any]) -> dict[str, Any]:
        if pause.get("kind") == "permission":
            return note(
                "permission_pending",
                f"Operation '{pause.get('operation')}' requires confirmation",
                operation=pause.get("operation"),
                level=pause.get("level"),
                reason=pause.get("reason"),
                verificationId=pause.get("challenge_id"),
            )
        return note(
            "autonomy_pause",
            pause.get("reason") or "Execution paused",
            reason=pause.get("reason"),
            level=pause.get("tier"),
            verificationId=pause.get("challenge_id"),
            operation=pause.get("action"),
        )

    async def _session_hook(self, ctx: Context) -> None:
        st = ctx.session.state
        if not ctx.session.per_request and not st.get("mcpaql.safety.loop_hook"):
            st["mcpaql.safety.loop_hook"] = True
            sid = ctx.session.id

            async def close(_s: Any) -> None:
                await self.executions.fail_session(sid)

            ctx.session.on_close(close)

    # ---- operations ---------------------------------------------------------------------------

    async def execute_agent(
        self, element_name: str, goal: str | None, parameters: dict[str, Any] | None, ctx: Context
    ) -> dict[str, Any]:
        identity = self.identity(ctx)
        block = await self.block_of(identity)
        if block is not None and self.mode == "enforcing":
            await self._ensure_block_challenge(identity, block)
            raise _blocked_error(await self.block_of(identity) or block)
        await self._session_hook(ctx)
        cfg = self.cfg.for_agent(identity)
        rec = await self.executions.create(
            element_name, token_session(ctx), identity=identity, goal=goal, parameters=parameters or {}
        )
        await self.store.put(NS_MARK, _running(identity, element_name), {"execution_id": rec["execution_id"]})
        extra: dict[str, Any] = {}
        if self.approve_start and self.mode == "enforcing":
            ch = await self.challenges.create(
                identity,
                "confirm",
                action=f"start execution: {goal or ''}",
                reason="Starting a monitored execution needs human approval",
                execution_id=rec["execution_id"],
                purpose="start",
                element_name=element_name,
            )
            extra = {
                "verificationId": ch["id"],
                "reason": "Waiting for a human to approve the start (confirm_operation or the approval page)",
            }
            await self.audit(
                "EXECUTION_PENDING_APPROVAL", execution_id=rec["execution_id"], agent=identity, element_name=element_name
            )
        else:
            rec = await self.executions.fire(rec["execution_id"], Event.START)
            await self.audit(
                "EXECUTION_STARTED", execution_id=rec["execution_id"], agent=identity, element_name=element_name, mode=self.mode
            )
        return {
            **Executions.view(rec),
            **extra,
            "mode": self.mode,
            "max_autonomous_steps": cfg.max_autonomous_steps,
            "instructions": "Before every externally visible action, call record_execution_step with "
            "next_action_hint and proceed only if the directive says continue: true.",
        }

    async def record_execution_step(
        self,
        element_name: str,
        next_action_hint: str,
        step_description: str | None,
        outcome: str | None,
        findings: str | None,
        execution_id: str | None,
        ctx: Context,
    ) -> dict[str, Any]:
        agent = self.identity(ctx)
        element = element_name
        if self.mode in ("disabled", "logging"):
            if self.mode == "logging":
                await self.audit(
                    "STEP_RECORDED",
                    agent=agent,
                    element_name=element,
                    execution_id=execution_id,
                    action=next_action_hint[:500],
                    outcome=outcome,
                    step_description=(step_description or "")[:500],
                    findings=(findings or "")[:500],
                )
            return {"continue": True, "factors": [f"Safety loop {self.mode}: step recorded, not evaluated"]}
        enforcing = self.mode == "enforcing"
        notes: list[dict[str, Any]] = []
        # one round trip for the agent's state (MGET on Redis)
        block, ptr, pause, queued = await self.store.get_many(
            [(NS_BLOCK, agent), (NS_MARK, _running(agent, element)), (NS_PAUSE, agent), (NS_NOTIFY, agent)]
        )

        async def drain() -> list[dict[str, Any]]:
            return await self._drain(agent) if queued is not None else []

        if block is not None and enforcing:
            block = await self._ensure_block_challenge(agent, block)
            await self.audit("STEP_REFUSED", agent=agent, reason="agent_blocked")
            return {
                "continue": False,
                "stopped": True,
                "reason": f"Agent is hard-blocked: {block.get('reason')}",
                "factors": [
                    f"Agent is hard-blocked; a human must complete verify_challenge (verificationId {block.get('challenge_id')})"
                ],
                "notifications": await self._danger_broadcast(agent) + await drain(),
            }
        execution = await self._find_execution(agent, element, execution_id or (ptr or {}).get("execution_id"))
        if execution is None and ptr is not None and enforcing:
            pending = await self.executions.get(ptr["execution_id"])
            if pending is not None and pending.get("status") == "pending":
                return {
                    "continue": False,
                    "reason": "Execution start is waiting for human approval",
                    "factors": ["execute_agent needs approval before any action (REQ-LOOP-007)"],
                    "notifications": await drain(),
                }
        if execution is None:
            return {
                "continue": False,
                "reason": "No running execution for this agent; call execute_agent first",
                "factors": ["No running execution"],
                "notifications": await drain(),
            }
        pause = await self._pause_of(agent, pause) if enforcing and pause is not None else None
        if pause is not None:
            pause = await self._ensure_pause_challenge(agent, pause)
            what = rule_of(pause).cleared_by
            return {
                "continue": False,
                "reason": f"Paused pending {what} for challenge {pause.get('challenge_id')}: {pause.get('reason')}",
                "factors": [f"Awaiting human {what} (verificationId {pause.get('challenge_id')})"],
                "notifications": [self._pause_note(pause), *await self._danger_broadcast(agent), *await drain()],
            }
        count = (await self.store.incr_window(f"steps:{execution['execution_id']}", STEP_WINDOW, now=self.clock())).count
        cfg = self.cfg.for_agent(agent)
        step = count - int(execution.get("extra_steps", 0))
        verdict = evaluate(next_action_hint, outcome, step, cfg)
        directive: dict[str, Any] = {
            "continue": verdict.proceed,
            "factors": list(verdict.factors),
            "stepsRemaining": max(0, cfg.max_autonomous_steps - step),
        }
        if verdict.tier:
            directive["nextStepRisk"] = verdict.tier
        if verdict.reason:
            directive["reason"] = verdict.reason
        if not verdict.proceed:
            if enforcing:
                notes.extend(await self._act_on(agent, element, execution, verdict, next_action_hint, directive))
            else:
                directive["continue"] = True
                directive["factors"].append(f"Monitoring mode: would have paused ({verdict.reason})")
        await self.audit(
            "STEP_EVALUATED",
            agent=agent,
            element_name=element,
            execution_id=execution["execution_id"],
            step=step,
            action=next_action_hint[:500],
            outcome=outcome,
            step_description=(step_description or "")[:500],
            decision="continue" if directive["continue"] else ("stopped" if directive.get("stopped") else "paused"),
            trigger=verdict.trigger,
            risk=verdict.risk,
        )
        notes.extend(await self._danger_broadcast(agent) if enforcing else [])
        notes.extend(await drain())
        if notes:
            directive["notifications"] = notes
        return directive

    async def _find_execution(self, identity: str, element: str, eid: str | None) -> dict[str, Any] | None:
        if eid is None:  # the element's latest execution, through a pointer (no scan on the hot path)
            ptr = await self.store.get(NS_MARK, _running(identity, element))
            eid = ptr["execution_id"] if ptr else None
            if eid is None:
                return None
        rec = await self.executions.get(eid)
        ok = (
            rec is not None
            and rec.get("identity") == identity
            and rec.get("element_name") == element
            and rec.get("status") == "running"
        )
        return rec if ok else None

    async def _steps(self, eid: str) -> int:
        return (await self.store.peek_window(f"steps:{eid}", STEP_WINDOW, now=self.clock())).count

    async def _act_on(
        self, agent: str, element: str, execution: dict[str, Any], v: Verdict, hint: str, directive: dict[str, Any]
    ) -> list[dict[str, Any]]:
        eid = execution["execution_id"]
        if v.stops:  # deny pattern or danger_zone tier: hard block, persisted (CORE §8.8.1, §8.8.3)
            await self._hard_block(agent, element, eid, v.reason or "", hint, v.trigger)
            directive["stopped"] = True
            return []  # the danger_zone notification comes from the broadcast of live blocks
        kind = "verify" if v.trigger == "verify" else "confirm"
        pause = await self._pause(
            agent,
            element,
            eid,
            kind,
            hint,
            v.reason or "",
            audit=True,
            reason=v.reason,
            trigger=v.trigger,
            tier=v.tier,
            action=hint[:500],
        )
        return [self._pause_note(pause)]

    async def _pause(
        self,
        agent: str,
        element: str,
        eid: str,
        kind: str,
        challenge_action: str,
        challenge_reason: str,
        *,
        audit: bool,
        **fields: Any,
    ) -> dict[str, Any]:
        """Hold ``agent`` paused (the ``clear → paused`` transition of :mod:`.holds`): a challenge
        of the kind's type, then the pause record (``fields``: what the record says)."""
        ch = await self.challenges.create(
            agent, HOLDS[kind].challenge, action=challenge_action, reason=challenge_reason, execution_id=eid, element_name=element
        )
        pause = pause_record(agent, element, kind, ch, eid, self.boot, **fields)
        await self.store.put(NS_PAUSE, agent, pause)
        if audit:
            await self.audit("AGENT_PAUSED", agent=agent, execution_id=eid, challenge_id=ch["id"], trigger=fields.get("trigger"))
        return pause

    async def complete_execution(
        self, element_name: str, execution_id: str | None, summary: str | None, ctx: Context
    ) -> dict[str, Any]:
        return await self._finish(ctx, element_name, execution_id, Event.COMPLETE, {"summary": summary})

    async def abort_execution(
        self, element_name: str, execution_id: str | None, reason: str | None, ctx: Context
    ) -> dict[str, Any]:
        return await self._finish(ctx, element_name, execution_id, Event.CANCEL, {"reason": reason or "aborted"})

    async def _finish(self, ctx: Context, element: str, eid: str | None, event: Event, extra: dict[str, Any]) -> dict[str, Any]:
        agent = self.identity(ctx)
        block = await self.block_of(agent)
        if block is not None and self.mode == "enforcing":
            raise _blocked_error(block)
        if eid is None:
            rec = await self._find_execution(agent, element, None)
            if rec is None:
                raise MCPAQLError(
                    "NOT_FOUND_RESOURCE",
                    f"Resource 'execution' not found: 'running execution of {element}'",
                    {"resource_type": "execution", "resource_id": element},
                )
            eid = rec["execution_id"]
        else:
            rec = await self.executions.get(eid)
            if rec is None or rec.get("element_name") != element or rec.get("identity") != agent:
                raise not_found_resource("execution", eid)
        done = await self.executions.fire(eid, event, **{k: v for k, v in extra.items() if v is not None})
        await self.audit("EXECUTION_" + done["status"].upper(), agent=agent, element_name=element, execution_id=eid)
        pause = await self.store.get(NS_PAUSE, agent)
        if pause is not None and pause.get("execution_id") == eid:
            await self.store.delete(NS_PAUSE, agent)
        ptr = await self.store.get(NS_MARK, _running(agent, element))
        if ptr is not None and ptr.get("execution_id") == eid:
            await self.store.delete(NS_MARK, _running(agent, element))
        # terminal results are kept for a while (REQ-EXEC-014), then purged with their counter
        steps = await self._steps(eid)
        done = {**done, "steps": steps}
        await self.store.put("execution", eid, done, purge_at=self.clock() + RETAIN_FINISHED)
        await self.store.reset_window(f"steps:{eid}", STEP_WINDOW, now=self.clock())
        return Executions.view(done)

    async def confirm_operation(self, challenge_id: str, code: str, element_name: str | None, ctx: Context) -> dict[str, Any]:
        identity = self.identity(ctx)
        peek = await self.challenges.get(challenge_id) if isinstance(challenge_id, str) else None
        if (
            peek is not None
            and peek.get("agent") == identity
            and element_name is not None
            and element_name == peek.get("element_name")
        ):
            await self.audit("SELF_APPROVAL_REFUSED", agent=element_name, challenge_id=challenge_id, outcome="failure")
            raise MCPAQLError(
                "PERMISSION_DENIED",
                "Permission denied: 'an agent cannot approve its own paused or blocked action'",
                {"reason": "self_approval", "challenge_id": challenge_id},
            )
        ch = await self.challenges.verify(challenge_id, code, kinds=("confirm",), caller=identity)
        return await self._resolve(ch, "confirm_operation")

    async def verify_challenge(self, challenge_id: str, code: str, ctx: Context) -> dict[str, Any]:
        ch = await self.challenges.verify(challenge_id, code, kinds=("verify", "danger_zone"), caller=self.identity(ctx))
        return await self._resolve(ch, "verify_challenge")

    async def _resolve(self, ch: dict[str, Any], via: str) -> dict[str, Any]:
        agent = ch["agent"]
        out: dict[str, Any] = {
            "verified": True,
            "challenge_id": ch["id"],
            "element_name": ch.get("element_name") or agent,
            "kind": ch["kind"],
        }
        if ch["kind"] == "danger_zone":
            block = await self.block_of(agent)
            out["unblocked"] = block is not None and await self.store.delete(NS_BLOCK, agent)
            await self.audit("AGENT_UNBLOCKED", agent=agent, challenge_id=ch["id"], via=via)
        elif ch.get("purpose") == "start" and ch.get("execution_id"):
            rec = await self.executions.fire(ch["execution_id"], Event.START)
            out["execution_id"], out["status"] = rec["execution_id"], rec["status"]
            await self.audit("EXECUTION_STARTED", execution_id=rec["execution_id"], agent=agent, via=via)
        else:
            pause = await self.store.get(NS_PAUSE, agent)
            if pause is not None and pause.get("challenge_id") == ch["id"]:
                await self.store.delete(NS_PAUSE, agent)
                if pause.get("trigger") == "step_limit" and pause.get("execution_id"):
                    await self._grant_steps(pause["execution_id"])
            out["resumed"] = True
            await self.audit("PAUSE_CLEARED", agent=agent, challenge_id=ch["id"], via=via)
        await self._notify(
            agent, note("status", f"{via} succeeded for challenge {ch['id']}; evaluation resumes", verificationId=ch["id"])
        )
        return out

    async def _grant_steps(self, eid: str) -> None:
        """After a human lifts a step-limit pause, a new budget starts at the current count."""
        count = await self._steps(eid)
        for _ in range(8):
            rec = await self.executions.get(eid)
            if rec is None:
                return
            if await self.store.cas("execution", eid, {"extra_steps": rec.get("extra_steps")}, {"extra_steps": count}):
                return

    # ---- admin (human channel only: the approval page) ----------------------------------------

    async def admin_unblock(self, agent: str, by: str = "admin") -> bool:
        block = await self.store.take(NS_BLOCK, agent)
        if block is None:
            return False
        if block.get("challenge_id"):
            await self.challenges.discard(block["challenge_id"])
        await self.audit("ADMIN_OVERRIDE", agent=agent, action="unblock", by=by)
        await self._notify(agent, note("status", "An administrator lifted the hard block"))
        return True

    async def admin_approve(self, challenge_id: str, by: str = "admin") -> bool:
        rec = await self.store.take("challenge", challenge_id)
        if rec is None:
            return False
        await self.challenges.discard(challenge_id)
        await self.audit("ADMIN_OVERRIDE", agent=rec.get("agent"), action="approve", challenge_id=challenge_id, by=by)
        await self._resolve(
            {k: rec.get(k) for k in ("id", "agent", "element_name", "kind", "purpose", "execution_id")}, "approval page"
        )
        return True

    async def note_permission_pending(self, identity: str, operation: str, level: str, reason: str) -> None:
        """A gatekeeper ``CONFIRMATION_REQUIRED`` inside a loop, by danger level (DANGER §8.1–8.2,
        REQ-DANGER-017): up to ``destructive`` → ``permission_pending`` (GK §7.3, cleared by
        ``confirm_operation``); ``dangerous`` → verify tier: an ``autonomy_pause`` for that agent
        only, cleared by ``verify_challenge``, not kept across restarts; ``forbidden`` →
        ``danger_zone``: the agent is hard-blocked, broadcast to every agent and persisted."""
        if self.mode != "enforcing":
            return
        action = f"operation {operation}"
        for ex in await self.store.scan("execution", {"identity": identity, "status": "running"}):
            agent, element, eid = identity, ex["element_name"], ex["execution_id"]
            if level == "forbidden":
                if await self.block_of(agent) is None:
                    await self._hard_block(agent, element, eid, reason, action, "gatekeeper")
                continue
            if await self.store.get(NS_PAUSE, agent) is not None:
                continue
            if level == "dangerous":
                await self._pause(
                    agent,
                    element,
                    eid,
                    "verify",
                    action,
                    reason,
                    audit=True,
                    reason=reason,
                    trigger="gatekeeper",
                    tier="verify",
                    action=action,
                    operation=operation,
                    level=level,
                )
                continue
            await self._pause(
                agent,
                element,
                eid,
                "permission",
                action,
                reason,
                audit=False,
                operation=operation,
                level=level,
                reason=reason,
                trigger="gatekeeper",
            )

    async def _hard_block(self, agent: str, element: str, eid: str, reason: str, action: str, trigger: str | None) -> None:
        """danger_zone (CORE §8.8.1, §8.8.3): persisted; lifted only by verify_challenge or an admin.
        Keyed by identity: every element and execution of that identity is stopped."""
        ch = await self.challenges.create(
            agent, HOLDS["block"].challenge, action=action, reason=reason, execution_id=eid, element_name=element
        )
        await self.store.put(
            NS_BLOCK,
            agent,
            {
                "agent": agent,
                "element_name": element,
                "reason": reason,
                "action": action[:500],
                "challenge_id": ch["id"],
                "blocked_at": now_iso(),
                "execution_id": eid,
            },
        )
        await self.audit(
            "AGENT_BLOCKED", agent=agent, element_name=element, execution_id=eid, challenge_id=ch["id"], trigger=trigger
        )

    # ---- the operation specs --------------------------------------------------------------------

    def operations(self) -> list[OperationSpec]:
        """The six reserved operations as specs (built at the protocol level: safety sits
        below the adapter layer, so it does not use the Python adapter API)."""
        loop = self
        cfg = self.cfg
        ext = {"reserved": True, "safety_loop": True}
        string = {"type": "string"}
        eid_doc = "Execution id (default: the agent's running execution)"

        def p(
            name: str, doc: str, schema: dict[str, Any] | None = None, *, required: bool = False, sensitive: bool = False
        ) -> ParamSpec:
            return ParamSpec(name, dict(schema or string), required, doc, sensitive=sensitive)

        async def execute_agent(
            element_name: str, ctx: Context, goal: str | None = None, parameters: dict[str, Any] | None = None
        ) -> dict[str, Any]:
            return await loop.execute_agent(element_name, goal, parameters, ctx)

        async def record_execution_step(
            element_name: str,
            next_action_hint: str,
            ctx: Context,
            step_description: str | None = None,
            outcome: str | None = None,
            findings: str | None = None,
            execution_id: str | None = None,
        ) -> dict[str, Any]:
            return await loop.record_execution_step(
                element_name, next_action_hint, step_description, outcome, findings, execution_id, ctx
            )

        async def complete_execution(
            element_name: str, ctx: Context, execution_id: str | None = None, summary: str | None = None
        ) -> dict[str, Any]:
            return await loop.complete_execution(element_name, execution_id, summary, ctx)

        async def abort_execution(
            element_name: str, ctx: Context, execution_id: str | None = None, reason: str | None = None
        ) -> dict[str, Any]:
            return await loop.abort_execution(element_name, execution_id, reason, ctx)

        async def confirm_operation(
            challenge_id: str, code: str, ctx: Context, element_name: str | None = None
        ) -> dict[str, Any]:
            return await loop.confirm_operation(challenge_id, code, element_name, ctx)

        async def verify_challenge(challenge_id: str, code: str, ctx: Context) -> dict[str, Any]:
            return await loop.verify_challenge(challenge_id, code, ctx)

        defaults = (
            f"Defaults: max_autonomous_steps={cfg.max_autonomous_steps}, risk_tolerance={cfg.risk_tolerance}; mode={self.mode}."
        )
        directive = TypeRef(
            "AutonomyDirective",
            "object",
            "{continue, factors, stopped?, reason?, stepsRemaining?, nextStepRisk?, notifications?}",
        )
        state = TypeRef("ExecutionState", "object", "{execution_id, status, started_at?, finished_at?, ...}")
        verified = TypeRef("VerificationResult", "object", "{verified, challenge_id, element_name, kind, ...}")
        table: list[tuple[Any, Category, str, tuple[ParamSpec, ...], TypeRef, dict[str, Any]]] = [
            (
                execute_agent,
                Category.EXECUTE,
                "Start a monitored execution (execution safety loop): status running, or pending until a human "
                "approves it when approval to start is required. Refused while the agent is hard-blocked.",
                (
                    p("element_name", "Name of the agent starting a monitored execution", required=True),
                    p("goal", "What the agent intends to achieve"),
                    p("parameters", "Agent-specific start parameters", {"type": "object"}),
                ),
                state,
                {"lifecycle": dict(LIFECYCLE_INFO)},
            ),
            (
                record_execution_step,
                Category.CREATE,
                "Report the next intended action and receive an AutonomyDirective {continue, factors, stopped?, "
                "reason?, stepsRemaining, nextStepRisk, notifications}. Proceed only when continue is true. " + defaults,
                (
                    p("element_name", "The agent reporting the step", required=True),
                    p("next_action_hint", "The intended next action: tool, target and intent", required=True),
                    p("step_description", "The action just completed"),
                    p("outcome", "Result of the previous step", {"type": "string", "enum": ["success", "failure", "skipped"]}),
                    p("findings", "Observations from the completed step"),
                    p("execution_id", eid_doc),
                ),
                directive,
                {},
            ),
            (
                complete_execution,
                Category.EXECUTE,
                "Finish a monitored execution normally: running → completed.",
                (
                    p("element_name", "The agent finishing", required=True),
                    p("execution_id", eid_doc),
                    p("summary", "What was achieved"),
                ),
                state,
                {},
            ),
            (
                abort_execution,
                Category.EXECUTE,
                "Stop a monitored execution: pending or running → cancelled.",
                (
                    p("element_name", "The agent stopping", required=True),
                    p("execution_id", eid_doc),
                    p("reason", "Why the execution stops"),
                ),
                state,
                {},
            ),
            (
                confirm_operation,
                Category.EXECUTE,
                "Human approval of a paused action or gatekeeper block, or of a pending start (pending → running), "
                "with the code shown to the operator out of band.",
                (
                    p("challenge_id", "verificationId from a permission_pending or autonomy_pause notification", required=True),
                    p("code", "Approval code shown to the human operator (never to the agent)", required=True, sensitive=True),
                    p("element_name", "Who is confirming (must not be the paused agent)"),
                ),
                verified,
                {},
            ),
            (
                verify_challenge,
                Category.CREATE,
                "Submit an out-of-band verification code (verify tier or danger zone hard block).",
                (
                    p("challenge_id", "verificationId from an autonomy_pause or danger_zone notification", required=True),
                    p(
                        "code",
                        "Verification code shown to the human operator (never to the agent)",
                        required=True,
                        sensitive=True,
                    ),
                ),
                verified,
                {},
            ),
        ]
        return [
            OperationSpec(
                fn.__name__,
                cat,
                doc,
                handler=fn,
                params=params,
                returns=ret,
                context_param="ctx",
                is_async=True,
                origin="mcpaql.safety",
                extensions=dict(ext),
                types=_TYPES,
                **extra,
            )
            for fn, cat, doc, params, ret, extra in table
        ]


def _running(identity: str, element: str) -> str:
    """The store key of an element's running-execution pointer, within its identity."""
    return f"running:{identity}\x1f{element}"


def _f(name: str, type_: str, required: bool, description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "description": description, **extra}


# CORE §8.7.1 / §8.7.3 shapes for ``introspect types`` (names as the spec spells them).
_TYPES = (
    TypeSpec("SafetyTier", "enum", "Risk tier of an evaluated action", values=("advisory", "confirm", "verify", "danger_zone")),
    TypeSpec(
        "AutonomyDirective",
        "object",
        "Whether the agent may proceed with the reported action",
        fields=(
            _f("continue", "boolean", True, "May the agent proceed"),
            _f("factors", "array", True, "Human-readable decision factors"),
            _f("stopped", "boolean", False, "Hard-blocked until out-of-band verification"),
            _f("reason", "string", False, "Why paused or stopped"),
            _f("stepsRemaining", "integer", False, "Steps before the mandatory pause"),
            _f(
                "nextStepRisk", "string", False, "SafetyTier of the action", enum=["advisory", "confirm", "verify", "danger_zone"]
            ),
            _f("notifications", "array", False, "AgentNotification events since the last step"),
        ),
    ),
    TypeSpec(
        "AgentNotification",
        "object",
        "An event delivered on the next record_execution_step",
        fields=(
            _f(
                "type",
                "string",
                True,
                "Notification type",
                enum=["permission_pending", "autonomy_pause", "danger_zone", "status", "error"],
            ),
            _f("message", "string", True, "Human-readable description"),
            _f("metadata", "object", False, "operation, reason, level, verificationId"),
            _f("timestamp", "string", True, "ISO 8601"),
        ),
    ),
    TypeSpec(
        "ExecutionState",
        "object",
        "State of a monitored execution (CORE §8.4.3)",
        fields=(
            _f("execution_id", "string", True, "Execution id"),
            _f("status", "string", True, "Core state", enum=["pending", "running", "completed", "failed", "cancelled"]),
            _f("started_at", "string", False, "ISO 8601"),
            _f("finished_at", "string", False, "ISO 8601"),
        ),
    ),
    TypeSpec(
        "VerificationResult",
        "object",
        "Outcome of confirm_operation / verify_challenge",
        fields=(
            _f("verified", "boolean", True, "The code was right"),
            _f("challenge_id", "string", True, "The challenge"),
            _f("element_name", "string", True, "The agent it concerned"),
            _f("kind", "string", True, "confirm, verify or danger_zone"),
        ),
    ),
)
