"""Every CPython on the machine as an oracle: does `ast.parse` of version X accept a text?

The benchmarks judge Python by the interpreters themselves, never by our grammar. This one
(`sys.executable`) answers in process; each other version found (pyenv's, or `python3.N` on
PATH, 3.8 and newer) runs one long-lived child that reads JSON lines and answers them, so a
sweep of thousands of texts pays one start per version.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import warnings

# The child: one text per line in, one verdict per line out.
_CHILD = r"""
import ast, json, sys, warnings
warnings.simplefilter("ignore")
for line in sys.stdin:
    text = json.loads(line)
    try:
        ast.parse(text)
        out = None
    except SyntaxError as e:
        out = f"line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError) as e:
        out = f"{type(e).__name__}: {e}"
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


def parse_error(text: str) -> str | None:
    """This interpreter's verdict: None when `ast.parse` accepts `text`, else the error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def other_interpreters() -> dict[str, str]:
    """Version ("3.12") -> executable, for CPythons other than this one (newest found)."""
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    found: dict[str, str] = {}
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for exe in sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3"))):
        version = ".".join(exe.split(os.sep)[-3].split(".")[:2])
        found[version] = exe
    for minor in range(8, 20):
        exe = shutil.which(f"python3.{minor}")
        if exe and f"3.{minor}" not in found:
            found[f"3.{minor}"] = exe
    found.pop(own, None)
    return {v: e for v, e in found.items() if int(v.split(".")[1]) >= 8}


# The versions the benchmarks judge by: the supported ones (pyproject: Python >= 3.11). Our
# grammar knows no version, so 3.8-3.10 would refuse `match` fills in files they also read.
SUPPORTED = ("3.11", "3.12", "3.13", "3.14")


class CPythons:
    """The oracles: this interpreter and the others found among `versions` (default: the
    supported ones). Close them when done."""

    def __init__(self, versions: list[str] | None = None) -> None:
        self.own = f"{sys.version_info.major}.{sys.version_info.minor}"
        others = other_interpreters()
        wanted = versions or [v for v in SUPPORTED if v == self.own or v in others]
        self._children = {
            v: subprocess.Popen([others[v], "-c", _CHILD], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, encoding="utf-8")
            for v in wanted if v in others}
        self.names = [v for v in wanted if v == self.own or v in self._children]


    def verdict(self, version: str, text: str) -> str | None:
        """None when CPython `version` parses `text`, else its error."""
        if version == self.own:
            return parse_error(text)
        child = self._children[version]
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(json.dumps(text) + "\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    def readers(self, text: str) -> list[str]:
        """The versions that read `text` (a file's versions, for judging its fills)."""
        return [v for v in self.names if self.verdict(v, text) is None]

    def refusals(self, text: str, versions: list[str]) -> dict[str, str]:
        """Version -> error, for each of `versions` that refuses `text`."""
        out = {}
        for v in versions:
            error = self.verdict(v, text)
            if error is not None:
                out[v] = error
        return out

    def close(self) -> None:
        for child in self._children.values():
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=10)
        self._children.clear()
