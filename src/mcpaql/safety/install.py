"""Wiring: :class:`SafetyConfig` (one place for every safety knob), :class:`Safety` (the built
services sharing one store) and :func:`install_safety`, which puts the gatekeeper guard and,
when a loop mode is set, the reserved safety-loop operations into an Adapter, an unfrozen
Registry or (guards only) an Engine. :func:`guard_engine` builds the stand-alone "safety
dongle" (ESL §2): the loop operations plus introspection and nothing else.

Safety sits below the adapter layer (ARCHITECTURE "Layers"), so an Adapter is recognised by
its shape (``add``, ``guards``, ``capabilities``) rather than imported.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, runtime_checkable

from ..config import Config
from ..protocol.dispatch import Engine
from ..protocol.operations import OperationSpec
from ..protocol.registry import Registry
from ..store.base import Store, open_store
from .audit import Auditor
from .autonomy import AutonomyConfig
from .confirmation import ConfirmationService
from .danger import TrustLevel
from .gatekeeper import Gatekeeper as GatekeeperGuard
from .gatekeeper import PolicyRule
from .identity import agent_id
from .loop import MODES, SafetyLoop
from .ratelimit import Quota, RateLimiter, RateRule
from .verification import Challenges, DisplayChannel, OSDialogChannel, WebhookChannel


@runtime_checkable
class AdapterLike(Protocol):
    """What install_safety needs from :class:`mcpaql.Adapter` (duck-typed, see module doc)."""

    name: str
    guards: list[Any]
    capabilities: dict[str, Any]

    def add(self, spec: OperationSpec) -> OperationSpec: ...


@dataclass
class SafetyConfig:
    """Every safety setting. ``trust`` None means no trust block: ``untested`` (REQ-TRUST-009),
    which allows only introspection — set it for a real adapter."""

    trust: str | None = None
    policies: list[dict[str, Any]] = field(default_factory=list)
    danger_overrides: dict[str, Any] = field(default_factory=dict)
    danger_patterns: bool = True
    confirm_destructive: bool = True
    token_ttl_seconds: float = 300.0
    forbidden_token_ttl_seconds: float = 120.0
    quota_token_ttl_seconds: float = 300.0
    clock_skew_tolerance_seconds: float = 30.0
    persist_tokens: bool = False
    rate_limits: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    loop_mode: str | None = None  # enforcing | monitoring | logging | disabled; None: no safety loop
    approve_start: bool = False  # execute_agent waits for a human approval code (REQ-LOOP-007)
    autonomy: dict[str, Any] = field(default_factory=dict)
    challenge_ttl_seconds: float = 300.0
    max_failed_verifications: int = 10
    failure_window_seconds: int = 60
    store: str | None = None  # sqlite:///path | redis://host:port/db; None: ~/.mcpaql/safety.db
    describe_danger: bool = True  # append each operation's danger level to its description
    webhook_url: str | None = None
    os_dialog: bool = False
    gatekeeper: bool = True
    # Identity of callers whose transport established none (no auth): every client of this
    # server; None → $MCPAQL_AGENT_ID → "default" (docs/safety.md "Identity").
    agent_id: str | None = None

    def __post_init__(self) -> None:
        TrustLevel.parse(self.trust)  # validate early (REQ-TRUST-009)
        agent_id(self.agent_id)
        if self.loop_mode is not None and self.loop_mode not in MODES:
            raise ValueError(f"loop_mode must be one of {', '.join(MODES)}, got {self.loop_mode!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SafetyConfig:
        known = {f.name for f in fields(cls)}
        bad = set(d) - known
        if bad:
            raise ValueError(f"unknown safety setting(s): {', '.join(sorted(bad))}")
        return cls(**d)


class Safety:
    """The safety services of one adapter, sharing one store."""

    def __init__(self, config: SafetyConfig, adapter: str, store: Store | None = None,
                 channels: list[DisplayChannel] | None = None) -> None:
        self.config = config
        self.adapter = adapter
        self.store = store if store is not None else open_store(config.store)
        self.audit = Auditor(self.store, adapter)
        self.trust = TrustLevel.parse(config.trust)
        self.agent_id = agent_id(config.agent_id)
        self.tokens = ConfirmationService(
            self.store, adapter, ttl_seconds=config.token_ttl_seconds,
            forbidden_ttl_seconds=config.forbidden_token_ttl_seconds,
            quota_ttl_seconds=config.quota_token_ttl_seconds,
            clock_skew_tolerance_seconds=config.clock_skew_tolerance_seconds, persist=config.persist_tokens,
            audit=self.audit, agent_id=self.agent_id,
        )
        rules = [RateRule.parse(r) for r in config.rate_limits]
        quotas = [Quota.parse(q) for q in config.quotas]
        self.limiter = RateLimiter(self.store, adapter, rules, quotas, self.tokens) if rules or quotas else None
        chans = list(channels or [])
        if config.webhook_url:
            chans.append(WebhookChannel(config.webhook_url))
        if config.os_dialog and OSDialogChannel.available():
            chans.append(OSDialogChannel())
        self.challenges = Challenges(self.store, chans, ttl_seconds=config.challenge_ttl_seconds,
                                     max_failures=config.max_failed_verifications,
                                     failure_window_seconds=config.failure_window_seconds, audit=self.audit)
        self.loop: SafetyLoop | None = None
        if config.loop_mode is not None:
            self.loop = SafetyLoop(self.store, self.challenges, mode=config.loop_mode,
                                   autonomy=AutonomyConfig.parse(config.autonomy), audit=self.audit,
                                   approve_start=config.approve_start, agent_id=self.agent_id)
        self.gatekeeper = GatekeeperGuard(
            adapter, self.trust, self.tokens, self.limiter, self.audit,
            policies=[PolicyRule.parse(p) for p in config.policies], danger_overrides=config.danger_overrides,
            use_patterns=config.danger_patterns, confirm_destructive=config.confirm_destructive, loop=self.loop,
        )

    @property
    def guards(self) -> list[Any]:
        """The engine guards, run for every operation in every mode and batch item: blocks and
        pauses of the caller's identity first (an enforcing loop), then the gatekeeper."""
        first = [self.loop.guard] if self.loop is not None and self.loop.mode == "enforcing" else []
        if self.config.gatekeeper:
            return [*first, self.gatekeeper]
        if self.limiter is not None:  # rate limits without danger gating (e.g. an adapter file's own limits)
            limiter = self.limiter

            async def rate_limits_only(compiled: Any, values: dict[str, Any], ctx: Any) -> None:
                await limiter.check(compiled.spec, values, ctx)

            return [*first, rate_limits_only]
        return first

    def engine(self, registry: Registry, config: Config | None = None, **kw: Any) -> Engine:
        """An Engine for an unfrozen ``registry`` with this safety in it: danger notes in the
        descriptions, the loop operations, the guard, capabilities and introspect queries.

        For holders that rebuild their engine (a wrapped upstream whose tools changed, an adapter
        file's runtime): they keep one Safety — one store, so confirmation tokens issued before a
        rebuild, rate windows and agent blocks all carry over.
        """
        if self.config.gatekeeper and self.config.describe_danger:
            registry.rewrite(lambda spec: _with_danger_note(self, spec))
        if self.loop is not None:
            for spec in self.loop.operations():
                registry.add(spec, reserved_ok=True)
        caps = {**kw.pop("capabilities", {}), **self.capabilities()}
        engine = Engine(registry, config, guards=[*kw.pop("guards", []), *self.guards], capabilities=caps, **kw)
        engine.introspect_queries.update(self.introspect_queries())
        return engine

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"confirmation": bool(self.config.gatekeeper), "dangerous_operations": True,
                                "trust_level": self.trust.label}  # REQ-TRUST-010 (capabilities are open)
        if self.loop is not None:
            caps["execution_safety_loop"] = self.loop.mode
            caps["execution_safety_loop_config"] = self.loop.cfg.describe()  # REQ-AUTO-009 defaults
        return caps

    def introspect_queries(self) -> dict[str, Any]:
        """Extension ``introspect`` queries (INTRO §8.3(3); Part F #20): ``quota_status``
        (RATE §6, REQ-RATE-004) and ``adapter_info`` (TRUST §6.4, REQ-TRUST-010)."""

        async def quota_status(ctx: Any, name: Any) -> dict[str, Any]:
            if self.limiter is None:
                return {"adapter": self.adapter, "api_limits": [], "quotas": [], "next_reset": None}
            return await self.limiter.status()

        async def adapter_info(ctx: Any, name: Any) -> dict[str, Any]:
            return {"name": self.adapter, "trust": {"level": self.trust.label}}

        return {"quota_status": quota_status, "adapter_info": adapter_info}

    def add_channel(self, channel: DisplayChannel) -> None:
        self.challenges.channels.append(channel)

    async def close(self) -> None:
        await self.challenges.close()
        await self.store.close()


