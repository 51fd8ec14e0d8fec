"""The safety loop's holds on an identity — pauses and the hard block — as one table.

Theory of operation (h11-style: the rules are data, :mod:`.loop` only follows them). Holds are
kept per *identity* (:mod:`.identity`) in two store records: at most one pause
(``NS_PAUSE[identity]``) and at most one block (``NS_BLOCK[identity]``). A block outranks a
pause: every check reads the block first. The states of an identity and what moves it::

    clear ──pause(kind)──▶ paused          (an evaluated step, or a gatekeeper refusal in a loop;
      │                      │              only while no pause is held)
      │                      ├── the human completes HOLDS[kind].cleared_by ──▶ clear
      │                      ├── its execution completes or is aborted ───────▶ clear
      │                      └── volatile kinds: expiry, or a restart (boot id) ▶ clear
      └──block──▶ blocked ── verify_challenge (danger_zone) or admin unblock ──▶ clear
                              (a block is persisted: it survives restarts and never expires)

While a hold stands, the guard refuses what ``HOLDS[kind].refuses`` says (``writes``: every
category but READ, plus ``execute_agent``; ``all``: everything but the operations open while
blocked). Each hold owns one challenge of kind ``HOLDS[kind].challenge``; a burned or expired
challenge is replaced while the hold stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class HoldRule:
    """How one kind of hold behaves."""

    challenge: str  # the kind of challenge issued for it (verification.py)
    cleared_by: str  # the operation through which a human lifts it
    volatile: bool  # lifts on expiry and does not survive a restart (carries the boot id)
    refuses: Literal["writes", "all"]


HOLDS: dict[str, HoldRule] = {
    # requires-approval pattern, confirm tier, step limit, failed outcome, tolerance
    "confirm": HoldRule("confirm", "confirm_operation", volatile=False, refuses="writes"),
    # a gatekeeper CONFIRMATION_REQUIRED inside a loop, up to destructive (permission_pending)
    "permission": HoldRule("confirm", "confirm_operation", volatile=False, refuses="writes"),
    # verify tier, or a gatekeeper refusal of a dangerous operation (CORE §8.8.3)
    "verify": HoldRule("verify", "verify_challenge", volatile=True, refuses="writes"),
    # deny pattern, danger_zone tier, a forbidden operation: the hard block (CORE §8.8.1)
    "block": HoldRule("danger_zone", "verify_challenge", volatile=False, refuses="all"),
}


def rule_of(pause: dict[str, Any]) -> HoldRule:
    """The rule of a stored pause (records written before ``kind`` was set behave as confirm)."""
    return HOLDS.get(str(pause.get("kind")), HOLDS["confirm"])


def pause_record(
    agent: str, element: str, kind: str, challenge: dict[str, Any], execution_id: str, boot: str, **fields: Any
) -> dict[str, Any]:
    """The one shape of a pause record: who, which execution, its challenge, and ``fields``
    (``reason``, ``trigger``, ``tier``, ``action``, ``operation``, ``level``) as the cause gives them."""
    if kind not in HOLDS or kind == "block":
        raise ValueError(f"not a pause kind: {kind!r}")
    return {
        "agent": agent,
        "element_name": element,
        "kind": kind,
        "challenge_id": challenge["id"],
        "execution_id": execution_id,
        "expires_at": challenge["expires_at"],
        "boot": boot,
        **fields,
    }
