"""Wiring: :class:`SafetyConfig` (one place for every safety knob), :class:`Safety` (the built
services sharing one store) and :func:`install_safety`, which puts the gatekeeper guard and,
when a loop mode is set, the reserved safety-loop operations into an Adapter, an unfrozen
Registry or (guards only) an Engine. :func:`guard_engine` builds the stand-alone "safety
dongle" (ESL §2): the loop operations plus introspection and nothing else.

Safety is an :class:`~mcpaql.protocol.extension.Extension` (:meth:`Safety.extension`): it is
given to an Adapter or Engine at build time and never patched into a built one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, runtime_checkable

from ..config import Config
from ..protocol.dispatch import Engine
from ..protocol.extension import Extension
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
class Extensible(Protocol):
    """What install_safety needs from :class:`mcpaql.Adapter`: safety sits below the adapter
    layer (ARCHITECTURE "Layers"), so an Adapter is recognised by its shape, not imported."""

    name: str

    def use(self, extension: Extension) -> Extension: ...


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

    def __init__(
        self,
        config: SafetyConfig,
        adapter: str,
        store: Store | None = None,
        channels: list[DisplayChannel] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        # Wall-clock seconds for every expiry and window of this layer (tokens, challenges,
        # pauses, rate windows, executions); tests move it instead of sleeping past a TTL.
        self.clock = clock
        self.adapter = adapter
        self.store = store if store is not None else open_store(config.store)
        self.audit = Auditor(self.store, adapter)
        self.trust = TrustLevel.parse(config.trust)
        self.agent_id = agent_id(config.agent_id)
        self.tokens = ConfirmationService(
            self.store,
            adapter,
            ttl_seconds=config.token_ttl_seconds,
            forbidden_ttl_seconds=config.forbidden_token_ttl_seconds,
            quota_ttl_seconds=config.quota_token_ttl_seconds,
            clock_skew_tolerance_seconds=config.clock_skew_tolerance_seconds,
            persist=config.persist_tokens,
            audit=self.audit,
            agent_id=self.agent_id,
            clock=clock,
        )
        rules = [RateRule.parse(r) for r in config.rate_limits]
        quotas = [Quota.parse(q) for q in config.quotas]
        self.limiter = RateLimiter(self.store, adapter, rules, quotas, self.tokens, clock=clock) if rules or quotas else None
        chans = list(channels or [])
        if config.webhook_url:
            chans.append(WebhookChannel(config.webhook_url))
        if config.os_dialog and OSDialogChannel.available():
            chans.append(OSDialogChannel())
        self.challenges = Challenges(
            self.store,
            chans,
            ttl_seconds=config.challenge_ttl_seconds,
            max_failures=config.max_failed_verifications,
            failure_window_seconds=config.failure_window_seconds,
            audit=self.audit,
            clock=clock,
        )
        self.loop: SafetyLoop | None = None
        if config.loop_mode is not None:
            self.loop = SafetyLoop(
                self.store,
                self.challenges,
                mode=config.loop_mode,
                autonomy=AutonomyConfig.parse(config.autonomy),
                audit=self.audit,
                approve_start=config.approve_start,
                agent_id=self.agent_id,
                clock=clock,
            )
        self.gatekeeper = GatekeeperGuard(
            adapter,
            self.trust,
            self.tokens,
            self.limiter,
            self.audit,
            policies=[PolicyRule.parse(p) for p in config.policies],
            danger_overrides=config.danger_overrides,
            use_patterns=config.danger_patterns,
            confirm_destructive=config.confirm_destructive,
            loop=self.loop,
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

    def extension(self) -> Extension:
        """Safety as an :class:`~mcpaql.protocol.extension.Extension`: danger notes in the
        descriptions (a rewrite), the loop operations, the guards, capabilities and introspect
        queries. Give it to an Adapter (``adapter.use``) or an Engine (``extensions=``)."""
        note = self.config.gatekeeper and self.config.describe_danger
        return Extension(
            "safety",
            operations=tuple(self.loop.operations()) if self.loop is not None else (),
            rewrite=(lambda spec: _with_danger_note(self, spec)) if note else None,
            guards=tuple(self.guards),
            capabilities=self.capabilities(),
            introspect_queries=self.introspect_queries(),
        )

    def engine(self, registry: Registry, config: Config | None = None, **kw: Any) -> Engine:
        """An Engine for an unfrozen ``registry`` with this safety in it (:meth:`extension`).

        For holders that rebuild their engine (a wrapped upstream whose tools changed, an adapter
        file's runtime): they keep one Safety — one store, so confirmation tokens issued before a
        rebuild, rate windows and agent blocks all carry over.
        """
        extensions = [*kw.pop("extensions", ()), self.extension()]
        return Engine(registry, config if config is not None else Config.load(), extensions=extensions, **kw)

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "confirmation": bool(self.config.gatekeeper),
            "dangerous_operations": True,
            "trust_level": self.trust.label,
        }  # REQ-TRUST-010 (capabilities are open)
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
            return await self.limiter.status(self.limiter.tokens.caller(ctx)[0])

        async def adapter_info(ctx: Any, name: Any) -> dict[str, Any]:
            return {"name": self.adapter, "trust": {"level": self.trust.label}}

        return {"quota_status": quota_status, "adapter_info": adapter_info}

    def add_channel(self, channel: DisplayChannel) -> None:
        self.challenges.channels.append(channel)

    async def close(self) -> None:
        await self.challenges.close()
        await self.store.close()


def install_safety(
    target: Extensible | Registry | Engine,
    config: SafetyConfig | dict[str, Any] | None = None,
    *,
    store: Store | None = None,
    channels: list[DisplayChannel] | None = None,
    clock: Callable[[], float] = time.time,
) -> Safety:
    """Switch safety on for ``target`` (a thin helper over :meth:`Safety.extension`).

    An Adapter gets the extension (``adapter.use``): engines built afterwards carry it. An
    unfrozen Registry gets the danger notes and the loop operations; pass
    ``guards=safety.guards, capabilities=safety.capabilities()`` to its ``Engine``. A built
    Engine is immutable and refused: give ``safety.extension()`` to its Adapter, or build a new
    engine with ``engine.extend(...)`` (guards, capabilities and queries only)."""
    cfg = config if isinstance(config, SafetyConfig) else SafetyConfig.from_dict(config or {})
    if isinstance(target, Engine):
        raise ValueError(
            "an Engine is built and immutable: install safety on its Adapter or Registry, "
            "or build a new engine with engine.extend(safety.extension())"
        )
    if isinstance(target, Registry):
        safety = Safety(cfg, target.adapter, store, channels, clock=clock)
        ext = safety.extension()
        if ext.rewrite is not None:
            target.rewrite(ext.rewrite)
        for spec in ext.operations:
            target.add(spec, reserved_ok=True)
        return safety
    if isinstance(target, Extensible):
        safety = Safety(cfg, target.name, store, channels, clock=clock)
        target.use(safety.extension())
        return safety
    raise TypeError("install_safety needs an Adapter or a Registry")


async def open_safety(
    config: SafetyConfig | Mapping[str, Any] | None, adapter: str, stack: contextlib.AsyncExitStack
) -> Safety | None:
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
    what = {
        "allow": "allowed",
        "confirm": "requires confirmation (resend with params._confirmation)",
        "deny": "denied by this adapter's trust level",
        "introspect_only": "denied by this adapter's trust level",
    }
    note = f" Danger level: {danger.level.label}; {what[permission]}."
    return replace(spec, description=spec.description.rstrip() + note)


def guard_engine(
    config: SafetyConfig | dict[str, Any] | None = None,
    *,
    store: Store | None = None,
    channels: list[DisplayChannel] | None = None,
    engine_config: Config | None = None,
    name: str = "safety",
) -> tuple[Engine, Safety]:
    """The safety dongle: an Engine with only the safety-loop operations (plus introspect).

    The loop operations are exempt from danger gating, so the dongle's own trust level does
    not matter; ``loop_mode`` defaults to ``enforcing``.
    """
    cfg = config if isinstance(config, SafetyConfig) else SafetyConfig.from_dict(config or {})
    if cfg.loop_mode is None:
        cfg = replace(cfg, loop_mode="enforcing")  # a copy: the caller's config is theirs
    registry = Registry(
        name, display_name="Safety Guard", description="Execution safety loop: report every intended action before taking it."
    )
    safety = Safety(cfg, name, store, channels)
    engine = Engine(registry, engine_config if engine_config is not None else Config.load(), extensions=[safety.extension()])
    return engine, safety
