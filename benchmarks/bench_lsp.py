"""Inline completion latency of the real language server, constrained vs unconstrained.

    python benchmarks/bench_lsp.py [--model PATH] [--n 10] [--max-new-tokens 64] [--seed 0]

Starts `holefill serve` as a subprocess and talks LSP to it over stdio (pygls' client), as an
editor would. Samples (seeded): standard-library files of 200-2,000 lines (those held out
from the bundled model's training first); in each, a span inside a function body is deleted
with a ranged didChange and the cursor put there. Timed on the client, per sample and mode:

- first: the first suggestion after opening (nothing cached for the document);
- warm: the same request again (answered from the suggestion cache; an empty suggestion is
  not cached, so those are timed in a row of their own);
- typing: the first character of the suggestion typed, then a request one character on
  (typing along a shown suggestion: the cache serves the rest); suggestions of two or more
  characters only, since typing all of a suggestion asks for a new one.

Constrained and unconstrained use the same model and server, switched with
`workspace/didChangeConfiguration`; each mode gets its own document URI, because the cache
is per document and does not know which mode filled it. Prints the start-up times (server
start -> answer to `initialize`, then until the first suggestion: loading the model) and one
Markdown table: median and p90 in ms per mode, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import random
import re
import statistics
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

import holefill

HELDOUT = Path(holefill.__file__).parent / "models" / "default" / "heldout_files.txt"
MIN_LINES, MAX_LINES, FILES = 200, 2000, 5
SPEED = re.compile(r"inline completion: (\d+) ms")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# ------------------------------------------------------------------------------ samples

def pick_files(seed: int) -> list[Path]:
    """Five standard-library modules of 200-2,000 lines that `ast.parse` accepts; files held
    out from the bundled model's training come first, so it cannot recite them."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])

    def fits(p: Path) -> bool:
        # tests and generated codec tables are not the code people type
        if not p.is_file() or {"test", "tests", "encodings"} & set(p.parts) \
                or p.name.startswith("test"):
            return False
        try:
            text = p.read_text(encoding="utf-8")
            ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            return False
        return MIN_LINES <= text.count("\n") <= MAX_LINES

    held = []
    if HELDOUT.exists():
        for line in HELDOUT.read_text().splitlines():
            if line.startswith("stdlib/") and fits(stdlib / line[len("stdlib/"):]):
                held.append(stdlib / line[len("stdlib/"):])
    rng = random.Random(seed)
    files = rng.sample(held, min(FILES, len(held)))
    if len(files) < FILES:
        rest = [p for p in sorted(stdlib.glob("*.py")) if p not in files and fits(p)]
        files += rng.sample(rest, FILES - len(files))
    return files


@dataclass(frozen=True)
class Sample:
    path: Path
    text: str  # before the deletion
    start: int  # the deleted span, code point offsets; the cursor goes to start
    end: int


