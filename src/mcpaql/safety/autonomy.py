"""The five-stage autonomy evaluation pipeline (CORE §8.7.2; REQ-AUTO-002..009). Pure: no
store, no clock — :mod:`mcpaql.safety.loop` feeds it and turns the verdict into state.

Stages run in order and the first that pauses or stops ends evaluation:

1. step limit (``max_autonomous_steps``; MUST),
2. previous outcome (``failure`` pauses),
3. ``next_action_hint`` patterns — ``deny`` (hard stop + out-of-band verification) >
   ``requires_approval`` (pause) > ``auto_approve`` (continue, skip the rest),
4. safety tier from a 0–100 risk score: advisory ≤30, confirm ≤60, verify ≤85, danger_zone,
5. risk tolerance (conservative 25 / moderate 50 / aggressive 75).

Glob matching is case-insensitive. ``deny`` and ``requires_approval`` patterns match the
whole hint *or any part of it that starts at a word*, so ``drop_*`` catches "calling
drop_table on prod"; ``auto_approve`` must match the whole hint, so an approved prefix cannot
smuggle a dangerous tail ("read_file x; rm -rf /").
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from .danger import DangerLevel, pattern_level

TOLERANCE = {"conservative": 25, "moderate": 50, "aggressive": 75}
TIERS = (("advisory", 30), ("confirm", 60), ("verify", 85), ("danger_zone", 100))

DEFAULT_DENY = ("rm -rf*", "drop_*", "drop table*", "drop database*", "delete_all*", "truncate *", "mkfs*", "*_production*")
DEFAULT_REQUIRES_APPROVAL = ("delete_*", "*--force*", "*force push*", "deploy_*", "git push*")
DEFAULT_AUTO_APPROVE = ("read_*", "list_*", "get_*", "search_*")

# Stage 4 heuristics: (regex over the lowercased hint, risk score, factor). Highest wins.
RISK_RULES: tuple[tuple[str, int, str], ...] = (
    (
        r"\brm\s+-[a-z]*r[a-z]*f|\bdrop\s+(table|database|schema)\b|\btruncate\b|\bmkfs\b|\bwipe\b|\bdestroy\b"
        r"|\bdelete\s+(all|every)\b|\bfactory\s+reset\b",
        92,
        "irreversible bulk destruction",
    ),
    (r"\bproduction\b|\bprod\b", 88, "targets production"),
    (
        r"--force\b|\bforce[- ]push\b|\bpush\s+(-f|--force)\b|\bbulk\s+delete\b|\bpurge\b|\bbypass\b|\boverride\b"
        r"|\bwithout\s+backup\b|\bchmod\s+777\b|\bsudo\b",
        72,
        "bypasses safety or affects many resources",
    ),
    (
        r"\bdelete\b|\bdeleting\b|\bremove\b|\bremoving\b|\brm\b|\boverwrit|\breset\b|\bdrop\b|\bkill\b",
        50,
        "removes or overwrites data",
    ),
    (
        r"\bwrite\b|\bwriting\b|\bcreate\b|\bupdate\b|\binstall\b|\bsend\b|\bsending\b|\bpost\b|\bpush\b|\bdeploy\b"
        r"|\bexecut|\brun\b|\brunning\b|\bmodif|\bmove\b|\bcommit\b|\bemail\b|\bmessage\b",
        25,
        "changes state or has external effects",
    ),
    (r"\bread\b|\breading\b|\blist\b|\bget\b|\bsearch\b|\bview\b|\bcat\b|\bls\b|\binspect\b|\bcheck\b", 5, "reads only"),
)
_COMPILED = tuple((re.compile(rx), score, why) for rx, score, why in RISK_RULES)
_WORD_STARTS = re.compile(r"(?:(?<=\s)|^)\S")


@dataclass(frozen=True)
class AutonomyConfig:
    """Per adapter (and per agent via ``agents``) — CORE §8.7.4, names snake_case (Part F #14)."""

    max_autonomous_steps: int = 50
    risk_tolerance: str = "moderate"
    deny: tuple[str, ...] = DEFAULT_DENY
    requires_approval: tuple[str, ...] = DEFAULT_REQUIRES_APPROVAL
    auto_approve: tuple[str, ...] = DEFAULT_AUTO_APPROVE
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.max_autonomous_steps, int) or self.max_autonomous_steps < 1:
            raise ValueError("max_autonomous_steps must be a positive integer")
        if self.risk_tolerance not in TOLERANCE:
            raise ValueError(f"risk_tolerance must be one of {', '.join(TOLERANCE)}")

    @classmethod
    def parse(cls, d: dict[str, Any]) -> AutonomyConfig:
        return cls(**_normalize(d))

    def for_agent(self, agent: str) -> AutonomyConfig:
        over = self.agents.get(agent)
        if not over:
            return self
        base = {
            k: getattr(self, k) for k in ("max_autonomous_steps", "risk_tolerance", "deny", "requires_approval", "auto_approve")
        }
        base.update(_normalize(over))
        base.pop("agents", None)
        return AutonomyConfig(**base)

    def describe(self) -> dict[str, Any]:
        return {
            "max_autonomous_steps": self.max_autonomous_steps,
            "risk_tolerance": self.risk_tolerance,
            "deny": list(self.deny),
            "requires_approval": list(self.requires_approval),
            "auto_approve": list(self.auto_approve),
        }


