"""Payload limits and text encoding (CORE §4.7.1, §4.7.5; src/mcpaql/protocol/limits.py)."""

from __future__ import annotations

import json

import pytest

from aql_support import READ, assert_valid_envelope
from mcpaql import Config, ConfigError, Limits
from mcpaql.protocol.limits import check_payload, decode_raw

SMALL = Limits(
    max_request_size=65_536,
    max_response_size=1_048_576,
    max_string_length=65_536,
    max_array_elements=100,
    max_nesting_depth=8,
)


@pytest.fixture
def small(harness):
    return harness(Config(limits=SMALL))


def nested(depth: int) -> dict:
    """A request whose nesting depth is exactly ``depth`` (root object = level 1)."""
    inner: dict = {}
    for _ in range(depth - 2):
        inner = {"k": inner}
    return {"operation": "echo", "params": inner} if depth >= 2 else {}


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def too_large(env: dict, limit_type: str, limit_value: int, unit: str) -> dict:
    assert env["success"] is False
    err = env["error"]
    assert err["code"] == "VALIDATION_PAYLOAD_TOO_LARGE"
    details = err["details"]
    assert details["limit_type"] == limit_type
    assert details["limit_value"] == limit_value
    assert details["unit"] == unit
    assert details["actual_value"] > limit_value
    assert err["message"] == f"Payload exceeds {limit_type} limit of {limit_value}"
    return details


# ---- defaults and ranges ------------------------------------------------------------------


def test_default_limits_REQ_LIMIT_001():
    assert Limits().as_dict() == {
        "max_request_size": 1_048_576,
        "max_response_size": 10_485_760,
        "max_string_length": 1_048_576,
        "max_array_elements": 10_000,
        "max_nesting_depth": 32,
    }


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [
        ("max_request_size", 65_536, 10_485_760),
        ("max_response_size", 1_048_576, 104_857_600),
        ("max_string_length", 65_536, 10_485_760),
        ("max_array_elements", 100, 100_000),
        ("max_nesting_depth", 8, 64),
    ],
)
def test_limit_ranges_are_enforced_at_configuration_REQ_LIMIT_001(name, lo, hi):
    assert getattr(Limits(**{name: lo}), name) == lo
    assert getattr(Limits(**{name: hi}), name) == hi
    for bad in (lo - 1, hi + 1):
        with pytest.raises(ConfigError, match=name):
            Limits(**{name: bad})


def test_limits_exposed_in_protocol_REQ_LIMIT_003_REQ_LIMIT_004(small):
    env = small.introspect(query="operations")
    assert env["data"]["_protocol"]["limits"] == SMALL.as_dict()


# ---- each limit ---------------------------------------------------------------------------


def test_nesting_depth_root_object_is_level_1_REQ_LIMIT_001():
    assert depth_of({"a": {"b": {"c": {}}}}) == 4  # the spec's own example
    limits = Limits(max_nesting_depth=8)
    check_payload(nested(8), limits)  # exactly at the limit: accepted
    with pytest.raises(Exception) as exc:
        check_payload({"a": {"b": {"c": {}}}} | {"x": nested(8)}, limits)  # depth 9
    assert exc.value.details == {"limit_type": "nesting_depth", "limit_value": 8, "actual_value": 9, "unit": "levels"}


def test_nesting_depth_counts_arrays_REQ_LIMIT_001():
    limits = Limits(max_nesting_depth=8)
    value: list = []
    for _ in range(6):
        value = [value]  # 7 levels of arrays under params → depth 9 overall
    with pytest.raises(Exception) as exc:
        check_payload({"operation": "echo", "params": {"x": value}}, limits)
    assert exc.value.details["actual_value"] == 9


def test_nesting_depth_limit_REQ_LIMIT_002(small):
    assert depth_of(nested(8)) == 8
    ok = small.call(READ, nested(8))
    assert ok["error"]["code"] != "VALIDATION_PAYLOAD_TOO_LARGE"  # 'k' is unknown, but depth passed
    details = too_large(small.call(READ, nested(9)), "nesting_depth", 8, "levels")
    assert details["actual_value"] == 9


def test_array_elements_limit_REQ_LIMIT_002(small):
    ok = small.call(READ, {"operation": "list_tasks", "params": {"tags": ["a"] * 100}})
    assert ok["success"] is True
    details = too_large(
        small.call(READ, {"operation": "list_tasks", "params": {"tags": ["a"] * 101}}), "array_elements", 100, "elements"
    )
    assert details["actual_value"] == 101