def make_sample(path: Path, rng: random.Random) -> Sample:
    """Delete 3-30 characters of one line of a statement inside a function body."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    line_start = [0]
    for line in lines:
        line_start.append(line_start[-1] + len(line))
    stmts = [s for fn in ast.walk(ast.parse(text))
             if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) for s in fn.body
             if not isinstance(s, ast.Expr | ast.Pass)]  # docstrings are not code
    stmt = rng.choice(stmts)
    lineno = rng.randint(stmt.lineno, stmt.end_lineno or stmt.lineno)
    line = lines[lineno - 1].rstrip("\r\n")
    first = len(line) - len(line.lstrip())
    if len(line) - first < 4:  # a short line ("else:"): take its statement's first line
        lineno = stmt.lineno
        line = lines[lineno - 1].rstrip("\r\n")
        first = len(line) - len(line.lstrip())
    a = rng.randint(first, max(first, len(line) - 3))
    b = min(len(line), a + rng.randint(3, 30))
    return Sample(path, text, line_start[lineno - 1] + a, line_start[lineno - 1] + b)


def position(text: str, offset: int) -> types.Position:
    """In code points: the client asks for utf-32 positions."""
    line_start = text.rfind("\n", 0, offset) + 1
    return types.Position(line=text.count("\n", 0, offset), character=offset - line_start)


# ------------------------------------------------------------------------------- client

@dataclass
class Bench:
    client: LanguageClient
    logs: list[str] = field(default_factory=list)
    constrained: bool = True
    docs: int = 0

    def configure(self, constrained: bool) -> None:
        if constrained != self.constrained:
            self.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"holefill": {"constrained": constrained}}))
            self.constrained = constrained

    def open(self, name: str, text: str) -> str:
        self.docs += 1
        uri = f"file:///bench/{self.docs}/{name}"
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text=text)))
        return uri

    def edit(self, uri: str, version: int, text: str, a: int, b: int, new: str) -> str:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(position(text, a), position(text, b)), text=new)]))
        return text[:a] + new + text[b:]

    async def complete(self, uri: str, text: str, offset: int) -> tuple[float, str]:
        """Milliseconds on the client, and the suggested text ("" for none)."""
        t0 = time.perf_counter()
        res = await self.client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position(text, offset),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
        ms = 1e3 * (time.perf_counter() - t0)
        items = res.items if isinstance(res, types.InlineCompletionList) else res or []
        return ms, str(items[0].insert_text) if items else ""


async def start(args: argparse.Namespace) -> tuple[Bench, dict[str, float]]:
    client = LanguageClient("holefill-bench", "0.1")
    bench = Bench(client)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        bench.logs.append(params.message)

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_show(params: types.ShowMessageParams) -> None:
        print(params.message, file=sys.stderr)

    options: dict[str, object] = {"maxNewTokens": args.max_new_tokens, "debounceMs": 0,
                                  "constrained": True}
    if args.model:
        options["model"] = args.model
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    await client.start_io(sys.executable, "-m", "holefill", "serve", env=env)
    _drain_stderr(client)
    await client.initialize_async(types.InitializeParams(
        # utf-32: positions are code points, as Python's string offsets are
        capabilities=types.ClientCapabilities(general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf32])),
        initialization_options=options))
    times["start -> initialize answered"] = time.perf_counter() - t0
    client.initialized(types.InitializedParams())  # the server starts loading the model
    t1 = time.perf_counter()
    warmup = "def f(a):\n    return a + \n"
    uri = bench.open("warmup.py", warmup)
    await bench.complete(uri, warmup, warmup.index("+ ") + 2)
    times["initialized -> first suggestion (model load + 1 fill)"] = time.perf_counter() - t1
    fill_ms = [int(m.group(1)) for line in bench.logs if (m := SPEED.search(line))]
    if fill_ms:
        times["  of which loading the model (less the server's fill time)"] = (
            times["initialized -> first suggestion (model load + 1 fill)"] - fill_ms[0] / 1e3)
    bench.logs.clear()
    return bench, times


def _drain_stderr(client: LanguageClient) -> None:
    """pygls pipes the server's stderr and never reads it: a full pipe would block the
    server. Read it here and pass it on."""
    proc = getattr(client, "_server", None)
    if proc is None or proc.stderr is None:
        return
    stream = proc.stderr

    async def pump() -> None:
        while line := await stream.readline():
            sys.stderr.write(line.decode(errors="replace"))

    task = asyncio.ensure_future(pump())
    _TASKS.add(task)  # the loop keeps only weak references to tasks


_TASKS: set[asyncio.Future] = set()


# ------------------------------------------------------------------------------ the run

MEASURES = ("first", "warm", "warm-empty", "typing")


async def run(args: argparse.Namespace) -> None:
    files = pick_files(args.seed)
    print("files: " + ", ".join(f"{p.name} ({p.read_text().count(chr(10))} lines)"
                                for p in files), file=sys.stderr)
    bench, startup = await start(args)
    ms: dict[tuple[bool, str], list[float]] = {(c, m): [] for c in (True, False)
                                               for m in MEASURES}
    empty = {True: 0, False: 0}
    not_cached = {True: 0, False: 0}
    rng = random.Random(args.seed)
    for i in range(args.n):
        sample = make_sample(files[i % len(files)], rng)
        # alternate which mode goes first, so neither always finds the CPU warmer
        for constrained in ((True, False) if i % 2 == 0 else (False, True)):
            bench.configure(constrained)
            uri = bench.open(sample.path.name, sample.text)
            text = bench.edit(uri, 2, sample.text, sample.start, sample.end, "")
            cursor = sample.start
            first_ms, suggestion = await bench.complete(uri, text, cursor)
            warm_ms, again = await bench.complete(uri, text, cursor)
            ms[constrained, "first"].append(first_ms)
            ms[constrained, "warm" if suggestion else "warm-empty"].append(warm_ms)
            not_cached[constrained] += again != suggestion
            # a one-character suggestion typed is finished: the next request is a new fill
            if len(suggestion) > 1:
                text = bench.edit(uri, 3, text, cursor, cursor, suggestion[0])
                typing_ms, rest = await bench.complete(uri, text, cursor + 1)
                ms[constrained, "typing"].append(typing_ms)
                not_cached[constrained] += rest != suggestion[1:]
            if not suggestion:
                empty[constrained] += 1
            bench.client.text_document_did_close(types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
        print(f"sample {i + 1}/{args.n}: {sample.path.name}", file=sys.stderr)
        if args.verbose:  # the server's own account: tokens, rejections, check times
            for line in bench.logs:
                print("  " + line, file=sys.stderr)
        bench.logs.clear()
    await bench.client.shutdown_async(None)
    bench.client.exit(None)
    await bench.client.stop()
    report(args, startup, ms, empty, not_cached)


def report(args: argparse.Namespace, startup: dict[str, float],
           ms: dict[tuple[bool, str], list[float]], empty: dict[bool, int],
           not_cached: dict[bool, int]) -> None:
    model = args.model or "bundled default"
    print(f"\nholefill serve, model {model}, {args.n} samples, max {args.max_new_tokens} new "
          f"tokens, seed {args.seed}\n")
    for what, seconds in startup.items():
        print(f"- {what}: {seconds:.2f} s")
    print("\n| inline completion (ms) | n | constrained median | p90 | unconstrained median "
          "| p90 | ratio con./unc. (median) |")
    print("|---|---|---|---|---|---|---|")
    labels = {"first": "first suggestion", "warm": "same request again (cache)",
              "warm-empty": "same request again, after an empty one",
              "typing": "typing along (1 char typed)"}
    for m in MEASURES:
        con, unc = ms[True, m], ms[False, m]
        if not con and not unc:
            continue
        if not con or not unc:
            print(f"| {labels[m]} | {len(con)}/{len(unc)} | - | - | - | - | - |")
            continue
        ratio = statistics.median(con) / max(statistics.median(unc), 1e-9)
        print(f"| {labels[m]} | {len(con)}/{len(unc)} | {statistics.median(con):.1f} | "
              f"{pct(con, .9):.1f} | {statistics.median(unc):.1f} | {pct(unc, .9):.1f} | "
              f"{ratio:.2f} |")
    print(f"\nn: constrained/unconstrained samples. Empty first suggestions: constrained "
          f"{empty[True]}, unconstrained {empty[False]}. Repeated or typed-along answers "
          f"that differed from the first: constrained {not_cached[True]}, unconstrained "
          f"{not_cached[False]}.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="model folder or HF id (default: bundled)")
    ap.add_argument("--n", type=int, default=10, help="samples (each in both modes)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print the server's log lines per sample")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