_ALIAS = {
    "maxAutonomousSteps": "max_autonomous_steps",
    "riskTolerance": "risk_tolerance",
    "requiresApproval": "requires_approval",
    "autoApprove": "auto_approve",
}


def _normalize(d: dict[str, Any]) -> dict[str, Any]:
    """Accept the spec's camelCase config keys too (CORE §8.7.4) and turn lists into tuples."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        k = _ALIAS.get(k, k)
        out[k] = tuple(v) if k in ("deny", "requires_approval", "auto_approve") else v
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    proceed: bool
    factors: tuple[str, ...]
    trigger: str | None = None  # step_limit | failure | deny | approval | confirm | verify | danger_zone | tolerance
    reason: str | None = None
    risk: int | None = None
    tier: str | None = None
    stage: int = 0

    @property
    def stops(self) -> bool:
        return self.trigger in ("deny", "danger_zone")


def _parts(hint: str) -> list[str]:
    h = hint.strip()
    return [h[m.start() :] for m in _WORD_STARTS.finditer(h)] or [h]


@functools.lru_cache(maxsize=4096)
def _glob_rx(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.lower()), re.DOTALL)


def _match_any(patterns: tuple[str, ...], hint: str, anywhere: bool) -> str | None:
    candidates = [c.lower() for c in (_parts(hint) if anywhere else [hint.strip()])]
    for p in patterns:
        rx = _glob_rx(p)
        for c in candidates:
            if rx.match(c):
                return p
    return None


def risk_score(hint: str) -> tuple[int, str]:
    """A 0–100 score: the riskiest keyword rule or DANGER §6 name pattern that matches, plus 3
    for every further risky match (several state-changing steps in one action add up)."""
    text = hint.lower()
    best, why = 10, "no known risk pattern"
    hits = 0
    for rx, score, reason in _COMPILED:
        n = sum(1 for _ in rx.finditer(text))
        if n and score >= 25:
            hits += n
        if n and score > best:
            best, why = score, reason
    for word in re.findall(r"[a-z0-9_]+", text):
        level, pat = pattern_level(word)
        score = {DangerLevel.FORBIDDEN: 90, DangerLevel.DANGEROUS: 70}.get(level, 0) if level else 0
        if score:
            hits += 1
        if score > best:
            best, why = score, f"'{word}' matches the {level.label if level else ''} pattern '{pat}'"
    if hits > 1:
        best = min(100, best + 3 * (hits - 1))
        why += f" (+{3 * (hits - 1)} for {hits} risky terms)"
    return best, why


def tier_for(score: int) -> str:
    for name, top in TIERS:
        if score <= top:
            return name
    return "danger_zone"


def evaluate(hint: str, outcome: str | None, step: int, cfg: AutonomyConfig) -> Verdict:
    """Run the pipeline for step number ``step`` (1-based) of an execution."""
    factors: list[str] = []
    # Stage 1 — step limit
    if step > cfg.max_autonomous_steps:
        return Verdict(
            False,
            (f"Step {step} exceeds max_autonomous_steps={cfg.max_autonomous_steps}",),
            "step_limit",
            "Step limit exceeded",
            stage=1,
        )
    factors.append(f"Step {step} of {cfg.max_autonomous_steps}")
    # Stage 2 — previous outcome
    if outcome == "failure":
        return Verdict(
            False,
            (*factors, "Previous step reported failure"),
            "failure",
            "Previous step failed; report the failure before retrying",
            stage=2,
        )
    # Stage 3 — action patterns (deny > requires_approval > auto_approve)
    pat = _match_any(cfg.deny, hint, anywhere=True)
    if pat:
        return Verdict(
            False,
            (*factors, f"Pattern match: {pat} is denied"),
            "deny",
            f"Action matches deny pattern '{pat}'",
            100,
            "danger_zone",
            3,
        )
    pat = _match_any(cfg.requires_approval, hint, anywhere=True)
    if pat:
        return Verdict(
            False,
            (*factors, f"Pattern match: {pat} requires approval"),
            "approval",
            f"Action requires approval: matches '{pat}'",
            stage=3,
        )
    pat = _match_any(cfg.auto_approve, hint, anywhere=False)
    if pat:
        return Verdict(True, (*factors, f"Pattern match: {pat} is auto-approved"), None, None, 0, "advisory", 3)
    # Stage 4 — safety tier
    score, why = risk_score(hint)
    tier = tier_for(score)
    factors.append(f"Risk score {score} ({why}) → tier {tier}")
    if tier != "advisory":
        reason = {
            "confirm": "Action needs human review",
            "verify": "Action needs out-of-band verification",
            "danger_zone": "Action is in the danger zone",
        }[tier]
        return Verdict(False, tuple(factors), tier, reason, score, tier, 4)
    # Stage 5 — risk tolerance
    threshold = TOLERANCE[cfg.risk_tolerance]
    if score > threshold:
        return Verdict(
            False,
            (*factors, f"Risk {score} exceeds {cfg.risk_tolerance} tolerance {threshold}"),
            "tolerance",
            f"Risk above {cfg.risk_tolerance} tolerance",
            score,
            tier,
            5,
        )
    factors.append(f"Risk {score} within {cfg.risk_tolerance} tolerance {threshold}")
    return Verdict(True, tuple(factors), None, None, score, tier, 5)