def install_safety(target: AdapterLike | Registry | Engine, config: SafetyConfig | dict[str, Any] | None = None, *,
                   store: Store | None = None, channels: list[DisplayChannel] | None = None) -> Safety:
    """Switch safety on for ``target``. For an Adapter, engines built afterwards by
    ``adapter.engine()`` carry the guard and capabilities; for a Registry, pass
    ``guards=safety.guards, capabilities=safety.capabilities()`` to ``Engine``; an Engine gets
    the guard and capabilities in place but cannot gain the loop operations (frozen)."""
    cfg = config if isinstance(config, SafetyConfig) else SafetyConfig.from_dict(config or {})
    if isinstance(target, Engine):
        name = target.registry.adapter
    elif isinstance(target, Registry):
        name = target.adapter
    elif isinstance(target, AdapterLike):
        name = target.name
    else:
        raise TypeError("install_safety needs an Adapter, a Registry or an Engine")
    safety = Safety(cfg, name, store, channels)
    if isinstance(target, Engine):
        if safety.loop is not None and target.compiled("record_execution_step") is None:
            raise ValueError("an Engine's registry is frozen: install the safety loop on its Adapter or Registry")
        target.guards.extend(safety.guards)
        target.capabilities.update(safety.capabilities())
        target.introspect_queries.update(safety.introspect_queries())
        return safety
    if safety.loop is not None:
        for spec in safety.loop.operations():
            if isinstance(target, Registry):
                target.add(spec, reserved_ok=True)
            else:
                target.add(spec)
    if isinstance(target, AdapterLike):
        specs = getattr(target, "_specs", None)
        if cfg.gatekeeper and cfg.describe_danger and isinstance(specs, list):
            specs[:] = [_with_danger_note(safety, s) for s in specs]
        target.guards.extend(safety.guards)
        target.capabilities.update(safety.capabilities())
        queries = getattr(target, "introspect_queries", None)
        if isinstance(queries, dict):
            queries.update(safety.introspect_queries())
    return safety


