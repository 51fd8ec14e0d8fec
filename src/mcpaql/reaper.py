"""No spawned MCP server outlives the process that spawned it, however that process ends.

Why: a wrapper that is stopped the hard way (SIGKILL, or a client whose patience runs out before
the wrapper's own shutdown finishes) cannot run any cleanup code, and an upstream that ignores
EOF and SIGTERM (``@modelcontextprotocol/server-redis`` does) would keep running with parent 1.
Process groups alone do not help (nobody is left to signal the group), and Linux's parent-death
signal alone reaches only the direct child, not ``npx``'s node grandchild.

So every stdio server is started through this file, run as a tiny stdlib-only shim
(``python -I -S reaper.py PARENT_PID -- command args…``, ~10 ms). The shim forks the server into a
process group of its own (with ``PR_SET_PDEATHSIG = SIGKILL`` on Linux, so it dies with the shim),
hands it the shim's stdin/stdout (the MCP pipes; the shim keeps no copy, so EOF still means the
server is gone) and then only watches, without a thread:

* the server exits → whatever it left in its group is killed, the shim exits with its code;
* SIGTERM/SIGINT/SIGHUP to the shim (the spawning side's "stop now") → the group gets SIGTERM,
  then SIGKILL after :data:`TERM_GRACE` seconds;
* the spawning process dies (any way, SIGKILL included) → same. On Linux the shim learns it at once
  from its own parent-death signal; elsewhere it notices that its parent pid changed (polling).

The spawning side (:func:`guarded`) keeps its stdio fast path untouched: the shim is not in the
data path. It also tracks its live shims and stops them from ``atexit`` and from SIGTERM/SIGHUP
handlers (installed only where the disposition is still the default), which is the quick path
when the wrapper is stopped politely; the shim's own watch is the path that cannot be skipped.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import select
import shutil
import signal
import sys
import threading
from collections.abc import Mapping

TERM_GRACE = 0.5  # seconds between SIGTERM and SIGKILL to the server's process group
_POLL = 1.0 if sys.platform.startswith("linux") else 0.2  # parent-pid poll (Linux also gets a signal)
_PR_SET_PDEATHSIG = 1
_PDEATH = signal.SIGUSR1  # the shim's own parent-death signal: checked, since a thread's exit also sends it

_live: set[int] = set()
_lock = threading.Lock()
_handlers_installed = False


def available() -> bool:
    """True where the shim runs (POSIX). Elsewhere servers are spawned as they are."""
    return os.name == "posix"


def guarded(
    command: str,
    args: list[str] | tuple[str, ...],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The argv that runs ``command args`` under the shim (unchanged where it is unavailable).

    The command is looked up first, so a missing program still fails at once with
    ``FileNotFoundError`` naming it, as a direct spawn does.
    """
    argv = [command, *args]
    if not available():
        return argv
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    if os.sep in command:
        target = os.path.join(os.fspath(cwd), command) if cwd is not None else command
        found = os.path.isfile(target) and os.access(target, os.X_OK)
    else:
        found = shutil.which(command, path=path) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), "--", *argv]


def track(pid: int) -> None:
    """Remember a live shim so ``atexit`` and SIGTERM/SIGHUP handlers can stop it."""
    with _lock:
        _live.add(pid)
    _install_handlers()


def untrack(pid: int) -> None:
    with _lock:
        _live.discard(pid)


def stop_all() -> None:
    """SIGTERM every tracked shim: each takes its server's process group down and exits."""
    with _lock:
        pids = list(_live)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed or threading.current_thread() is not threading.main_thread():
        return
    _handlers_installed = True
    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:  # never replace someone else's handler
            signal.signal(sig, _on_fatal_signal)


def _on_fatal_signal(signum: int, frame: object) -> None:
    """Stop the servers, then die of the signal as if no handler had been installed."""
    stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


# ---- the shim (runs as its own process; stdlib only, no package imports) ----------------------


def _prctl_pdeathsig(sig: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def _exec_child(argv: list[str], shim: int, report: int) -> None:
    """In the forked child: own process group, dies with the shim, becomes the server."""
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, _PDEATH):
            signal.signal(sig, signal.SIG_DFL)
        _prctl_pdeathsig(signal.SIGKILL)
        if os.getppid() != shim:  # the shim died before the line above
            os._exit(1)
        os.execvp(argv[0], argv)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.write(report, str(e.errno or errno.ENOEXEC).encode())
    finally:
        os._exit(127)


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _shim(parent: int, argv: list[str]) -> int:
    flags = {"stop": False}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)

    def on_stop(signum: int, frame: object) -> None:
        flags["stop"] = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGCHLD, lambda s, f: None)  # only to wake select() through the wakeup fd
    signal.signal(_PDEATH, lambda s, f: None)  # checked below against the parent pid
    _prctl_pdeathsig(_PDEATH)
    if os.getppid() != parent:  # the parent is already gone: start nothing
        return 1

    report_r, report_w = os.pipe()  # close-on-exec: EOF means the exec succeeded
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        _exec_child(argv, os.getppid(), report_w)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here, so the group exists before anyone signals it
    os.close(report_w)
    failure = os.read(report_r, 32)
    os.close(report_r)
    if failure:
        os.waitpid(pid, 0)
        code = int(failure) if failure.isdigit() else errno.ENOEXEC
        sys.stderr.write(f"mcpaql: cannot run {argv[0]!r}: {os.strerror(code)}\n")
        return 127
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)  # the server holds the MCP pipes alone: its exit is the client's EOF
    os.dup2(devnull, 1)
    os.close(devnull)

    status: int | None = None
    while status is None:
        if not flags["stop"] and os.getppid() == parent:
            with contextlib.suppress(InterruptedError):
                select.select([wake_r], [], [], _POLL)
            with contextlib.suppress(OSError):
                while os.read(wake_r, 512):
                    pass
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)  # whatever the server left behind in its group
            break
        if flags["stop"] or os.getppid() != parent:
            status = _terminate(pid)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell reports it


def _terminate(pid: int) -> int:
    """SIGTERM to the group, SIGKILL after :data:`TERM_GRACE`; the server's wait status."""
    import time

    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    status: int | None = None
    while time.monotonic() < deadline:
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        if status is not None and _group_gone(pid):
            return status
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    if status is None:
        status = os.waitpid(pid, 0)[1]
    return status


def main(argv: list[str]) -> int:
    """``reaper.py PARENT_PID -- command args…``"""
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: reaper.py PARENT_PID -- command [args...]\n")
        return 2
    return _shim(int(argv[0]), argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
