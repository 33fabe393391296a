"""A seeded, time-bounded editing-session fuzzer over the real server (`holefill serve` on
stdio), and the figures it measures.

A session keeps a few documents open (Python, one with CRLF line ends, and JSON) and, until its
time is up, does what an editor and a hasty user do: random edits (ASCII, emoji, CJK, accents,
CRLF, hole markers; insertions, deletions, replacements, whole-text changes), inline
completion requests (a newer one on a document cancels the older; some are cancelled by the
client), code actions and their lazy resolution, the `holefill.fillHoles` command (some
cancelled), settings changes, closing and reopening documents, and now and then malformed
input from `holefill.lsp.badinput`. The client's own copy of every document (code points; its
own UTF-16 conversion, written apart from the server's) is the reference.

What it asserts, as `violations` (each with the seed and step to replay it):
- every request is answered (after a drain at the end), and nothing is answered twice;
- no traceback on the server's stderr and no InternalError answer;
- inline items start at the asked position and replace, on one line, only closing brackets
  and quotes;
- every edit the server returns is a pure insertion or replaces exactly hole markers (one, or
  several side by side: touching holes are one hole), at the version it names; the marker
  positions in code actions' data match the client's copy (positions in sync);
- a verified "Fill holes" of every hole in a document the fuzzer damaged only by insertions at
  those holes gives a file the language's own parser accepts (`ast.parse`, `json.loads`);
- a cancelled `holefill.fillHoles` never sends its `workspace/applyEdit`;
- the server exits 0 after shutdown and exit.

Figures: requests sent and answered per method, errors by code, latency percentiles per
method, cancellation latency (client: cancel sent -> answer; server: cancel -> the model job's
return, from its log), RSS of the server at start (after the model loaded), peak and end.
"""

from __future__ import annotations

import ast
import asyncio
import json
import random
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from holefill.lsp.badinput import BAD_INPUTS
from holefill.lsp.client import RawClient
from holefill.lsp.soak_report import Report

MARKER = "<|hole|>"
CLOSERS = set(")]}\"'`")
STOPPED = re.compile(r"(.+): stopped (\d+) ms after its cancel \((.+)\)")

PYTHON_BASE = '''import math


def norm(x, y):
    """The length of (x, y)."""
    return math.sqrt(x * x + y * y)


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def scaled(self, k):
        return Point(self.x * k, self.y * k)


values = [norm(1, 2), norm(3, 4)]
label = "caf\\u00e9 \\U0001f600"
'''
JSON_BASE = '{\n  "name": "holefill",\n  "tags": ["a", "b"],\n  "size": 3\n}\n'
SNIPPETS = [
    "x", "value", " ", "(", ")", "[", "]", "{", "}", ":", ",", ".", "=", " + ", "1", "42",
    "\n", "\n    ", "\r\n", "'", '"', "#", "# note\n", "return ", "if x:", "def g(a):",
    "\U0001f600", "\u6f22\u5b57", "\u00e9t\u00e9", "\u03bb", MARKER, MARKER, "None", "\t",
]


@dataclass
class SoakConfig:
    seed: int = 0
    seconds: float = 30.0
    model: str | None = None  # None: the bundled model
    max_new_tokens: int = 8
    top_k: int = 4
    drain_s: float = 120.0  # how long to wait for the last answers at the end
    max_in_flight: int = 6
    server: list[str] = field(default_factory=lambda: [sys.executable, "-m", "holefill",
                                                       "serve"])
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Doc:
    uri: str
    language: str
    text: str
    version: int = 1
    damaged: bool = False  # edited other than by inserting at markers
    # (text, damaged) of recent versions: a late answer is checked against its own version
    history: dict[int, tuple[str, bool]] = field(default_factory=dict)

    @property
    def crlf(self) -> bool:
        return "\r\n" in self.text

    def remember(self) -> None:
        self.history[self.version] = (self.text, self.damaged)
        while len(self.history) > 64:
            del self.history[next(iter(self.history))]


# ------------------------------------------------------------------ positions (independent)

