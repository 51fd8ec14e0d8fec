"""The execution lifecycle table (REQ-EXEC-*) and the autonomy pipeline (REQ-AUTO-*)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from mcpaql.protocol.errors import MCPAQLError
from mcpaql.safety.autonomy import AutonomyConfig, evaluate, risk_score, tier_for
from mcpaql.safety.lifecycle import ADAPTER_STATES, TERMINAL, TRANSITIONS, Event, Executions, State, apply, core_state

LEGAL = {
    ("pending", "running"),
    ("pending", "cancelled"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
    ("failed", "running"),
}


def test_REQ_EXEC_002_003_core_states_and_exact_transitions() -> None:
    assert [s.value for s in State] == ["pending", "running", "completed", "failed", "cancelled"]
    assert {(a.value, b.value) for (a, _e), b in TRANSITIONS.items()} == LEGAL


@pytest.mark.parametrize(("state", "event"), list(itertools.product(list(State), list(Event))))
def test_REQ_EXEC_004_every_state_event_pair(state: State, event: Event) -> None:
    if (state, event) in TRANSITIONS:
        assert apply(state.value, event) is TRANSITIONS[(state, event)]
    else:
        with pytest.raises(ValueError, match="cannot"):
            apply(state.value, event)
    if state in TERMINAL and not (state is State.FAILED and event is Event.RETRY):
        assert (state, event) not in TRANSITIONS


def test_REQ_EXEC_010_cancel_from_every_non_terminal_state_including_adapter_states() -> None:
    for s in [*State, *ADAPTER_STATES]:
        core = core_state(s if isinstance(s, str) else s.value)
        if core not in TERMINAL:
            assert apply(s if isinstance(s, str) else s.value, Event.CANCEL) is State.CANCELLED


def test_REQ_EXEC_009_adapter_states_map_to_core_states() -> None:
    assert core_state("queued") is State.PENDING
    assert core_state("paused") is State.RUNNING and core_state("retrying") is State.RUNNING
    assert apply("paused", "complete") is State.COMPLETED
    for bad in ("sleeping", "", "RUNNING"):
        with pytest.raises(ValueError, match="unknown execution state"):
            core_state(bad)
    with pytest.raises(ValueError):
        apply("running", "explode")


@pytest.mark.anyio
async def test_REQ_EXEC_005_persisted_transitions_and_races(any_store) -> None:
    ex = Executions(any_store)
    rec = await ex.create("bot", "sess_1")
    assert rec["status"] == "pending"
    rec = await ex.fire(rec["execution_id"], Event.START)
    assert rec["status"] == "running" and rec["started_at"].endswith("Z")
    results = await asyncio.gather(*(ex.fire(rec["execution_id"], Event.COMPLETE) for _ in range(5)), return_exceptions=True)
    assert sum(1 for r in results if isinstance(r, dict)) == 1  # one winner across concurrent finishers
    errs = [r for r in results if isinstance(r, MCPAQLError)]
    assert errs and all(e.code == "VALIDATION_INVALID_VALUE" for e in errs)
    done = await ex.get(rec["execution_id"])
    assert done["status"] == "completed" and done["finished_at"].endswith("Z")
    assert Executions.view(done)["execution_id"] == rec["execution_id"]
    with pytest.raises(MCPAQLError) as e:
        await ex.fire("exec_missing", Event.START)
    assert e.value.code == "NOT_FOUND_RESOURCE"


@pytest.mark.anyio
async def test_REQ_EXEC_013_session_end_cancels_in_progress(any_store) -> None:
    ex = Executions(any_store)
    a = await ex.fire((await ex.create("bot", "s1"))["execution_id"], Event.START)
    b = await ex.create("bot", "s1")
    c = await ex.fire((await ex.create("bot", "s2"))["execution_id"], Event.START)
    assert await ex.fail_session("s1") == 2
    assert (await ex.get(a["execution_id"]))["status"] == "cancelled"
    assert (await ex.get(b["execution_id"]))["status"] == "cancelled"
    assert (await ex.get(c["execution_id"]))["status"] == "running"


# ---- autonomy pipeline -----------------------------------------------------------------------

CFG = AutonomyConfig(max_autonomous_steps=3)


def test_REQ_AUTO_003_004_step_limit_first() -> None:
    assert evaluate("read_file x", None, 3, CFG).proceed is True
    v = evaluate("read_file x", None, 4, CFG)
    assert v.proceed is False and v.reason == "Step limit exceeded" and v.stage == 1 and v.trigger == "step_limit"


def test_REQ_AUTO_005_failure_outcome_pauses_and_omitted_outcome_skips() -> None:
    v = evaluate("read_file x", "failure", 1, CFG)
    assert v.proceed is False and v.stage == 2
    assert evaluate("read_file x", "success", 1, CFG).proceed is True
    assert evaluate("read_file x", "skipped", 1, CFG).proceed is True


def test_REQ_AUTO_006_pattern_precedence_and_anywhere_matching() -> None:
    cfg = AutonomyConfig(deny=("drop_*",), requires_approval=("delete_*",), auto_approve=("read_*", "delete_*"))
    v = evaluate("calling drop_table on staging", None, 1, cfg)
    assert v.stops and v.trigger == "deny" and v.tier == "danger_zone"
    v = evaluate("delete_user 42", None, 1, cfg)
    assert v.proceed is False and v.trigger == "approval" and not v.stops  # approval beats auto-approve
    assert evaluate("read_file a.txt", None, 1, cfg).proceed is True
    # an auto-approved prefix cannot smuggle a dangerous tail
    v = evaluate("read_file a.txt; then drop_table users", None, 1, cfg)
    assert v.trigger == "deny"
    assert evaluate("READ_FILE A", None, 1, cfg).proceed is True  # case-insensitive


@pytest.mark.parametrize(
    ("hint", "tier"),
    [
        ("looking at the weather", "advisory"),
        ("deleting the temp directory of job 7", "confirm"),
        ("git push --force to the shared branch", "verify"),
        ("run rm -rf / on the host", "danger_zone"),
        ("update the production database schema", "danger_zone"),
    ],
)
def test_REQ_AUTO_007_risk_tiers(hint: str, tier: str) -> None:
    cfg = AutonomyConfig(deny=(), requires_approval=(), auto_approve=())
    v = evaluate(hint, None, 1, cfg)
    assert v.tier == tier
    assert v.proceed is (tier == "advisory")
    assert tier_for(risk_score(hint)[0]) == tier


def test_REQ_AUTO_007_tier_boundaries() -> None:
    assert [tier_for(s) for s in (0, 30, 31, 60, 61, 85, 86, 100)] == [
        "advisory",
        "advisory",
        "confirm",
        "confirm",
        "verify",
        "verify",
        "danger_zone",
        "danger_zone",
    ]


def test_REQ_AUTO_008_risk_tolerance() -> None:
    hint = "writing the report file and sending it"  # 25 + 3 = 28: advisory tier
    none = {"deny": (), "requires_approval": (), "auto_approve": ()}
    assert risk_score(hint)[0] == 28 and tier_for(28) == "advisory"
    assert evaluate(hint, None, 1, AutonomyConfig(**none, risk_tolerance="moderate")).proceed is True
    assert evaluate(hint, None, 1, AutonomyConfig(**none, risk_tolerance="aggressive")).proceed is True
    v = evaluate(hint, None, 1, AutonomyConfig(**none, risk_tolerance="conservative"))
    assert v.proceed is False and v.stage == 5 and v.trigger == "tolerance"
    assert evaluate("writing the report", None, 1, AutonomyConfig(**none, risk_tolerance="conservative")).proceed


def test_REQ_AUTO_009_config_parsing_camel_case_and_per_agent() -> None:
    cfg = AutonomyConfig.parse(
        {
            "maxAutonomousSteps": 5,
            "riskTolerance": "aggressive",
            "autoApprove": ["x_*"],
            "agents": {"careful": {"max_autonomous_steps": 1, "deny": ["*"]}},
        }
    )
    assert cfg.max_autonomous_steps == 5 and cfg.auto_approve == ("x_*",)
    careful = cfg.for_agent("careful")
    assert careful.max_autonomous_steps == 1 and careful.deny == ("*",) and careful.risk_tolerance == "aggressive"
    assert cfg.for_agent("other") is cfg
    for bad in ({"max_autonomous_steps": 0}, {"risk_tolerance": "yolo"}, {"unknown": 1}):
        with pytest.raises((ValueError, TypeError)):
            AutonomyConfig.parse(bad)
