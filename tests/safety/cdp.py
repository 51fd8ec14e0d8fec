"""Drive real headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
commands on fd 3, replies on fd 4, NUL-separated JSON) — no extra Python packages needed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

BINARY = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-dev-shm-usage",
)


class Chromium:
    def __init__(self, profile: Path) -> None:
        assert BINARY is not None
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()

        def wire() -> None:  # in the child: fd 3 = commands, fd 4 = replies
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.proc = subprocess.Popen(
            [BINARY, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=wire,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._w = os.fdopen(cmd_w, "wb", buffering=0)
        self._r = os.fdopen(out_r, "rb", buffering=0)
        self._buf = b""
        self._id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._w.write(json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = self._r.read(1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.session)
        return res.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, self.session)
        self.wait_for("document.readyState === 'complete' && location.href.startsWith('http')")

    def click_and_wait(self, selector: str, ready: str = "true") -> None:
        """Click ``selector`` and wait until a *new* document is loaded and ``ready`` holds."""
        self.evaluate("window.__before_click = true")
        clicked = self.evaluate(
            f"(() => {{ const b = document.querySelector({json.dumps(selector)});"
            " if (!b) return false; b.click(); return true; })()"
        )
        if not clicked:
            raise LookupError(selector)
        self.wait_for(f"!window.__before_click && document.readyState === 'complete' && ({ready})")

    def wait_for(self, condition: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.evaluate(f"!!({condition})"):
                    return
            except RuntimeError:
                pass  # the page is between documents
            time.sleep(0.05)
        raise TimeoutError(condition)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._w.close()
        self._r.close()
