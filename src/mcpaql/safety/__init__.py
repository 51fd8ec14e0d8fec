"""The safety layer: gatekeeper policies (danger, trust, allow/confirm/deny), confirmation
tokens, rate limits and quotas, the execution lifecycle, the execution safety loop with its
autonomy evaluator, and out-of-band verification. State lives in :mod:`mcpaql.store`.

Switch it on with :func:`install_safety`; :func:`install_jobs` runs ``background=True``
EXECUTE operations as background executions; :func:`guard_engine` builds the stand-alone
safety dongle served by ``mcpaql guard``.
"""

from .autonomy import AutonomyConfig, evaluate
from .confirmation import ConfirmationRequired, ConfirmationService
from .danger import DangerLevel, TrustLevel, classify
from .gatekeeper import Gatekeeper, PolicyRule
from .install import Safety, SafetyConfig, guard_engine, install_safety
from .jobs import Jobs, install_jobs
from .lifecycle import Event, Executions, State
from .loop import SafetyLoop
from .ratelimit import Quota, RateLimiter, RateRule
from .verification import Challenges, DisplayChannel, OSDialogChannel, WebhookChannel

__all__ = [
    "AutonomyConfig",
    "Challenges",
    "ConfirmationRequired",
    "ConfirmationService",
    "DangerLevel",
    "DisplayChannel",
    "Event",
    "Executions",
    "Gatekeeper",
    "Jobs",
    "OSDialogChannel",
    "PolicyRule",
    "Quota",
    "RateLimiter",
    "RateRule",
    "Safety",
    "SafetyConfig",
    "SafetyLoop",
    "State",
    "TrustLevel",
    "WebhookChannel",
    "classify",
    "evaluate",
    "guard_engine",
    "install_jobs",
    "install_safety",
]