def test_string_length_limit_REQ_LIMIT_002(small):
    assert small.call(READ, {"operation": "echo", "params": {"text": "x" * 30_000}})["success"] is True
    details = too_large(
        small.call(READ, {"operation": "echo", "params": {"text": "x" * 65_537}}), "string_length", 65_536, "bytes"
    )
    assert details["actual_value"] == 65_537


def test_string_length_is_measured_in_utf8_bytes_REQ_LIMIT_002(small):
    # 20,000 emoji are 20,000 characters but 80,000 bytes: over a 64 KiB limit.
    details = too_large(
        small.call(READ, {"operation": "echo", "params": {"text": "😀" * 20_000}}), "string_length", 65_536, "bytes"
    )
    assert details["actual_value"] == 80_000


def test_string_limit_applies_to_keys_REQ_LIMIT_001(harness):
    h = harness(Config(limits=Limits(max_request_size=1_048_576, max_string_length=65_536)))
    env = h.call(READ, {"operation": "echo", "params": {"x" * 70_000: 1}})
    too_large(env, "string_length", 65_536, "bytes")


def test_request_size_limit_REQ_LIMIT_002(small):
    texts = ["y" * 20_000] * 4  # each string is fine, the request is ~80 KB
    details = too_large(small.call(READ, {"operation": "list_tasks", "params": {"tags": texts}}), "request_size", 65_536, "bytes")
    request = {"operation": "list_tasks", "params": {"tags": texts}}
    assert details["actual_value"] == len(json.dumps(request, separators=(",", ":")).encode())


@pytest.mark.parametrize(
    "text",
    [
        "é" * 30_000,  # 60 KB of 2-byte characters: under the string limit, over with the envelope
        "😀" * 16_000,  # 64,000 bytes of 4-byte characters in 16,000 characters
        "\x01" * 30_000,  # serialized as \\u0001: 180 KB on the wire
    ],
)
def test_request_size_counts_serialized_bytes_not_characters_REQ_LIMIT_001(small, text):
    request = {"operation": "echo", "params": {"text": text, "ratio": 1.0}, "_pad": "p" * 8_000}
    exact = len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode())
    env = small.call(READ, request)
    if exact > 65_536:
        assert too_large(env, "request_size", 65_536, "bytes")["actual_value"] == exact
    else:
        assert env["success"] is True


def test_request_size_counts_big_integers_REQ_LIMIT_001():
    big = 10**4000
    with pytest.raises(Exception) as exc:
        check_payload({"operation": "echo", "params": {"n": [big] * 20}}, Limits(max_request_size=65_536))
    assert exc.value.details["limit_type"] == "request_size"


def test_raw_request_size_limit_REQ_LIMIT_002(small):
    raw = json.dumps({"operation": "echo", "params": {"text": "z" * 70_000}}).encode()
    details = too_large(small.raw(raw), "request_size", 65_536, "bytes")
    assert details["actual_value"] == len(raw)


def test_response_size_limit_via_render_REQ_LIMIT_002(harness):
    h = harness(Config(limits=Limits(max_response_size=1_048_576)))
    env = h.call(READ, {"operation": "echo", "params": {"size": 600_000}})
    assert env["success"] is True
    text, is_err = h.engine.render(env)
    assert is_err is False and json.loads(text) == env
    big = h.call(READ, {"operation": "echo", "params": {"size": 1_100_000}})
    text, is_err = h.engine.render(big)
    rendered = json.loads(text)
    assert_valid_envelope(rendered)
    details = too_large(rendered, "response_size", 1_048_576, "bytes")
    assert details["actual_value"] == len(json.dumps(big, ensure_ascii=False, separators=(",", ":")).encode())
    assert is_err is True  # VALIDATION_PAYLOAD_TOO_LARGE is not recoverable (MCPI §4.1.3)


def test_response_size_counts_bytes_REQ_LIMIT_002(harness):
    h = harness(Config(limits=Limits(max_response_size=1_048_576)))
    env = {"success": True, "data": "é" * 600_000}  # 600k characters, 1.2 MB
    text, _ = h.engine.render(env)
    assert json.loads(text)["error"]["details"]["limit_type"] == "response_size"


# ---- encoding ---------------------------------------------------------------------------


def encoding_failure(env: dict) -> dict:
    assert env["success"] is False
    assert env["error"]["code"] == "VALIDATION_INVALID_ENCODING"
    assert env["error"]["message"] == "Invalid character encoding in request"
    return env["error"].get("details", {})


