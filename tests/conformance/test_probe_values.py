"""Property tests of the probe value builder: for arbitrary parameter schemas, the value built
from the parameter's introspection (``parameter_info``, exactly what a server shows) validates
against the JSON Schema it came from (checked with ``jsonschema``), never names a non-loopback
address unless allowed, and the pattern generator's strings match their pattern."""

from __future__ import annotations

import datetime
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcpaql.conformance import network
from mcpaql.conformance.patterns import Unsupported, matching
from mcpaql.conformance.values import FORMAT_SAMPLES, URL_FORMATS, CannotBuild, build_value, description_examples, name_hint
from mcpaql.protocol.schema import parameter_info

CHECKER = Draft202012Validator.FORMAT_CHECKER  # the 2020-12 checkers (FormatChecker() mixes in draft 3 ones)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- regular expressions from a grammar (the syntax JSON Schema patterns use) -------------------

_LITERALS = st.sampled_from(list("abcXYZ019-_:/.@ ")).map(lambda c: re.escape(c) if c in ".-" else c)
_CLASSES = st.sampled_from(
    [r"\d", r"\w", r"\s", r"\S", "[a-z]", "[A-Z0-9]", "[a-f0-9]", "[^0-9]", "[^a-z ]", "[_a-zA-Z]", "[.:-]", r"[\w.-]", "."]
)
_QUANT = st.sampled_from(["", "", "?", "*", "+", "{2}", "{1,3}", "{0,2}", "{2,}", "+?", "*?"])


def _regex(depth: int = 0) -> st.SearchStrategy[str]:
    atom = _LITERALS | _CLASSES
    if depth < 2:
        atom = (
            atom
            | st.deferred(lambda: _regex(depth + 1)).map(lambda r: f"({r})")
            | st.deferred(lambda: st.lists(_regex(depth + 1), min_size=2, max_size=3)).map(lambda rs: "(?:" + "|".join(rs) + ")")
        )
    seq = st.lists(st.tuples(atom, _QUANT).map("".join), min_size=1, max_size=5).map("".join)
    return seq


PATTERNS = st.tuples(st.booleans(), _regex(), st.booleans()).map(lambda t: ("^" if t[0] else "") + t[1] + ("$" if t[2] else ""))


@SETTINGS
@given(PATTERNS, st.integers(0, 12), st.one_of(st.none(), st.integers(0, 40)))
def test_generated_strings_match_their_pattern(pattern: str, lo: int, hi: int | None) -> None:
    try:
        s = matching(pattern, lo, hi)
    except ValueError:  # Unsupported, or no string within the bounds
        return
    assert re.search(pattern, s) and len(s) >= lo and (hi is None or len(s) <= hi)


@SETTINGS
@given(st.text(max_size=60))
def test_any_pattern_text_is_refused_cleanly_or_matched(pattern: str) -> None:
    try:
        s = matching(pattern)
    except (ValueError, re.error, Unsupported):
        return
    assert re.search(pattern, s)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^[A-Z]+[0-9]+(:[A-Z]+[0-9]+)?$", "A1"),
        (r"^\d{4}-\d{2}-\d{2}$", "1111-11-11"),
        (r"^(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)$", "a/a"),
        (r"^v\d+\.\d+$", "v1.1"),
    ],
)
def test_pattern_examples(pattern: str, expected: str) -> None:
    assert matching(pattern) == expected


@pytest.mark.parametrize(
    "pattern", [r"^(?=a)a$", r"(a)\1", r"\bword\b", r"^(?!x).$", r"\p{L}+", r"^(a+)+$", r"^(a|a)*$", "x" * 600]
)
def test_unsupported_syntax_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        matching(pattern)


# ---- parameter schemas ---------------------------------------------------------------------------

_NAMES = st.sampled_from(
    ["value", "path", "url", "webhook_url", "range", "timezone", "email", "date", "revision", "query", "cell", "tags", "x"]
)
_DESCRIPTIONS = st.sampled_from(
    [
        None,
        "Free text.",
        "IANA name (e.g., 'America/New_York', 'Europe/London').",
        "One of 'local' or 'remote'.",
        "SQL query to run",
        "Fetch this URL (e.g. 'https://example.org/page').",
    ]
)


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string"}
    kind = draw(st.sampled_from(["plain", "format", "pattern", "enum"]))
    if kind == "format":
        s["format"] = draw(st.sampled_from(sorted(set(FORMAT_SAMPLES) | URL_FORMATS)))
    elif kind == "pattern":
        s["pattern"] = draw(PATTERNS)
    elif kind == "enum":
        s["enum"] = draw(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4, unique=True))
    if kind in ("plain", "pattern") and draw(st.booleans()):
        lo = draw(st.integers(0, 30))
        s["minLength"] = lo
        if draw(st.booleans()):
            s["maxLength"] = lo + draw(st.integers(0, 40))
    return s


