"""The claim: the conformance level the server declares against what was verified, and the semantic tier."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import INTROSPECTION, SEMANTIC
from ..support import PASS, SKIP, WARN

if TYPE_CHECKING:
    from ..suite import Suite


def check_claim(suite: Suite) -> None:
    proto = ((suite.ops_env or {}).get("data") or {}).get("_protocol") or {}
    claimed = proto.get("conformance") if isinstance(proto, dict) else None
    if claimed not in ("level-1", "level-2") or (claimed == "level-2" and suite.level < 2):
        suite.add(
            "IF-11",
            "The claimed _protocol.conformance level is what the suite measures",
            INTROSPECTION,
            SKIP,
            ["REQ-CONF-004", "REQ-INTRO-010"],
            "no claim to compare" if claimed is None else f"claim {claimed!r} needs a Level 2 run to verify",
        )
        return
    measured = 2 if suite.report.level2_met else 1 if suite.report.level1_met else 0
    want = int(claimed[-1])
    st = PASS if measured >= want else WARN
    suite.add(
        "IF-11",
        "The claimed _protocol.conformance level is what the suite measures",
        INTROSPECTION,
        st,
        ["REQ-CONF-004", "REQ-INTRO-010"],
        f"the server claims {claimed}; measured Level {measured}" if suite.level >= 2 or want == 1 else "",
    )


def check_semantic(suite: Suite) -> None:
    suite.add(
        "SE-1",
        "Semantic (LLM) discoverability evaluation",
        SEMANTIC,
        SKIP,
        ["REQ-CONF-015"],
        "Tier 2 semantic evaluation needs an LLM episode; this live suite runs Tier 1 (structural) checks only.",
    )
