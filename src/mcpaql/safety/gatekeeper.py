"""The safety gatekeeper guard: layers 2–4 of GK §2.1 for every call that reaches a handler —
in every endpoint mode and for every batch item, because :class:`~mcpaql.protocol.Engine`
runs its guards inside ``run_one`` after binding.

Order: danger classification → trust×danger matrix (DANGER §4) → per-adapter/per-operation
policy rules (globs; most restrictive wins, GK §3.2) → rate limits and quotas → confirmation
token (issue ``CONFIRMATION_REQUIRED`` or redeem ``params._confirmation``). Rate limiting
runs before redemption so a refused call never burns a token. Introspection and the
reserved safety-loop operations are exempt from danger gating (they have their own rules).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol.compile import CompiledOperation
from ..protocol.context import Context
from ..protocol.errors import MCPAQLError
from ..protocol.operations import OperationSpec
from .audit import Auditor, redact
from .confirmation import ConfirmationRequired, ConfirmationService
from .danger import ALLOW, CONFIRM, DENY, INTROSPECT_ONLY, Danger, DangerLevel, TrustLevel, classify, gate, glob
from .danger import minimum_trust as min_trust
from .ratelimit import RateLimiter

if TYPE_CHECKING:
    from .loop import SafetyLoop

_RANK = {ALLOW: 0, CONFIRM: 1, DENY: 2}
PURGE_EVERY = 600.0
PERMISSIONS = tuple(_RANK)


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """``{adapter: glob, operation: glob, permission: allow|confirm|deny}`` (GK §2.4)."""

    operation: str = "*"
    permission: str = CONFIRM
    adapter: str = "*"

    def __post_init__(self) -> None:
        if self.permission not in _RANK:
            raise ValueError(f"policy permission must be allow, confirm or deny, got {self.permission!r}")

    @classmethod
    def parse(cls, d: dict[str, Any]) -> PolicyRule:
        return cls(str(d.get("operation", "*")), str(d.get("permission", CONFIRM)), str(d.get("adapter", "*")))

    def applies(self, adapter: str, operation: str) -> bool:
        return glob(self.adapter, adapter) and glob(self.operation, operation)


class Gatekeeper:
    def __init__(
        self,
        adapter: str,
        trust: TrustLevel,
        tokens: ConfirmationService,
        limiter: RateLimiter | None,
        audit: Auditor,
        *,
        policies: list[PolicyRule] | None = None,
        danger_overrides: dict[str, Any] | None = None,
        use_patterns: bool = True,
        confirm_destructive: bool = True,
        loop: SafetyLoop | None = None,
    ) -> None:
        self.adapter = adapter
        self.trust = trust
        self.tokens = tokens
        self.limiter = limiter
        self.audit = audit
        self.policies = list(policies or [])
        self.overrides = dict(danger_overrides or {})
        self.use_patterns = use_patterns
        self.confirm_destructive = confirm_destructive
        self.loop = loop
        self._danger: dict[str, Danger] = {}
        # Trust, policies and danger are fixed for the adapter's lifetime, so each operation's
        # verdict is computed once and the allowed path is a dictionary lookup.
        self._verdicts: dict[str, tuple[Danger, str, str]] = {}
        self._next_purge = 0.0

    def danger_of(self, compiled: CompiledOperation) -> Danger:
        return self.danger_of_spec(compiled.spec)

    def danger_of_spec(self, spec: OperationSpec) -> Danger:
        d = self._danger.get(spec.name)
        if d is None:
            d = self._danger[spec.name] = classify(spec, self.overrides, use_patterns=self.use_patterns)
        return d

    def decide(self, operation: str, danger: Danger) -> tuple[str, str]:
        """(permission, source) for one call: matrix, floor, then policy rules; strictest wins."""
        verdict = gate(self.trust, danger.level)
        source = "trust_matrix"
        if verdict == INTROSPECT_ONLY:
            return INTROSPECT_ONLY, source
        if self.confirm_destructive and danger.level >= DangerLevel.DESTRUCTIVE and verdict == ALLOW:
            verdict, source = CONFIRM, "danger_floor"  # DANGER §7.1(2): confirm destructive and higher
        for rule in self.policies:
            if rule.applies(self.adapter, operation) and _RANK[rule.permission] > _RANK[verdict]:
                verdict, source = rule.permission, f"policy:{rule.adapter}/{rule.operation}"
        return verdict, source

    async def __call__(self, compiled: CompiledOperation, values: dict[str, Any], ctx: Context) -> None:
        spec = compiled.spec
        self._hook(ctx)
        now = time.monotonic()
        if now >= self._next_purge:  # CT §5.5: expired tokens/challenges gone within the hour
            self._next_purge = now + PURGE_EVERY
            await self.tokens.store.purge()
        if spec.name == "introspect" or spec.extensions.get("safety_loop"):
            if self.limiter is not None:
                await self.limiter.check(spec, values, ctx)
            return
        cached = self._verdicts.get(spec.name)
        if cached is None:
            danger = self.danger_of(compiled)
            cached = self._verdicts[spec.name] = (danger, *self.decide(spec.name, danger))
        danger, permission, source = cached
        logged = danger.level >= DangerLevel.DESTRUCTIVE
        if permission in (DENY, INTROSPECT_ONLY):
            await self._log(spec.name, spec.family, danger, "denied", source, values, ctx)
            raise self._denied(spec.name, danger, permission, source)
        if self.limiter is not None:
            await self.limiter.check(spec, values, ctx)
        if permission == ALLOW:
            if logged:
                await self._log(spec.name, spec.family, danger, "allowed", source, values, ctx)
            return
        token = ctx.request_meta.get("_confirmation")
        identity, bound_session = self.tokens.caller(ctx)
        if token is None:
            ttl = self.tokens.forbidden_ttl if danger.level is DangerLevel.FORBIDDEN else None
            reasons = list(danger.reasons) or [f"{spec.category.value} operation classified {danger.level.label}"]
            msg = danger.message(spec.name, values)
            issued = await self.tokens.issue(
                "confirmation",
                spec.name,
                values,
                identity,
                bound_session,
                ttl=ttl,
                context={"danger_level": danger.level.label, "reasons": reasons},
            )
            await self.audit(
                "CONFIRMATION_REQUIRED",
                operation=spec.name,
                endpoint=spec.family,
                result="denied",
                reason=source,
                token_id=issued.token_id,
                adapter_trust=self.trust.label,
                danger_level=int(danger.level),
                session_id=ctx.session.id,
                identity=identity,
            )
            if self.loop is not None:
                await self.loop.note_permission_pending(identity, spec.name, danger.level.label, msg)
            raise ConfirmationRequired(
                "This operation requires confirmation: resend the same request with "
                "params._confirmation set to the confirmation_token",
                {
                    "operation": spec.name,
                    "danger_level": danger.level.label,
                    "reasons": reasons,
                    "confirmation_message": msg,
                    "confirmation_token": issued.token,
                    "expires_at": issued.expires_iso,
                },
                {"token": issued.token, "expires_at": issued.expires_iso, "message": msg, "reasons": reasons},
            )
        try:
            rec = await self.tokens.redeem("confirmation", token, spec.name, values, identity, bound_session)
        except MCPAQLError:
            await self._log(spec.name, spec.family, danger, "denied", "token_rejected", values, ctx)
            raise
        await self.audit(
            "CONFIRMATION_GRANTED",
            operation=spec.name,
            endpoint=spec.family,
            result="confirmed",
            token_id=rec["id"],
            adapter_trust=self.trust.label,
            danger_level=int(danger.level),
            session_id=ctx.session.id,
            identity=identity,
        )
        if logged:
            await self._log(spec.name, spec.family, danger, "confirmed", source, values, ctx, rec["id"])

    def _denied(self, op: str, danger: Danger, permission: str, source: str) -> MCPAQLError:
        if permission == INTROSPECT_ONLY:
            return MCPAQLError(
                "PERMISSION_TRUST_LEVEL_INSUFFICIENT",
                f"Operation '{op}' requires trust level 'generated', adapter has '{self.trust.label}'",
                {
                    "operation": op,
                    "required_trust": "generated",
                    "actual_trust": self.trust.label,
                    "danger_level": int(danger.level),
                },
            )
        if source == "trust_matrix":
            need = min_trust(danger.level)
            return MCPAQLError(
                "PERMISSION_DANGER_LEVEL_DENIED",
                f"Operation '{op}' (danger: {danger.level.label}) denied for adapter trust level '{self.trust.label}'",
                {
                    "operation": op,
                    "danger_level": danger.level.label,
                    "adapter_trust": self.trust.label,
                    "minimum_trust_required": need.label,
                    **({"reasons": list(danger.reasons)} if danger.reasons else {}),
                },
            )
        return MCPAQLError(
            "PERMISSION_DENIED",
            f"Permission denied: 'operation {op} is denied by policy'",
            {"reason": "policy", "operation": op, "policy": source.removeprefix("policy:")},
        )

    async def _log(
        self,
        op: str,
        endpoint: str,
        danger: Danger,
        outcome: str,
        reason: str,
        values: dict[str, Any],
        ctx: Context,
        token_id: str | None = None,
    ) -> None:
        if outcome == "denied":
            await self.audit(
                "OPERATION_DENIED",
                operation=op,
                endpoint=endpoint,
                result="denied",
                reason=reason,
                adapter_trust=self.trust.label,
                danger_level=int(danger.level),
                session_id=ctx.session.id,
            )
        if danger.level >= DangerLevel.DESTRUCTIVE:  # DANGER §7.4
            await self.audit(
                "DANGEROUS_OPERATION",
                operation=op,
                danger_level=int(danger.level),
                adapter_trust=self.trust.label,
                outcome=outcome,
                token_id=token_id,
                parameters=redact(values),
                session_id=ctx.session.id,
            )

    def _hook(self, ctx: Context) -> None:
        st = ctx.session.state
        if ctx.session.per_request or st.get("mcpaql.safety.gate_hook"):
            return  # a per-request session's tokens are bound to the identity, not to it
        st["mcpaql.safety.gate_hook"] = True
        sid = ctx.session.id
        tokens = self.tokens

        async def close(_s: Any) -> None:
            if not tokens.persist:
                await tokens.revoke_session(sid)

        ctx.session.on_close(close)