@st.composite
def number_schemas(draw: st.DrawFn) -> dict[str, Any]:
    integer = draw(st.booleans())
    s: dict[str, Any] = {"type": "integer" if integer else "number"}
    nums = st.integers(-1000, 1000) if integer else st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    lo = draw(st.none() | nums)
    hi = draw(st.none() | nums)
    lo_ex, hi_ex = draw(st.booleans()), draw(st.booleans())
    if lo is not None and hi is not None:
        lo, hi = min(lo, hi), max(lo, hi)
        gap = hi - lo
        assume(gap >= 2 if integer and (lo_ex or hi_ex) else gap > 1e-6 if (lo_ex or hi_ex) else True)
    if lo is not None:
        s["exclusiveMinimum" if lo_ex else "minimum"] = lo
    if hi is not None:
        s["exclusiveMaximum" if hi_ex else "maximum"] = hi
    return s


SCALARS = string_schemas() | number_schemas() | st.just({"type": "boolean"})
SCHEMAS = SCALARS | SCALARS.map(lambda s: {"type": "array", "items": s}) | SCALARS.map(lambda s: {"anyOf": [s, {"type": "null"}]})


def _check_formats(value: Any, schema: dict[str, Any]) -> None:
    """Formats jsonschema cannot check without optional packages, checked here."""
    fmt = schema.get("format")
    if not isinstance(value, str) or fmt is None:
        return
    if fmt == "date-time":
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    elif fmt in URL_FORMATS:
        parts = urlsplit(value)
        assert parts.scheme and parts.netloc, value
    elif fmt == "hostname":
        assert re.fullmatch(r"[A-Za-z0-9.-]{1,253}", value)


@SETTINGS
@given(SCHEMAS, _NAMES, _DESCRIPTIONS, st.booleans(), st.booleans())
def test_probe_values_validate_against_the_schema_they_came_from(
    schema: dict[str, Any], name: str, description: str | None, required: bool, allow_network: bool
) -> None:
    full = {**schema, **({"description": description} if description else {})}
    info = parameter_info(name, full, required)
    try:
        value = build_value(info, lambda _n: None, allow_network=allow_network)
    except CannotBuild:
        # only a pattern can make a documented string impossible to build (length bounds and
        # unsupported syntax); every other supported schema always gets a value
        assert "pattern" in str(full) or "enum" in str(full), full
        return
    Draft202012Validator(full, format_checker=CHECKER).validate(value)
    items = full.get("items") if isinstance(full.get("items"), dict) else None
    _check_formats(value, full)
    if items and isinstance(value, list):
        for v in value:
            _check_formats(v, items)
    if not allow_network:
        assert not network.remote_urls(value), value


def test_description_examples_and_name_hints() -> None:
    assert description_examples("IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use 'UTC'.")[:3] == [
        "America/New_York",
        "Europe/London",
        "UTC",
    ]
    assert name_hint("cell_range") == "A1:B2" and name_hint("sheetName") == "Sheet1"
    assert name_hint("callbackUrl") == network.LOOPBACK_URL and name_hint("repo_path") == "."
    assert name_hint("query", "SELECT SQL query to execute") == "SELECT 1" and name_hint("query") is None
    info = parameter_info("url", {"type": "string", "format": "uri", "default": "https://raw.example.org/x"}, False)
    assert build_value(info, lambda _n: None) == network.LOOPBACK_URL  # a remote default is not reused
    assert build_value(info, lambda _n: None, allow_network=True) == "https://raw.example.org/x"
    with pytest.raises(CannotBuild):  # every documented value is remote
        build_value(parameter_info("u", {"type": "string", "enum": ["https://a.example/"]}, True), lambda _n: None)


@pytest.mark.parametrize(
    ("value", "remote"),
    [
        ("http://127.0.0.1:9/x", False),
        ("https://127.8.9.10/x", False),
        ("http://[::1]:8080/", False),
        ("http://localhost/x", False),
        ("http://api.localhost/x", False),
        ("https://example.com/", True),
        ("http://169.254.169.254/latest/meta-data", True),
        ("http://[fd00:ec2::254]/", True),
        ("http://metadata.google.internal/", True),
        ("file:///etc/passwd", True),  # no host: not loopback
        ("mailto:a@example.com", False),  # not an address the server would connect to
        ({"nested": ["ok", "https://x.example"]}, True),
        ("plain text mentioning example.com", False),
    ],
)
def test_remote_addresses(value: Any, remote: bool) -> None:
    assert bool(network.remote_urls(value)) is remote


def test_address_params_without_a_url_value() -> None:
    host = {"name": "host", "type": "string"}
    assert network.is_remote_value("db.example.com", host) and not network.is_remote_value("localhost", host)
    assert network.is_remote_value("10.0.0.1", {"name": "server", "type": "string", "format": "ipv4"})
    assert not network.is_remote_value("10.0.0.1", {"name": "count", "type": "string"})