def _line_starts(text: str) -> list[int]:
    starts = [0]
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\r":
            i += 2 if i + 1 < n and text[i + 1] == "\n" else 1
            starts.append(i)
        elif c == "\n":
            i += 1
            starts.append(i)
        else:
            i += 1
    return starts


def _utf16(s: str) -> int:
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def position(text: str, offset: int) -> dict[str, int]:
    starts = _line_starts(text)
    line = max(i for i, s in enumerate(starts) if s <= offset)
    return {"line": line, "character": _utf16(text[starts[line]:offset])}


def offset_of(text: str, pos: dict[str, int]) -> int:
    starts = _line_starts(text)
    if pos["line"] >= len(starts):
        return len(text)
    start = starts[pos["line"]]
    end = starts[pos["line"] + 1] if pos["line"] + 1 < len(starts) else len(text)
    units = 0
    for i in range(start, end):
        if units >= pos["character"] or text[i] in "\r\n":
            return i
        units += _utf16(text[i])
    return end


def _safe_offset(rng: random.Random, text: str) -> int:
    """A random offset that does not split a CRLF."""
    for _ in range(10):
        at = rng.randint(0, len(text))
        if not (0 < at < len(text) and text[at - 1] == "\r" and text[at] == "\n"):
            return at
    return 0


def _markers_only(text: str) -> bool:
    """One marker, or several side by side (touching holes are one hole)."""
    return bool(text) and not text.replace(MARKER, "")


def parses(doc: Doc, text: str) -> bool:
    try:
        if doc.language == "json":
            json.loads(text)
        else:
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


# ------------------------------------------------------------------ the session