async def open_safety(config: SafetyConfig | dict[str, Any] | None, adapter: str,
                      stack: contextlib.AsyncExitStack) -> Safety | None:
    """The :class:`Safety` of an engine holder for its lifetime (closed with ``stack``), or None."""
    if config is None:
        return None
    cfg = config if isinstance(config, SafetyConfig) else SafetyConfig.from_dict(dict(config))
    safety = Safety(cfg, adapter)
    stack.push_async_callback(safety.close)
    return safety


def _with_danger_note(safety: Safety, spec: OperationSpec) -> OperationSpec:
    """REQ-DANGER-010: danger information in introspection. OperationDetails is a closed
    schema, so it goes in the description text (Part F #5)."""
    if spec.extensions.get("safety_loop") or spec.name == "introspect" or "Danger level:" in spec.description:
        return spec
    danger = safety.gatekeeper.danger_of_spec(spec)
    permission, _ = safety.gatekeeper.decide(spec.name, danger)
    what = {"allow": "allowed", "confirm": "requires confirmation (resend with params._confirmation)",
            "deny": "denied by this adapter's trust level", "introspect_only": "denied by this adapter's trust level"}
    note = f" Danger level: {danger.level.label}; {what[permission]}."
    return replace(spec, description=spec.description.rstrip() + note)


def guard_engine(config: SafetyConfig | dict[str, Any] | None = None, *, store: Store | None = None,
                 channels: list[DisplayChannel] | None = None, engine_config: Config | None = None,
                 name: str = "safety") -> tuple[Engine, Safety]:
    """The safety dongle: an Engine with only the safety-loop operations (plus introspect).

    The loop operations are exempt from danger gating, so the dongle's own trust level does
    not matter; ``loop_mode`` defaults to ``enforcing``.
    """
    cfg = config if isinstance(config, SafetyConfig) else SafetyConfig.from_dict(config or {})
    if cfg.loop_mode is None:
        cfg.loop_mode = "enforcing"
    registry = Registry(name, display_name="Safety Guard",
                        description="Execution safety loop: report every intended action before taking it.")
    safety = install_safety(registry, cfg, store=store, channels=channels)
    engine = Engine(registry, engine_config, guards=safety.guards, capabilities=safety.capabilities())
    engine.introspect_queries.update(safety.introspect_queries())
    return engine, safety
