"""The token a TCP client must present: made per server, kept in a file only the user can read.

`holefill serve --tcp PORT` listens on 127.0.0.1, where every local process can connect. The
server makes a random token (256 bits), writes it to a file that only the user can read
(`$XDG_RUNTIME_DIR/holefill/tcp-PORT.token`, else `~/.cache/holefill/tcp-PORT.token`; or the
file `--token-file` names, which is used as it is when it exists and is private) and serves
only a client whose `initialize` carries it as `initializationOptions.token`.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from holefill.errors import HolefillError

TOKEN_KEY = "token"


class TokenFileError(HolefillError):
    """A token file that is missing, empty, or readable by other users."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def default_token_path(port: int) -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and Path(runtime).is_dir() else Path.home() / ".cache"
    return base / "holefill" / f"tcp-{port}.token"


def write_token_file(path: Path, token: str) -> None:
    """Write ``token`` to ``path``, readable and writable by the user alone (a file there
    before is replaced, never written through: it could be a link someone else planted)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")


def read_token_file(path: Path) -> str:
    """The token in ``path``, which must be a regular file of this user that no one else can
    read or write."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise TokenFileError(f"cannot read the token file {path}: {exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise TokenFileError(f"the token file {path} is not a regular file")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise TokenFileError(f"the token file {path} belongs to another user")
    if st.st_mode & 0o077:
        raise TokenFileError(f"the token file {path} can be read by other users; "
                             f"run `chmod 600 {path}`")
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise TokenFileError(f"the token file {path} holds no token of 16 characters or more")
    return token


def take_token(params: Any) -> str | None:
    """Remove the token from an initialize request's params (a plain dict) and return it, so
    no later stage (settings, logs) ever sees it."""
    if not isinstance(params, dict):
        return None
    options = params.get("initializationOptions")
    if not isinstance(options, dict):
        return None
    token = options.pop(TOKEN_KEY, None)
    return token if isinstance(token, str) else None


def token_matches(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))
