"""The deployment secret: where it comes from (``--secret-file``, ``MCPAQL_SECRET``, the shared
store), that every engine built with it signs and accepts the same cursors, that a rotation keeps
the previous secret verifying, and that it is never shown."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multiproc_support import MCPAQL

from aql_support import open_test_store
from mcpaql import Config
from mcpaql.config import ConfigError, read_secret_file
from mcpaql.protocol.collections import CursorCodec
from mcpaql.protocol.collections.pagination import cursor_keys
from mcpaql.protocol.errors import MCPAQLError
from mcpaql.store.base import Store
from mcpaql.store.secret import NS_SECRET, rotate_shared_secret, shared_secret, where

OLD = b"o" * 40
NEW = b"n" * 40
payloads = st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=20), st.none()), max_size=5)
secrets_ = st.binary(min_size=32, max_size=64)


@given(payload=payloads, a=secrets_, b=secrets_)
@settings(max_examples=60, deadline=None)
def test_a_cursor_verifies_under_any_key_of_the_ring_and_no_other(payload: dict[str, Any], a: bytes, b: bytes) -> None:
    issued = CursorCodec(cursor_keys([a])).encode(payload)
    assert CursorCodec(cursor_keys([a])).decode(issued, "after") == payload
    assert CursorCodec(cursor_keys([b, a])).decode(issued, "after") == payload  # rotated: the previous still verifies
    if a != b:
        with pytest.raises(MCPAQLError) as e:
            CursorCodec(cursor_keys([b])).decode(issued, "after")
        assert e.value.code == "VALIDATION_INVALID_VALUE"


@given(payload=payloads, at=st.integers(min_value=0), ch=st.sampled_from("AQgw_-"))
@settings(max_examples=60, deadline=None)
def test_a_tampered_cursor_is_refused(payload: dict[str, Any], at: int, ch: str) -> None:
    codec = CursorCodec(cursor_keys([OLD]))
    issued = codec.encode(payload)
    i = at % len(issued)
    bent = issued[:i] + ch + issued[i + 1 :]
    if bent != issued:
        with pytest.raises(MCPAQLError):
            codec.decode(bent, "after")


def test_engines_built_with_one_secret_agree_and_never_sign_with_the_secret_itself(shared_app: Any) -> None:
    one, two = (shared_app.engine(Config(secret_keys=(OLD,))) for _ in range(2))
    assert one.cursor_keys == two.cursor_keys and OLD not in one.cursor_keys
    rotated = shared_app.engine(Config(secret_keys=(NEW, OLD)))
    issued = CursorCodec(one.cursor_keys).encode({"k": 1})
    assert CursorCodec(rotated.cursor_keys).decode(issued, "after") == {"k": 1}
    assert shared_app.engine().cursor_keys != shared_app.engine().cursor_keys  # no secret: random per engine


def test_the_secret_comes_from_the_environment_and_never_shows(tmp_path: Path) -> None:
    cfg = Config.load(env={"MCPAQL_SECRET": NEW.decode(), "MCPAQL_SECRET_PREVIOUS": OLD.decode()})
    assert cfg.secret_keys == (NEW, OLD)
    assert NEW.decode() not in repr(cfg) and cfg == Config()  # not in repr, not in equality
    with pytest.raises(ConfigError, match="at least 32"):
        Config.load(env={"MCPAQL_SECRET": "short"})


def test_a_secret_file_holds_the_current_then_previous_secrets(tmp_path: Path) -> None:
    f = tmp_path / "secret"
    f.write_text(f"# rotated today\n{NEW.decode()}\n\n{OLD.decode()}\n")
    assert read_secret_file(f) == (NEW, OLD)
    f.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="holds no secret"):
        read_secret_file(f)
    f.write_text("tooshort-but-private")
    with pytest.raises(ConfigError) as e:
        read_secret_file(f)
    assert "tooshort" not in str(e.value)


secret_lines = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#"), min_size=32, max_size=80
)
noise = st.sampled_from(["", "   ", "# a comment", "  # indented comment"])


@given(secrets=st.lists(secret_lines, min_size=1, max_size=4), filler=st.lists(noise, max_size=6), data=st.data())
@settings(max_examples=60, deadline=None)
def test_a_secret_file_reads_back_exactly_its_secrets_in_order(
    tmp_path_factory: Any, secrets: list[str], filler: list[str], data: Any
) -> None:
    lines: list[str] = list(secrets)
    for junk in filler:
        lines.insert(data.draw(st.integers(0, len(lines))), junk)
    f = tmp_path_factory.mktemp("s") / "secret"
    f.write_text("\n".join(f"  {ln}  " if ln in secrets else ln for ln in lines), encoding="utf-8")
    assert read_secret_file(f) == tuple(s.encode() for s in secrets)


@pytest.fixture(params=["sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async for s in open_test_store(request.param, request, tmp_path):
        yield s


@pytest.mark.anyio
async def test_processes_starting_together_agree_on_one_secret_in_the_store(store: Store) -> None:
    got: list[tuple[bytes, ...]] = []

    async def start() -> None:
        got.append(await shared_secret(store))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(start)
    assert len(set(got)) == 1 and len(got[0]) == 1 and len(got[0][0]) == 64
    await rotate_shared_secret(store)
    after = await shared_secret(store)
    assert after[1:] == got[0] and after[0] != got[0][0]  # the new one signs, the old one still verifies
    assert (await store.get(NS_SECRET, "deployment")) is not None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve_fails(*args: str, tmp_path: Path) -> str:
    cmd = [MCPAQL, "serve", "--transport", "http", "--db", str(tmp_path / "demo.db"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_serving_refuses_a_secret_it_cannot_have_in_one_line(tmp_path: Path) -> None:
    short = tmp_path / "secret"
    short.write_text("private-but-short")
    line = serve_fails("--secret-file", str(short), tmp_path=tmp_path)
    assert "at least 32" in line and "private-but-short" not in line
    line = serve_fails("--secret-file", str(tmp_path / "missing"), tmp_path=tmp_path)
    assert "cannot read the secret file" in line
    line = serve_fails("--store", "redis://:hunter2hunter2@127.0.0.1:1/0", tmp_path=tmp_path)
    assert "redis://127.0.0.1:1/0" in line and "hunter2" not in line


def test_store_locations_are_shown_without_credentials() -> None:
    assert where("redis://user:pw@cache.internal:6380/2") == "redis://cache.internal:6380/2"
    assert where("sqlite:////var/lib/mcpaql/state.db") == "sqlite:////var/lib/mcpaql/state.db"
    assert where("rediss://:pw@h:1/0?ssl_cert_reqs=none&password=x") == "rediss://h:1/0"


USERINFO = "abcXYZ019-_.~!$&'()*+,;=:"


@given(user=st.text(alphabet=USERINFO[:13], max_size=10), pw=st.text(alphabet=USERINFO, min_size=6, max_size=20))
def test_no_password_survives_in_a_shown_store_url(user: str, pw: str) -> None:
    shown = where(f"redis://{user}:{pw}@cache:6379/0")
    assert shown == "redis://cache:6379/0"


def test_rotate_secret_keeps_the_previous_one_verifying(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for _ in range(2):
        r = subprocess.run([MCPAQL, "rotate-secret", "--store", url], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0 and "rotated the deployment secret" in r.stderr, r.stderr

    async def read() -> tuple[bytes, ...]:
        from mcpaql.store.base import open_store

        async with open_store(url) as store:
            return await shared_secret(store)

    keys = anyio.run(read)
    assert len(keys) == 2 and keys[0] != keys[1]  # current + one previous (KEEP_PREVIOUS)
    for k in keys:
        assert k.decode() not in r.stderr + r.stdout
    bad = subprocess.run([MCPAQL, "rotate-secret"], capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