@pytest.mark.parametrize(
    "bad",
    [
        b"\xff",  # never valid in UTF-8
        b"\xc0\xaf",  # overlong encoding of '/'
        b"\xe2\x28\xa1",  # bad continuation byte
        b"\xe2\x82",  # truncated sequence
        b"\xed\xa0\x80",  # UTF-8-encoded surrogate U+D800
        b"\xf8\x88\x80\x80\x80",  # 5-byte form
    ],
)
def test_invalid_utf8_bytes_rejected_REQ_VAL_023(h, bad):
    raw = b'{"operation": "echo", "params": {"text": "ab' + bad + b'"}}'
    details = encoding_failure(h.raw(raw))
    assert details["byte_offset"] == raw.index(bad)


def test_invalid_utf8_in_operation_name_rejected_REQ_VAL_023(h):
    encoding_failure(h.raw(b'{"operation": "ech\xc3"}', READ))


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud83d", "a\\udc00b"])
def test_escaped_lone_surrogates_rejected_REQ_VAL_023(h, escape):
    raw = '{"operation": "echo", "params": {"text": "' + escape + '"}}'
    details = encoding_failure(h.raw(raw.encode()))
    assert details["location"] == "text"


def test_escaped_surrogate_pair_is_valid_REQ_VAL_023(h):
    env = h.raw(b'{"operation": "echo", "params": {"text": "\\ud83d\\ude00"}}')
    assert env["success"] is True and env["data"]["text"] == "😀"


@pytest.mark.parametrize(
    "request_",
    [
        {"operation": "echo", "params": {"text": "a\ud800b"}},
        {"operation": "echo", "params": {"\udc00": 1}},
        {"operation": "list_tasks", "params": {"tags": ["ok", "\udfff"]}},
        {"operation": "ech\ud800o"},
        {"operation": "echo", "_meta": {"label": "\ud800"}},
    ],
)
def test_lone_surrogates_in_decoded_requests_rejected_REQ_VAL_023(h, request_):
    encoding_failure(h.call(READ, request_))


@pytest.mark.parametrize(
    "request_",
    [
        {"operation": "echo", "params": {"text": "a\x00b"}},
        {"operation": "list_tasks", "params": {"tags": ["ok", "\x00"]}},
        {"operation": "list_tasks", "params": {"query": "\x00"}},
    ],
)
def test_nul_bytes_rejected_REQ_VAL_024(h, request_):
    encoding_failure(h.call(READ, request_))


def test_nul_in_raw_json_escape_rejected_REQ_VAL_024(h):
    encoding_failure(h.raw(b'{"operation": "echo", "params": {"text": "a\\u0000"}}'))


def test_valid_unicode_accepted_REQ_VAL_023(h):
    text = "héllo wörld — 日本語 😀 \u2028"
    env = h.call(READ, {"operation": "echo", "params": {"text": text}})
    assert env["success"] is True and env["data"]["text"] == text


# ---- raw entry point robustness -------------------------------------------------------------


def test_raw_invalid_json_is_a_structured_error_REQ_VAL_013(h):
    env = h.raw(b'{"operation": ')
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_ERROR"


def test_raw_deep_nesting_does_not_crash_the_parser_REQ_LIMIT_002(h):
    """A 200,000-deep array used to escape ``call_raw`` as ``RecursionError``."""
    details = too_large(h.raw(b"[" * 200_000), "nesting_depth", 32, "levels")
    assert details["actual_value"] == 200_000
    raw = b'{"operation": "echo", "params": {"text": "[[[[", "x": ' + b'{"a":' * 100_000
    assert too_large(h.raw(raw), "nesting_depth", 32, "levels")["actual_value"] == 100_002


def test_decode_raw_accepts_text():
    assert decode_raw('{"operation": "echo"}', Limits()) == {"operation": "echo"}


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_number_literals_rejected_REQ_VAL_013(h, literal):
    """Python's parser accepts NaN/Infinity; echoing them back would put invalid JSON on the wire."""
    env = h.raw(b'{"operation": "echo", "params": {"ratio": ' + literal + b"}}", READ)
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_in_decoded_requests_rejected_REQ_VAL_013(h, value):
    env = h.call(READ, {"operation": "echo", "params": {"ratio": value}})
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_ERROR"
    text, _ = h.engine.render(env)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c} on the wire"))
