"""The safety loop's pause/block table (issue 12 §4; safety/holds.py): one record shape, and
the rules the loop follows (which challenge, which operation clears, what is volatile)."""

from __future__ import annotations

import pytest

from mcpaql.safety.holds import HOLDS, pause_record, rule_of
from mcpaql.safety.loop import _OPEN_WHILE_BLOCKED, _paused_error


def test_the_table() -> None:
    assert {k: (r.challenge, r.cleared_by, r.volatile, r.refuses) for k, r in HOLDS.items()} == {
        "confirm": ("confirm", "confirm_operation", False, "writes"),
        "permission": ("confirm", "confirm_operation", False, "writes"),
        "verify": ("verify", "verify_challenge", True, "writes"),
        "block": ("danger_zone", "verify_challenge", False, "all"),
    }
    assert rule_of({}) is HOLDS["confirm"] and rule_of({"kind": "nonsense"}) is HOLDS["confirm"]
    assert "verify_challenge" in _OPEN_WHILE_BLOCKED


@pytest.mark.parametrize("kind", ["confirm", "permission", "verify"])
def test_one_pause_record_shape(kind: str) -> None:
    ch = {"id": "chal_1", "expires_at": 10.0}
    rec = pause_record("agent-1", "el", kind, ch, "exec_1", "boot", reason="why", trigger="t")
    assert rec == {
        "agent": "agent-1",
        "element_name": "el",
        "kind": kind,
        "challenge_id": "chal_1",
        "execution_id": "exec_1",
        "expires_at": 10.0,
        "boot": "boot",
        "reason": "why",
        "trigger": "t",
    }
    assert HOLDS[kind].cleared_by in _paused_error(rec).message


def test_a_block_is_not_a_pause() -> None:
    with pytest.raises(ValueError, match="not a pause kind"):
        pause_record("a", "e", "block", {"id": "c", "expires_at": 0}, "x", "b")
