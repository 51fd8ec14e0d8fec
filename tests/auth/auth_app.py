"""The adapter the auth tests serve over HTTP (``mcpaql serve tests/auth/auth_app.py``): one
operation per category, and ``whoami`` answering with the session's identity."""

from __future__ import annotations

from typing import Any

from mcpaql import Adapter, Context


def make_app() -> Adapter:
    """A fresh adapter (tests install the safety layer on their own copy)."""
    app = Adapter("authdemo", display_name="Auth demo", version="1.0.0")
    NOTES: dict[str, str] = {}

    @app.read
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the server thinks is calling."""
        return {"identity": ctx.session.identity, "session": ctx.session.id}

    @app.read
    def list_notes() -> list[str]:
        """All note names."""
        return sorted(NOTES)

    @app.create
    def create_note(name: str, text: str = "") -> dict[str, Any]:
        """Create a note."""
        NOTES[name] = text
        return {"created": name}

    @app.update
    def update_note(name: str, text: str) -> dict[str, Any]:
        """Replace a note's text."""
        NOTES[name] = text
        return {"updated": name}

    @app.delete
    def delete_note(name: str) -> dict[str, Any]:
        """Delete a note."""
        NOTES.pop(name, None)
        return {"deleted": name}

    @app.execute
    def purge_notes() -> dict[str, Any]:
        """Delete every note."""
        NOTES.clear()
        return {"purged": True}

    return app


app = make_app()
