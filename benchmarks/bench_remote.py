"""Remote vs in-process constrained fills of the same weights, side by side in one run.

    python benchmarks/bench_remote.py [--url URL] [--max-new-tokens 32] [--limit N]

Without --url it exports the bundled model to GGUF (`holefill models --export-gguf`) and
starts llama.cpp's server (llama-cpp-python) on 127.0.0.1 itself. Samples: the fixed samples
of `holefill bench --quick` (standard-library Python spans, boundary cuts and lines with 1-3
holes, HumanEval-X C++ spans, JSON spans). Both sides decode greedily with the same template
(the bundled model's SPM layout) and settings. Prints valid % (ast.parse, tree-sitter-cpp,
json.loads), how many fills are identical, requests per filled hole, and time per token
(total, and model or server part), overall and per language with each language's oracles
(Python ast.parse; C++ tree-sitter-cpp and `g++ -fsyntax-only`, also on the original text,
since a few HumanEval-X originals are refused by one of them; JSON json.loads), then the
samples whose fills differ (and where they first differ) and those an oracle refuses (with
g++'s first error). `--languages python,cpp` runs those
only; `--out FILE` writes every sample's fills and verdicts as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from holefill.bench.config import BenchConfig
from holefill.bench.datasets import build_samples
from holefill.bench.oracles import GPP_FLAGS, fast_judge, gpp_syntax_ok, have_gpp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running server (default: start llama_cpp.server here)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--limit", type=int, default=0, help="only the first N samples")
    ap.add_argument("--fim-format", default="spm", help="the template layout on both sides")
    ap.add_argument("--context-length", type=int, default=None,
                    help="the served context (llama-cpp-python does not tell it; default: "
                    "what the server says, 512 for the server started here)")
    ap.add_argument("--languages", default="",
                    help="comma-separated languages to run (default: all of the samples)")
    ap.add_argument("--out", type=Path, help="every sample's fills and verdicts (JSON lines)")
    args = ap.parse_args()
    if args.url:
        return run(args, args.url)
    args.context_length = args.context_length or 512
    from holefill.decode.gguf_export import export_gguf
    from holefill.decode.llama_server import llama_cpp_available, serving

    if not llama_cpp_available():
        print("llama-cpp-python[server] is not installed; pass --url of a running server",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        gguf = export_gguf(None, Path(tmp) / "default.gguf")
        with serving(gguf, log=Path(tmp) / "server.log") as server:
            return run(args, server.url)


def run(args: argparse.Namespace, url: str) -> int:
    from holefill.decode import Completer, NotCompletable

    samples = build_samples(BenchConfig())
    if args.languages:
        wanted = set(args.languages.split(","))
        samples = [s for s in samples if s.language in wanted]
    if args.limit:
        samples = samples[: args.limit]
    local = Completer(model=None, device="cpu", fim_format=args.fim_format)
    remote = Completer(model=url, fim_format=args.fim_format,
                       context_length=args.context_length)
    print(f"in-process: {local.name} (template {local.backend.template.family}, "
          f"{local.backend.template.fim_format}); remote: {remote.name} (template "
          f"{remote.backend.template.family}, {remote.backend.template.fim_format}, "
          f"context {remote.backend.context_length})", file=sys.stderr)
    opts = dict(max_new_tokens=args.max_new_tokens, top_k=args.top_k, temperature=0.0)
    rows: dict[str, list[dict]] = {"in-process": [], "remote": []}
    differ = []
    invalid: list[str] = []
    skipped = 0
    for i, s in enumerate(samples):
        fills = {}
        try:
            local.fill(list(s.cut.chunks), s.language, max_new_tokens=0)
        except NotCompletable:  # the cut left text no filling repairs (both sides refuse)
            skipped += 1
            continue
        for side, comp in (("in-process", local), ("remote", remote)):
            t0 = time.perf_counter()
            res = comp.fill(list(s.cut.chunks), s.language, **opts)
            wall = time.perf_counter() - t0
            text = s.cut.filled(res.fills)
            rows[side].append(dict(language=s.language, sample=f"{s.group} {s.name}",
                                   text=text, fills=res.fills,
                                   valid=fast_judge(s.language)(text), wall=wall,
                                   tokens=res.stats["tokens"], model=res.stats["model_s"],
                                   requests=res.stats.get("requests", 0.0),
                                   holes=len(res.fills), checks=res.stats["checks"],
                                   inexact=res.stats.get("inexact", 0.0)))
            fills[side] = res.fills
        for side in rows:
            if not rows[side][-1]["valid"]:
                invalid.append(f"{side} {s.group} {s.name}: {fills[side]!r}")
        if fills["in-process"] != fills["remote"]:
            differ.append((s, fills, rows["remote"][-1]["inexact"]))
        print(f"{i + 1}/{len(samples)} {s.group}: "
              f"{'same' if fills['in-process'] == fills['remote'] else 'DIFFERENT'}",
              file=sys.stderr)
    print(f"{skipped} of {len(samples)} samples skipped: not completable as cut "
          "(NotCompletable on both sides)\n")
    print(table(rows, len(samples) - skipped, len(differ)))
    originals = {f"{s.group} {s.name}": s.cut.original for s in samples}
    print("\n" + by_language(rows, originals))
    if args.out:
        with args.out.open("w") as f:
            for side, rs in rows.items():
                for r in rs:
                    f.write(json.dumps({"side": side, **r}) + "\n")
    inexact = sum(r["inexact"] > 0 for r in rows["remote"])
    unexplained = sum(n == 0 for _, _, n in differ)
    print(f"\n{inexact} remote fills continued from re-tokenized text, took a near tie or "
          "read an end from an empty token string (stats['inexact'] > 0); "
          f"{unexplained} fills differ without that")
    if invalid:
        print("\ninvalid to the oracle:\n  " + "\n  ".join(invalid))
    refused = [(side, r) for side, rs in rows.items() for r in rs
               if r["language"] == "cpp" and have_gpp() and not gpp_syntax_ok(r["text"], 30.0)]
    if refused:
        print(f"\nrefused by g++ -fsyntax-only ({len(refused)}), its first error:")
        for side, r in refused:
            print(f"  {side} {r['sample']}: {gpp_first_error(r['text'])}")
    for s, fills, n in differ:
        print(f"\n{s.group} {s.name} (inexact steps: {n:g}; {first_difference(fills)}):\n"
              f"  in-process {fills['in-process']!r}\n  remote     {fills['remote']!r}")
    return 0


def gpp_first_error(text: str) -> str:
    proc = subprocess.run(["g++", *GPP_FLAGS, "-fsyntax-only", "-x", "c++", "-"], input=text,
                          capture_output=True, text=True, timeout=30)
    errors = [line.split("error: ", 1)[1] for line in proc.stderr.splitlines()
              if "error: " in line]
    return errors[0] if errors else f"exit status {proc.returncode}"


def first_difference(fills: dict[str, list[str]]) -> str:
    """Where the two sides' fills first differ; "one more newline" when one side has two
    newline tokens where the other has them as one (a text prompt re-tokenized: "\n" "\n"
    read back as "\n\n" makes the model see other tokens from there on)."""
    a, b = fills["in-process"], fills["remote"]
    hole = next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
    x, y = a[hole], b[hole]
    at = next((k for k in range(min(len(x), len(y))) if x[k] != y[k]), min(len(x), len(y)))
    merged = (x[:at].endswith("\n") and y[at:].startswith("\n")
              or y[:at].endswith("\n") and x[at:].startswith("\n"))
    return (f"hole {hole + 1} from character {at}"
            + (", one more newline on one side" if merged else ""))


def by_language(rows: dict[str, list[dict]], originals: dict[str, str]) -> str:
    """Valid % per language and oracle on each side (C++: g++ -fsyntax-only besides
    tree-sitter, and both oracles on the original texts), identical fills, requests per hole
    and ms per token."""
    out = ["| language | side | samples | identical | oracle: valid (original valid) | "
           "requests / hole | ms / token |", "|---|---|---|---|---|---|---|"]
    langs = sorted({r["language"] for r in rows["in-process"]})
    for lang in langs:
        pairs = [(a, b) for a, b in zip(rows["in-process"], rows["remote"], strict=True)
                 if a["language"] == lang]
        same = sum(a["fills"] == b["fills"] for a, b in pairs)
        for i, side in enumerate(rows):
            rs = [p[i] for p in pairs]
            verdicts = [f"{name} {sum(map(ok, [r['text'] for r in rs]))}/{len(rs)} "
                        f"({sum(ok(originals[r['sample']]) for r in rs)}/{len(rs)})"
                        for name, ok in oracles(lang)]
            holes = sum(len(r["fills"]) for r in rs)
            tokens = sum(r["tokens"] for r in rs) or 1
            out.append(f"| {lang} | {side} | {len(rs)} | {same} | {'; '.join(verdicts)} | "
                       f"{sum(r['requests'] for r in rs) / holes:.2f} | "
                       f"{1e3 * sum(r['wall'] for r in rs) / tokens:.1f} |")
    return "\n".join(out)


def oracles(language: str) -> list[tuple[str, Callable[[str], bool]]]:
    names = {"python": "ast.parse", "cpp": "tree-sitter", "json": "json.loads"}
    out = [(names.get(language, language), fast_judge(language))]
    if language == "cpp" and have_gpp():
        out.append(("g++", lambda text: gpp_syntax_ok(text, 30.0)))
    return out


def table(rows: dict[str, list[dict]], n: int, differ: int) -> str:
    out = [f"{n} samples, {n - differ} identical fills ({100 * (n - differ) / n:.0f}%)", "",
           "| side | valid % | holes | tokens | requests / hole | ms / token | "
           "model or server ms / token | checks / token |",
           "|---|---|---|---|---|---|---|---|"]
    for side, rs in rows.items():
        holes = sum(r["holes"] for r in rs)
        tokens = sum(r["tokens"] for r in rs) or 1
        out.append(
            f"| {side} | {100 * statistics.mean(r['valid'] for r in rs):.0f} | {holes} | "
            f"{int(tokens)} | {sum(r['requests'] for r in rs) / holes:.2f} | "
            f"{1e3 * sum(r['wall'] for r in rs) / tokens:.1f} | "
            f"{1e3 * sum(r['model'] for r in rs) / tokens:.1f} | "
            f"{sum(r['checks'] for r in rs) / tokens:.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
