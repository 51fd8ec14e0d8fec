"""Rate limits and quotas (RATE; CHECKLIST REQ-RATE-*), counted in fixed windows in the store
so every process sharing it enforces one limit.

* A :class:`RateRule` limits calls per ``second|minute|hour|day`` for the whole adapter
  (``global``), an endpoint family, a semantic category, an operation (glob), for each session
  (``per_session``) or for each caller identity (``per_identity``: the authenticated subject
  over HTTP, docs/auth.md — a caller cannot reset it by opening new sessions, and every process
  sharing the store counts it once). Over the limit → ``RATE_LIMIT_EXCEEDED`` with
  ``retry_after_seconds``.
* A :class:`Quota` (also ``per_identity`` if asked) has three thresholds (RATE §3.2): ``warn`` adds a
  ``RATE_LIMIT_QUOTA_WARNING`` to the success response, ``pause`` answers
  ``RATE_LIMIT_QUOTA_PAUSE`` with a ``quota_continue_…`` token (resend it as
  ``params._quota_continue``; once accepted the rest of that window proceeds), ``hard_stop``
  answers ``RATE_LIMIT_QUOTA_EXHAUSTED``.

A request that is refused does not consume quota or rate budget (its increment is undone).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocol.context import Context
from ..protocol.errors import MCPAQLError
from ..protocol.operations import OperationSpec
from ..store.base import NS_MARK, Store, Window
from .audit import iso
from .confirmation import ConfirmationService
from .danger import glob

WINDOWS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
SCOPES = ("global", "endpoint", "category", "operation")
METRICS = {"requests_per_minute": "minute", "requests_per_hour": "hour", "requests_per_day": "day"}


@dataclass(frozen=True, slots=True)
class RateRule:
    limit: int
    window: str = "minute"
    scope: str = "global"
    match: str = "*"
    per_session: bool = False
    per_identity: bool = False

    def __post_init__(self) -> None:
        if self.window not in WINDOWS:
            raise ValueError(f"rate window must be one of {', '.join(WINDOWS)}, got {self.window!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"rate scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")
        if not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"rate limit must be a positive integer, got {self.limit!r}")

    @classmethod
    def parse(cls, d: dict[str, Any]) -> RateRule:
        match = d.get("match") or d.get("endpoint") or d.get("category") or d.get("operation") or "*"
        return cls(
            int(d["limit"]),
            d.get("window", "minute"),
            d.get("scope", "global"),
            str(match),
            bool(d.get("per_session", False)),
            bool(d.get("per_identity", False)),
        )

    def applies(self, spec: OperationSpec) -> bool:
        if self.scope == "global":
            return True
        subject = {"endpoint": spec.family, "category": spec.category.value, "operation": spec.name}[self.scope]
        return glob(self.match, subject)


@dataclass(frozen=True, slots=True)
class Quota:
    metric: str
    warn: int
    pause: int
    hard_stop: int | None = None
    per_identity: bool = False

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"quota metric must be one of {', '.join(METRICS)}, got {self.metric!r}")
        if not self.warn <= self.pause or (self.hard_stop is not None and self.hard_stop < self.pause):
            raise ValueError("quota thresholds must satisfy warn <= pause <= hard_stop")

    @classmethod
    def parse(cls, d: dict[str, Any]) -> Quota:
        hs = d.get("hard_stop")
        return cls(d["metric"], int(d["warn"]), int(d["pause"]), None if hs is None else int(hs), bool(d.get("per_identity")))

    @property
    def seconds(self) -> int:
        return WINDOWS[METRICS[self.metric]]


class RateLimiter:
    def __init__(
        self,
        store: Store,
        adapter: str,
        rules: list[RateRule],
        quotas: list[Quota],
        tokens: ConfirmationService,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock  # wall-clock seconds; injectable so windows are tested without sleeping
        self.store = store
        self.adapter = adapter
        self.rules = rules
        self.quotas = quotas
        self.tokens = tokens

    def _rule_key(self, i: int, rule: RateRule, session_id: str, identity: str = "") -> str:
        key = f"rl:{self.adapter}:{i}:{rule.scope}:{rule.match}"
        if rule.per_identity:
            return f"{key}:id:{identity}"
        return f"{key}:{session_id}" if rule.per_session else key

    def _quota_key(self, q: Quota, identity: str) -> str:
        key = f"q:{self.adapter}:{q.metric}"
        return f"{key}:id:{identity}" if q.per_identity else key

    async def check(self, spec: OperationSpec, values: dict[str, Any], ctx: Context) -> None:
        identity, session = self.tokens.caller(ctx)
        sid = session or f"identity:{identity}"  # a per-request session would reset the count each call
        taken: list[tuple[str, int]] = []
        now = self.clock()  # one instant per check: a refund lands in the window it was taken from
        try:
            for i, rule in enumerate(self.rules):
                if not rule.applies(spec):
                    continue
                key = self._rule_key(i, rule, sid, identity)
                seconds = WINDOWS[rule.window]
                w = await self.store.incr_window(key, seconds, now=now)
                taken.append((key, seconds))
                if w.count > rule.limit:
                    raise self._exceeded(rule, w, now)
            for q in self.quotas:
                key = self._quota_key(q, identity)
                w = await self.store.incr_window(key, q.seconds, now=now)
                taken.append((key, q.seconds))
                await self._quota(q, w, spec, values, ctx, identity)
        except MCPAQLError:
            for key, seconds in taken:  # refused requests consume no budget
                await self.store.incr_window(key, seconds, -1, now=now)
            raise

    @staticmethod
    def _exceeded(rule: RateRule, w: Window, now: float) -> MCPAQLError:
        return MCPAQLError(
            "RATE_LIMIT_EXCEEDED",
            f"Rate limit of '{rule.limit}' requests per '{rule.window}' reached",
            {
                "limit": rule.limit,
                "remaining": 0,
                "window": rule.window,
                "resets_at": iso(w.resets_at),
                "retry_after_seconds": w.retry_after(now),
                "scope": rule.scope,
            },
        )

    async def _quota(self, q: Quota, w: Window, spec: OperationSpec, values: dict[str, Any], ctx: Context, identity: str) -> None:
        current = w.count - 1  # requests already made in this window
        if q.hard_stop is not None and current >= q.hard_stop:
            raise MCPAQLError(
                "RATE_LIMIT_QUOTA_EXHAUSTED",
                f"Quota '{q.metric}' exhausted ('{current}' of '{q.hard_stop}')",
                {
                    "metric": q.metric,
                    "current": current,
                    "hard_stop_threshold": q.hard_stop,
                    "resets_at": iso(w.resets_at),
                    "retry_after_seconds": w.retry_after(self.clock()),
                },
            )
        if current >= q.pause:
            mark = f"qack:{self._quota_key(q, identity)}:{int(w.resets_at)}"
            if await self.store.get(NS_MARK, mark) is None:
                token = ctx.request_meta.get("_quota_continue")
                if token is None:
                    issued = await self.tokens.issue(
                        "quota_continue", spec.name, values, *self.tokens.caller(ctx), context={"quota_metric": q.metric}
                    )
                    details: dict[str, Any] = {
                        "metric": q.metric,
                        "current": current,
                        "pause_threshold": q.pause,
                        "confirmation_token": issued.token,
                        "expires_at": issued.expires_iso,
                        "retry_after_seconds": 0,
                    }
                    if q.hard_stop is not None:
                        details["hard_stop_threshold"] = q.hard_stop
                    raise MCPAQLError(
                        "RATE_LIMIT_QUOTA_PAUSE",
                        f"Quota '{q.metric}' pause threshold '{q.pause}' reached; resend with "
                        "'params._quota_continue' set to the 'confirmation_token' to continue",
                        details,
                    )
                await self.tokens.redeem("quota_continue", token, spec.name, values, *self.tokens.caller(ctx))
                await self.store.put(NS_MARK, mark, {"metric": q.metric}, purge_at=w.resets_at)
        if current >= q.warn:
            ctx.warn(
                "RATE_LIMIT_QUOTA_WARNING",
                "Approaching quota limit",
                {"metric": q.metric, "current": current + 1, "warn_threshold": q.warn, "pause_threshold": q.pause},
            )

    async def status(self, identity: str = "") -> dict[str, Any]:
        """The ``quota_status`` payload (RATE §6, REQ-RATE-004); per-identity quotas are the
        caller's own."""
        quotas = []
        resets: list[float] = []
        for q in self.quotas:
            w = await self.store.peek_window(self._quota_key(q, identity), q.seconds, now=self.clock())
            state = "ok"
            if q.hard_stop is not None and w.count >= q.hard_stop:
                state = "exhausted"
            elif w.count >= q.pause:
                state = "paused"
            elif w.count >= q.warn:
                state = "warn"
            quotas.append(
                {
                    "metric": q.metric,
                    "current": w.count,
                    "warn": q.warn,
                    "pause": q.pause,
                    "hard_stop": q.hard_stop,
                    "status": state,
                }
            )
            resets.append(w.resets_at)
        limits = []
        for i, rule in enumerate(self.rules):
            if rule.per_session and not rule.per_identity:
                continue
            w = await self.store.peek_window(self._rule_key(i, rule, "", identity), WINDOWS[rule.window], now=self.clock())
            limits.append(
                {
                    "scope": rule.scope,
                    "match": rule.match,
                    "limit": rule.limit,
                    "remaining": max(0, rule.limit - w.count),
                    "window": rule.window,
                    "resets_at": iso(w.resets_at),
                }
            )
            resets.append(w.resets_at)
        return {
            "adapter": self.adapter,
            "api_limits": limits,
            "quotas": quotas,
            "next_reset": iso(min(resets)) if resets else None,
        }
