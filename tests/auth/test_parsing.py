"""Property tests for what a client or operator hands the auth layer: the ``Authorization``
header, API-key lines, token scopes and subjects. Whatever comes in, the answer is a value or
the one documented error, and no error message repeats a secret."""

from __future__ import annotations

import hashlib
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpaql.auth.apikeys import ApiKeyError, ApiKeys
from mcpaql.auth.header import MalformedAuthorization, bearer_token
from mcpaql.auth.scopes import SCOPES, identity_for, parse_scopes

B64 = string.ascii_letters + string.digits + "-._~+/"
b64token = st.builds(lambda a, b: a + b, st.text(B64, min_size=1, max_size=200), st.sampled_from(["", "=", "=="]))
IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")


@given(st.lists(st.text(max_size=300), max_size=3))
def test_any_header_values_give_a_token_none_or_malformed(values: list[str]) -> None:
    try:
        token = bearer_token(values)
    except MalformedAuthorization as e:
        for v in values:  # the message is one of ours, never an echo of what was sent
            if len(v) > 3:
                assert v not in str(e)
        return
    if not values:
        assert token is None
    else:
        assert token is not None and re.fullmatch(r"[A-Za-z0-9\-._~+/]+=*", token)


@given(b64token, st.sampled_from(["Bearer", "bearer", "BEARER", "bEaReR"]), st.integers(1, 3))
def test_a_bearer_token_round_trips(token: str, scheme: str, spaces: int) -> None:
    assert bearer_token([f"{scheme}{' ' * spaces}{token}"]) == token


@given(st.text(max_size=500))
def test_any_api_key_text_parses_or_fails_with_one_line(text: str) -> None:
    try:
        keys = ApiKeys.parse(text, "keys file")
    except ApiKeyError as e:
        assert "\n" not in str(e)
        return
    for k in keys.keys:
        assert len(k.digest) == 32 and k.scopes <= set(SCOPES)


@given(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,20}", fullmatch=True),
    st.sets(st.sampled_from(SCOPES), min_size=1),
    st.text(B64, min_size=24, max_size=80),
    st.booleans(),
)
def test_an_api_key_matches_only_itself(subject: str, scopes: set[str], key: str, hashed: bool) -> None:
    stored = f"sha256:{hashlib.sha256(key.encode()).hexdigest()}" if hashed else key
    keys = ApiKeys.parse(f"# comment\n{subject} {','.join(sorted(scopes))} {stored}  # trailing\n", "f")
    caller = keys.match(key)
    assert caller is not None and caller.scopes == scopes and caller.via == "api_key"
    assert IDENTITY.match(caller.identity)
    assert keys.match(key + "x") is None and keys.match(key[:-1]) is None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("alice mcpaql:read short", "at least 24"),
        ("alice mcpaql:root " + "k" * 30, "unknown scope"),
        ("al ice mcpaql:read " + "k" * 30, "expected"),
        ("-x mcpaql:read " + "k" * 30, "subject"),
    ],
)
def test_a_bad_key_line_names_the_line_not_the_key(line: str, says: str) -> None:
    with pytest.raises(ApiKeyError) as e:
        ApiKeys.parse(line, "keys file")
    assert says in str(e.value) and "line 1" in str(e.value)
    assert "k" * 30 not in str(e.value) and "short" not in str(e.value)


def test_duplicate_subjects_are_refused() -> None:
    with pytest.raises(ApiKeyError, match="twice"):
        ApiKeys.parse(f"a mcpaql:read {'k' * 30}\na mcpaql:full {'j' * 30}", "f")


@given(st.text(max_size=300), st.sampled_from(["", "key"]))
def test_any_subject_becomes_a_safe_identity(subject: str, kind: str) -> None:
    ident = identity_for(subject, kind)
    assert IDENTITY.match(ident), ident
    assert identity_for(subject, kind) == ident


def test_a_token_subject_cannot_pose_as_an_api_key() -> None:
    assert identity_for("writer", "key") == "key:writer"
    assert identity_for("key:writer") != "key:writer" and identity_for("key:writer").startswith("sub-sha256:")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30), lambda c: st.lists(c, max_size=4)))
def test_any_scope_claim_gives_a_set_of_strings(value: object) -> None:
    scopes = parse_scopes(value)
    assert all(isinstance(s, str) and s and " " not in s for s in scopes)


def test_many_keys_each_find_their_own_subject_and_a_shared_key_is_refused() -> None:
    """A thousand keys are looked up by digest (one dict probe, not a scan); two subjects
    sharing one key would make the identity ambiguous, so the file is refused in one line."""
    from mcpaql.auth.apikeys import ApiKeyError, ApiKeys

    lines = [f"svc{i} mcpaql:read key-{i:04d}-{'x' * 24}" for i in range(1000)]
    keys = ApiKeys.parse("\n".join(lines), "keys")
    for i in (0, 499, 999):
        caller = keys.match(f"key-{i:04d}-{'x' * 24}")
        assert caller is not None and caller.client_id == f"svc{i}"
    assert keys.match("key-1000-" + "x" * 24) is None
    with pytest.raises(ApiKeyError) as e:
        ApiKeys.parse(f"a mcpaql:read {'k' * 30}\nb mcpaql:full {'k' * 30}", "keys")
    assert "share one key" in str(e.value) and "k" * 30 not in str(e.value)
