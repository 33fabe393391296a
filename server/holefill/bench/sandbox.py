"""Running model-written programs: a separate process with limits, in a scratch folder.

A filled HumanEval task is code nobody reviewed; it runs

* in its own process group (``start_new_session``), killed as a whole when the wall-clock limit
  passes, with rlimits on CPU seconds, address space, file size, open files and core dumps;
* in a fresh temporary folder as its working directory (also its HOME and TMPDIR), removed
  afterwards, with an environment of only PATH, LANG and those two;
* for Python: ``python -I -S -B`` (isolated mode: no user site, no PYTHON* variables, no
  script folder on sys.path; no site-packages; no .pyc writes), after a preamble that disables
  process creation, signals, sockets and file removal inside the interpreter;
* without a network where the machine allows it: in a new network namespace (``unshare -n``,
  or ``unshare -rn`` for a user without the privilege), which has no interface but a down
  loopback;
* as the unprivileged user ``nobody`` when we run as root and ``nobody`` can reach the
  interpreter (``setpriv``).

``Isolation.probe()`` finds out once which of the last two this machine allows; the report
prints it. This is a sandbox against accidents and sloppy code, not against an attacker who
targets the kernel: that needs a VM or gVisor-like container.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
MEMORY_BYTES = 1 << 30
FILE_BYTES = 16 << 20
OPEN_FILES = 64

# Runs before the task's code, inside the sandboxed interpreter: the task needs none of these.
GUARD = """\
import builtins as _b, os as _os, shutil as _sh, subprocess as _sp, socket as _so
def _refuse(*_a, **_k):
    raise PermissionError("disabled in the holefill test sandbox")
for _m, _names in ((_os, ("system", "popen", "fork", "forkpty", "kill", "killpg", "remove",
                          "unlink", "rmdir", "removedirs", "rename", "renames", "replace",
                          "truncate", "chmod", "chown", "putenv", "execv", "execve", "execvp",
                          "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve",
                          "posix_spawn", "posix_spawnp")),
                   (_sh, ("rmtree", "move", "chown")),
                   (_sp, ("Popen", "run", "call", "check_call", "check_output", "getoutput",
                          "getstatusoutput")),
                   (_so, ("socket", "create_connection", "create_server", "socketpair"))):
    for _n in _names:
        if hasattr(_m, _n):
            setattr(_m, _n, _refuse)
del _b, _os, _sh, _sp, _so, _m, _names, _n
"""


@dataclass(frozen=True)
class Isolation:
    """What this machine lets the sandbox add to the process limits."""

    net_prefix: tuple[str, ...]  # command prefix that removes the network, or ()
    user_prefix: tuple[str, ...]  # command prefix that drops to nobody, or ()

    @property
    def description(self) -> str:
        net = ("no network (new network namespace: " + " ".join(self.net_prefix) + ")"
               if self.net_prefix else "network NOT isolated (no unshare; sockets disabled "
               "in-process only)")
        user = "runs as nobody" if self.user_prefix else "runs as the bench's own user"
        return (f"separate process group, `python -I -S -B`, fresh temp folder as cwd/HOME, "
                f"minimal environment, rlimits (CPU, {MEMORY_BYTES >> 20} MiB address space, "
                f"{FILE_BYTES >> 20} MiB files, {OPEN_FILES} open files, no core), wall-clock "
                f"kill, in-process guard (no subprocesses, signals, sockets, file removal); "
                f"{net}; {user}")

    @staticmethod
    @functools.cache
    def probe() -> Isolation:
        net: tuple[str, ...] = ()
        unshare = shutil.which("unshare")
        if unshare:
            for cand in ((unshare, "-n", "--"), (unshare, "-rn", "--")):
                if _works([*cand, sys.executable, "-c", "pass"]):
                    net = cand
                    break
        user: tuple[str, ...] = ()
        setpriv = shutil.which("setpriv")
        if setpriv and os.geteuid() == 0:
            drop = (setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
            if _works([*net, *drop, sys.executable, "-c", "pass"]):
                user = drop
        return Isolation(net, user)


def _works(cmd: Sequence[str]) -> bool:
    try:
        return subprocess.run(list(cmd), capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass(frozen=True)
class RunResult:
    passed: bool
    status: str  # "passed", "failed", "timeout", "error"
    detail: str = ""  # the last line of stderr


def limits(cpu_s: int) -> dict[int, int]:
    """The rlimits of a sandboxed run (inherited by everything it starts)."""
    return {resource.RLIMIT_CPU: cpu_s, resource.RLIMIT_AS: MEMORY_BYTES,
            resource.RLIMIT_FSIZE: FILE_BYTES, resource.RLIMIT_NOFILE: OPEN_FILES,
            resource.RLIMIT_CORE: 0}


_PRLIMIT_FLAGS = {resource.RLIMIT_CPU: "--cpu", resource.RLIMIT_AS: "--as",
                  resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_NOFILE: "--nofile",
                  resource.RLIMIT_CORE: "--core"}


def _set_limits(values: dict[int, int]) -> None:
    for which, value in values.items():
        resource.setrlimit(which, (value, value))


def run_sandboxed(argv: Sequence[str], folder: Path, timeout_s: float,
                  isolation: Isolation | None = None) -> RunResult:
    """Run ``argv`` in ``folder`` under the limits; passed iff it exits 0 in time."""
    iso = isolation or Isolation.probe()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(folder),
           "TMPDIR": str(folder)}
    values = limits(max(1, int(timeout_s) + 1))
    prlimit = shutil.which("prlimit")
    # prlimit(1) sets the limits without running Python between fork and exec (preexec_fn is
    # not safe while other threads run: the oracles run in a thread pool)
    head = ([prlimit, *(f"{_PRLIMIT_FLAGS[k]}={v}" for k, v in values.items()), "--"]
            if prlimit else [])
    preexec = None if prlimit else functools.partial(_set_limits, values)
    cmd = [*iso.net_prefix, *head, *iso.user_prefix, *argv]
    if iso.user_prefix:
        folder.chmod(0o777)
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec)
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        return RunResult(False, "timeout")
    finally:
        _kill(proc)  # anything it left behind in its group
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] if err else []
    if proc.returncode == 0:
        return RunResult(True, "passed")
    return RunResult(False, "failed" if proc.returncode > 0 else "error",
                     tail[0][:200] if tail else f"exit {proc.returncode}")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_python(program: str, timeout_s: float, isolation: Isolation | None = None) -> RunResult:
    """Run a Python program (a filled task and its tests) in the sandbox."""
    with tempfile.TemporaryDirectory(prefix="holefill-test-") as tmp:
        folder = Path(tmp)
        src = folder / "task.py"
        src.write_text(GUARD + "\n" + program, encoding="utf-8")
        src.chmod(0o644)
        return run_sandboxed([sys.executable, "-I", "-S", "-B", str(src)], folder, timeout_s,
                             isolation)