class Session:
    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.report = Report(config.seed, config.seconds)
        self.docs: dict[str, Doc] = {}
        self.client: RawClient | None = None
        self.step = 0
        self.opened = 0
        self.in_flight: set[asyncio.Future[Any]] = set()
        self.inline_latest: dict[str, Any] = {}
        self.cancelled_commands: dict[Any, tuple[str, int]] = {}
        self.commands: dict[Any, tuple[str, int]] = {}  # request id -> (uri, version)
        self._last_reset: Doc | None = None
        self.waiting: set[str] = set()  # documents with a Fill holes the oracle will judge
        self.cancel_sent_at: dict[Any, float] = {}
        self.unverified_since = 0

    # -------------------------------------------------------------- plumbing

    async def run(self) -> Report:
        cfg = self.config
        env = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **cfg.env}
        self.client = client = await RawClient.spawn(cfg.server, env=env)
        client.handlers["workspace/applyEdit"] = self._on_apply_edit
        options: dict[str, Any] = {"maxNewTokens": cfg.max_new_tokens, "topK": cfg.top_k,
                                   "debounceMs": 0}
        if cfg.model:
            options["model"] = cfg.model
        try:
            await client.initialize(options, timeout=cfg.drain_s)
            for _ in range(3):
                self._open_new()
            await self._warm_up()
            t_start = time.monotonic()
            self._sample_rss(t_start)
            end = t_start + cfg.seconds
            next_sample = t_start
            while time.monotonic() < end:
                self.step += 1
                await self._act()
                if time.monotonic() >= next_sample:
                    self._sample_rss(t_start)
                    next_sample += max(1.0, cfg.seconds / 60)
                await asyncio.sleep(self.rng.choice((0, 0, 0.005, 0.02, 0.05)))
            await self._drain()
            self._sample_rss(t_start)
            self.report.steps = self.step
            self.report.exit_code = await client.stop(timeout=30)
            if self.report.exit_code != 0:
                self.report.violation(self.step, f"exit status {self.report.exit_code}")
        finally:
            if client.process is not None and client.process.returncode is None:
                client.process.kill()
        self._collect_server_figures()
        return self.report

    async def _warm_up(self) -> None:
        """A completion in each document: the model is loaded and each language's grammar
        compiled before the clock starts (those are one-time costs, not growth)."""
        for doc in list(self.docs.values()):
            fut = self._request("textDocument/inlineCompletion",
                                self._inline_params(doc, len(doc.text)))
            await asyncio.wait_for(asyncio.shield(fut), self.config.drain_s)

    def _sample_rss(self, t0: float) -> None:
        assert self.client is not None
        rss = self.client.rss_kb()
        if rss is not None:
            self.report.rss_kb.append((time.monotonic() - t0, rss))

    def _request(self, method: str, params: Any, msg_id: Any = None) -> asyncio.Future[Any]:
        assert self.client is not None
        self.report.sent[method] += 1
        fut = self.client.request_nowait(method, params, msg_id)
        step = self.step
        t0 = time.monotonic()
        self.in_flight.add(fut)

        def done(f: asyncio.Future[Any]) -> None:
            self.in_flight.discard(f)
            if f.cancelled() or f.exception() is not None:
                return
            answer = f.result()
            self.report.answered[method] += 1
            self.report.latency_ms[method].append(1e3 * (time.monotonic() - t0))
            if "error" in answer:
                code = answer["error"].get("code")
                self.report.errors[f"{method} {code}"] += 1
                if code == -32603:
                    self.report.violation(step, f"InternalError for {method}: "
                                                f"{answer['error'].get('message')}")
                if "Traceback" in json.dumps(answer):
                    self.report.violation(step, f"a traceback in the answer to {method}")
            sent_at = self.cancel_sent_at.pop(answer.get("id"), None)
            if sent_at is not None:
                ms = 1e3 * (time.monotonic() - sent_at)
                self.report.cancel_ms.append(ms)
                code = answer.get("error", {}).get("code", "result")
                self.report.slow_cancels.append((ms, f"{method} -> {code} (step {step})"))
                self.report.slow_cancels.sort(reverse=True)
                del self.report.slow_cancels[3:]

        fut.add_done_callback(done)
        return fut

    async def _room(self) -> None:
        """Keep at most max_in_flight requests waiting (an editor does not queue hundreds)."""
        while len(self.in_flight) >= self.config.max_in_flight:
            await asyncio.wait(set(self.in_flight), return_when=asyncio.FIRST_COMPLETED)

    async def _drain(self) -> None:
        """The session is over: cancel what is still running (an editor that closes does),
        then every request must be answered."""
        assert self.client is not None
        for msg_id, sent in list(self.client.sent.items()):
            if not sent.future.done() and sent.method != "shutdown":
                self.cancel_sent_at[msg_id] = time.monotonic()
                self.client.cancel(msg_id)
        if self.in_flight:
            await asyncio.wait(set(self.in_flight), timeout=self.config.drain_s)
        for msg_id, sent in self.client.sent.items():
            if not sent.future.done() and not str(msg_id).startswith("bad-"):
                self.report.violation(self.step, f"never answered: {sent.method} id {msg_id}")

    # -------------------------------------------------------------- actions

    async def _act(self) -> None:
        r = self.rng.random()
        if r < 0.38:
            self._edit()
        elif r < 0.58:
            await self._room()
            self._inline()
        elif r < 0.68:
            await self._room()
            await self._code_action()
        elif r < 0.74:
            await self._room()
            self._command()
        elif r < 0.80:
            self._cancel_something()
        elif r < 0.86:
            self._bad_input()
        elif r < 0.89:
            self._reopen()
        elif r < 0.91:
            self._configure()
        elif r < 0.95:
            self._reset()
        else:
            # the editor's undo-all, then Fill holes at once: the case the oracle judges
            await self._room()
            self._reset()
            await self._code_action(resolve=True)

    def _pick(self) -> Doc:
        """A document to act on; one whose Fill holes the oracle waits for is left alone
        (as a user waits for it), so that no newer request supersedes that fill."""
        free = [d for d in self.docs.values() if d.uri not in self.waiting] or \
            list(self.docs.values())
        return self.rng.choice(free)

    def _open_new(self) -> None:
        assert self.client is not None
        self.opened += 1
        kind = self.opened % 3
        if kind == 2:
            doc = Doc(f"file:///soak/doc{self.opened}.json", "json", JSON_BASE)
        else:
            text = PYTHON_BASE.replace("\n", "\r\n") if kind == 1 else PYTHON_BASE
            doc = Doc(f"file:///soak/doc{self.opened}.py", "python", text)
        self.docs[doc.uri] = doc
        doc.remember()
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc.uri, "languageId": doc.language, "version": doc.version,
            "text": doc.text}})

    def _send_change(self, doc: Doc, changes: list[dict[str, Any]]) -> None:
        assert self.client is not None
        doc.version += 1
        doc.remember()
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": changes})
        self.report.edits += 1

    def _edit(self) -> None:
        doc = self._pick()
        rng = self.rng
        if rng.random() < 0.05:  # the whole text at once (some clients sync that way)
            at = _safe_offset(rng, doc.text)
            new = doc.text[:at] + rng.choice(SNIPPETS) + doc.text[at:]
            doc.text = new
            doc.damaged = True
            self._send_change(doc, [{"text": new}])
            return
        a = _safe_offset(rng, doc.text)
        b = a
        if rng.random() < 0.4 and doc.text:
            b = min(len(doc.text), a + rng.randint(1, 12))
            if 0 < b < len(doc.text) and doc.text[b - 1] == "\r" and doc.text[b] == "\n":
                b += 1
        insert = "" if b > a and rng.random() < 0.5 else rng.choice(SNIPPETS)
        if doc.crlf:
            insert = insert.replace("\r\n", "\n").replace("\n", "\r\n")
        if not insert and a == b:
            return
        rng_ = {"start": position(doc.text, a), "end": position(doc.text, b)}
        doc.text = doc.text[:a] + insert + doc.text[b:]
        doc.damaged = doc.damaged or insert != MARKER or a != b
        self._send_change(doc, [{"range": rng_, "text": insert}])

    def _inline_params(self, doc: Doc, at: int) -> dict[str, Any]:
        return {"textDocument": {"uri": doc.uri}, "position": position(doc.text, at),
                "context": {"triggerKind": self.rng.choice((1, 2))}}

    def _inline(self) -> None:
        doc = self._pick()
        at = _safe_offset(self.rng, doc.text)
        params = self._inline_params(doc, at)
        text, version, step = doc.text, doc.version, self.step
        fut = self._request("textDocument/inlineCompletion", params)
        self.inline_latest[doc.uri] = fut

        def check(f: asyncio.Future[Any]) -> None:
            if f.cancelled() or f.exception() is not None:
                return
            result = f.result().get("result")
            if not result or doc.version != version:
                return
            for item in result.get("items", []):
                rng_ = item.get("range")
                if rng_ is None:
                    continue
                if rng_["start"] != params["position"] or \
                        rng_["start"]["line"] != rng_["end"]["line"]:
                    self.report.violation(step, f"inline item range {rng_} for a request at "
                                                f"{params['position']}")
                    continue
                replaced = text[offset_of(text, rng_["start"]):offset_of(text, rng_["end"])]
                if set(replaced) - CLOSERS:
                    self.report.violation(step, f"inline item replaces {replaced!r}")

        fut.add_done_callback(check)

    async def _code_action(self, resolve: bool = False) -> None:
        doc = self._last_reset if resolve and self._last_reset else self._pick()
        text, version, step = doc.text, doc.version, self.step
        params = {"textDocument": {"uri": doc.uri},
                  "range": {"start": position(text, 0), "end": position(text, len(text))},
                  "context": {"diagnostics": [], "only": ["source.fillHoles"]}}
        fut = self._request("textDocument/codeAction", params)
        try:
            answer = await asyncio.wait_for(asyncio.shield(fut), 30)
        except (TimeoutError, ConnectionError):
            return
        actions = answer.get("result") or []
        for action in actions:
            self._check_marker_holes(action.get("data") or {}, doc, text, version, step)
        if not actions or (not resolve and self.rng.random() < 0.3):
            return
        action = actions[0]
        # the action was asked for the whole document: it fills every hole
        resolved = self._request("codeAction/resolve", action)
        if resolve:
            self.waiting.add(doc.uri)
            resolved.add_done_callback(lambda f: self.waiting.discard(doc.uri))

        def check(f: asyncio.Future[Any]) -> None:
            if f.cancelled() or f.exception() is not None:
                return
            result = f.result().get("result")
            if not result or not result.get("edit"):
                return
            filled = self._check_edit(result["edit"], step)
            if filled is None:
                return
            if not doc.history.get(version, ("", True))[1] and MARKER not in filled:
                self._oracle(doc, filled, step)
            if doc.version == version and self.rng.random() < 0.5:
                self._apply(doc, result["edit"])

        resolved.add_done_callback(check)

    def _check_marker_holes(self, data: dict[str, Any], doc: Doc, text: str, version: int,
                            step: int) -> None:
        if data.get("version") != version:
            self.report.violation(step, f"an action for version {data.get('version')} "
                                        f"answered a request at version {version}")
            return
        for start, end, reason in data.get("holes", []):
            if reason == "marker" and not _markers_only(text[start:end]):
                self.report.violation(step, f"positions out of sync: the server's marker at "
                                            f"{start}..{end} is {text[start:end]!r} here")

    def _check_edit(self, edit: dict[str, Any], step: int) -> str | None:
        """The text of the version ``edit`` names with ``edit`` applied, when the edit is pure
        insertions or marker replacements there; a violation otherwise; None when that
        version is no longer known (the document was closed)."""
        (change,) = edit.get("documentChanges") or [None]
        if change is None:
            self.report.violation(step, "an edit without a versioned document change")
            return None
        doc = self.docs.get(change["textDocument"]["uri"])
        known = doc.history.get(change["textDocument"]["version"]) if doc else None
        if known is None:
            return None
        text = known[0]
        spans = []
        for e in change["edits"]:
            a, b = offset_of(text, e["range"]["start"]), offset_of(text, e["range"]["end"])
            if a != b and not _markers_only(text[a:b]):
                self.report.violation(step, f"an edit replaces {text[a:b]!r}, not a marker")
                return None
            spans.append((a, b, e["newText"]))
        for a, b, new in sorted(spans, reverse=True):
            text = text[:a] + new + text[b:]
        return text

    def _oracle(self, doc: Doc, filled: str, step: int) -> None:
        logs = self._logs()
        if any("unverified" in m for m in logs[self.unverified_since:]):
            self.unverified_since = len(logs)
            self.report.oracle["unverified"] += 1
            return
        if parses(doc, filled):
            self.report.oracle["accepted"] += 1
        else:
            self.report.oracle["refused"] += 1
            self.report.violation(step, f"a verified Fill holes of {doc.uri} does not parse:\n"
                                        f"{filled[:2000]}")

    def _apply(self, doc: Doc, edit: dict[str, Any]) -> bool:
        (change,) = edit["documentChanges"]
        if doc.version != change["textDocument"]["version"] or doc.uri not in self.docs:
            return False
        changes = []
        # back to front, so that each range holds in the text the previous change left
        for e in sorted(change["edits"], key=lambda e: (e["range"]["start"]["line"],
                                                        e["range"]["start"]["character"]),
                        reverse=True):
            a, b = offset_of(doc.text, e["range"]["start"]), offset_of(doc.text, e["range"]["end"])
            changes.append({"range": {"start": position(doc.text, a),
                                      "end": position(doc.text, b)}, "text": e["newText"]})
            doc.text = doc.text[:a] + e["newText"] + doc.text[b:]
        self._send_change(doc, changes)
        return True

    def _command(self) -> None:
        doc = self._pick()
        positions = []
        if self.rng.random() < 0.5:
            positions = [position(doc.text, _safe_offset(self.rng, doc.text))
                         for _ in range(self.rng.randint(1, 2))]
        assert self.client is not None
        msg_id = f"cmd-{self.client.new_id()}"
        self._request("workspace/executeCommand", {
            "command": "holefill.fillHoles", "arguments": [{"uri": doc.uri,
                                                            "positions": positions}]},
            msg_id=msg_id)
        self.commands[msg_id] = (doc.uri, doc.version)

    def _on_apply_edit(self, params: dict[str, Any]) -> dict[str, Any]:
        edit = params["edit"]
        (change,) = edit["documentChanges"]
        key = (change["textDocument"]["uri"], change["textDocument"]["version"])
        mine = [i for i, k in self.commands.items() if k == key]
        if mine and all(i in self.cancelled_commands for i in mine):
            self.report.violation(self.step, f"the cancelled command {mine[-1]} sent "
                                             "workspace/applyEdit")
        if self._check_edit(edit, self.step) is None:
            return {"applied": False}
        doc = self.docs.get(key[0])
        applied = doc is not None and self.rng.random() < 0.7 and self._apply(doc, edit)
        return {"applied": bool(applied)}

    def _cancel_something(self) -> None:
        assert self.client is not None
        pending = [(i, s) for i, s in self.client.sent.items()
                   if not s.future.done() and s.method in (
                       "textDocument/inlineCompletion", "codeAction/resolve",
                       "workspace/executeCommand")]
        if not pending:
            return
        msg_id, sent = self.rng.choice(pending)
        self.cancel_sent_at[msg_id] = time.monotonic()
        self.client.cancel(msg_id)
        if sent.method == "workspace/executeCommand" and msg_id in self.commands:
            target = self.commands[msg_id]

            def remember(f: asyncio.Future[Any]) -> None:
                # a command the server answered "cancelled" must never edit afterwards
                if not f.cancelled() and f.exception() is None and \
                        f.result().get("error", {}).get("code") == -32800:
                    self.cancelled_commands[msg_id] = target

            sent.future.add_done_callback(remember)

    def _bad_input(self) -> None:
        assert self.client is not None
        bad = self.rng.choice([b for b in BAD_INPUTS if not b.pause_s])
        doc = self._pick()
        msg_id = f"bad-{self.client.new_id()}"
        self.client.send_bytes(bad.make(msg_id, doc.uri))
        self.report.bad_inputs += 1

    def _reopen(self) -> None:
        assert self.client is not None
        doc = self._pick()
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
        del self.docs[doc.uri]
        if self._last_reset is doc:
            self._last_reset = None
        self._open_new()

    def _configure(self) -> None:
        assert self.client is not None
        self.client.notify("workspace/didChangeConfiguration", {"settings": {"holefill": {
            "maxNewTokens": self.rng.choice((4, 8, 12)),
            "multiline": self.rng.choice(("auto", "always", "never"))}}})

    def _reset(self) -> None:
        """Back to the clean base text (the editor's undo-all), with a marker or two."""
        doc = self._pick()
        base = JSON_BASE if doc.language == "json" else PYTHON_BASE
        if doc.crlf:
            base = base.replace("\n", "\r\n")
        text = base
        if doc.language == "python":
            lines = text.split("\n")
            for _ in range(self.rng.randint(1, 2)):
                i = self.rng.randrange(len(lines))
                if lines[i].strip().startswith("return "):
                    lines[i] = lines[i].replace("return ", f"return {MARKER} + ", 1)
            text = "\n".join(lines)
        else:
            text = text.replace('"size": 3', f'"size": {MARKER}')
        doc.text, doc.damaged = text, False
        self._last_reset = doc
        self._send_change(doc, [{"text": text}])

    # -------------------------------------------------------------- figures

    def _logs(self) -> list[str]:
        assert self.client is not None
        return [m["message"] for m in self.client.notifications("window/logMessage")]

    def _collect_server_figures(self) -> None:
        assert self.client is not None
        for line in self._logs():
            m = STOPPED.match(line)
            if m:
                self.report.stop_ms.append(float(m.group(2)))
        for i, line in enumerate(self.client.stderr):
            if "Traceback" in line:
                # the traceback itself, not the warnings that followed it
                self.report.violation(self.step, "a traceback on the server's stderr:\n"
                                      + "".join(self.client.stderr[i:i + 60])[:4000])
                break
        if self.client.received.bad_frames:
            self.report.violation(self.step, f"the server wrote malformed frames: "
                                             f"{self.client.received.bad_frames[:3]}")


async def soak(config: SoakConfig) -> Report:
    return await Session(config).run()


__all__ = ["Report", "Session", "SoakConfig", "soak"]
