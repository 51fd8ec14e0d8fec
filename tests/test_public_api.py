"""The names users need are importable from ``mcpaql`` itself (issue 12, point 6)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mcpaql


def test_user_facing_names_are_reexported_from_mcpaql():
    from mcpaql import Extension, ServeOptions, UpstreamSpec, install_jobs, install_safety, serve, wrap
    from mcpaql.adapters.upstream.runtime import UpstreamSpec as HomeUpstreamSpec
    from mcpaql.adapters.upstream.wrap import wrap as home_wrap
    from mcpaql.protocol.extension import Extension as HomeExtension
    from mcpaql.safety.install import install_safety as home_install_safety
    from mcpaql.safety.jobs import install_jobs as home_install_jobs
    from mcpaql.serving import ServeOptions as HomeServeOptions
    from mcpaql.serving import serve as home_serve

    assert install_safety is home_install_safety
    assert install_jobs is home_install_jobs
    assert wrap is home_wrap
    assert UpstreamSpec is HomeUpstreamSpec
    assert serve is home_serve
    assert ServeOptions is HomeServeOptions
    assert Extension is HomeExtension


def test_every_name_in_all_resolves():
    for name in mcpaql.__all__:
        assert getattr(mcpaql, name) is not None, name


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mcpaql.not_a_name  # noqa: B018


def test_import_mcpaql_does_not_load_the_mcp_sdk_until_wrap_is_asked_for():
    # A fresh interpreter: this test process has the SDK loaded already.
    code = (
        "import sys, mcpaql\n"
        "assert 'mcp' not in sys.modules, 'import mcpaql loaded the MCP SDK'\n"
        "from mcpaql import wrap\n"
        "assert 'mcp' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
