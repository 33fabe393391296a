"""Constrained vs unconstrained filling with any model, on a fixed sample, side by side.

    python benchmarks/eval_decode.py [--model PATH-OR-HF-ID] [--n 20] [--max-new-tokens 32]

Samples (seeded): standard-library Python cuts (random spans with 1/2/3 holes, boundary cuts,
whole lines) and HumanEval-X C++ spans with 1/2/3 holes. Validity is judged by `ast.parse` and
tree-sitter-cpp, never by our grammar. Prints one Markdown table: valid %, exact match %,
tokens per sample, rejections per sample, per-token check time (median / p90) and model time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from holefill.bench.oracles import cpp_ts_valid, python_valid
from holefill.datasets import (
    TREE_SITTER_REJECTS_CPP,
    Cut,
    humaneval_cpp_programs,
    python_cuts,
    span_cuts,
)


def samples(n: int, seed: int) -> list[tuple[str, str, Cut]]:
    """(group, language, cut): n per group."""
    out: list[tuple[str, str, Cut]] = []
    groups = [("py span 1h", "span", 1), ("py boundary", "boundary", 1), ("py line", "line", 1),
              ("py span 2h", "span", 2), ("py span 3h", "span", 3)]
    for name, kind, holes in groups:
        out += [(name, "python", c)
                for c in python_cuts(kind, n, seed=seed, holes=holes, max_lines=300)]
    programs = [p for p in humaneval_cpp_programs() if p[0] not in TREE_SITTER_REJECTS_CPP]
    for holes in (1, 2, 3):
        cuts = list(span_cuts(programs, holes, 1, seed=seed))[:n]
        out += [(f"cpp span {holes}h", "cpp", c) for c in cuts]
    return out


def run(args: argparse.Namespace) -> None:
    import torch

    from holefill.decode import Completer

    torch.manual_seed(0)
    t0 = time.perf_counter()
    comp = Completer(model=args.model, device=args.device, threads=args.threads)
    print(f"model {comp.name} on {comp.backend.device} ({comp.backend.dtype}), "
          f"template {comp.backend.template.family}, loaded in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    judges = {"python": python_valid, "cpp": cpp_ts_valid}
    modes = [("Van.", dict(constrained=False)), ("Con.-", dict(on_stuck="stop")),
             ("Con.", dict(on_stuck="witness"))]
    rows: dict[tuple[str, str], list[dict]] = {}
    data = samples(args.n, args.seed)
    for i, (group, lang, cut) in enumerate(data):
        for mode, opts in modes:
            res = comp.fill(cut.chunks, lang, max_new_tokens=args.max_new_tokens,
                            top_k=args.top_k, seed=0, **opts)
            rows.setdefault((group, mode), []).append({
                "valid": judges[lang](cut.filled(res.fills)),
                "exact": tuple(res.fills) == cut.middles,
                **res.stats,
            })
        print(f"\r{i + 1}/{len(data)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(table(rows))


def table(rows: dict[tuple[str, str], list[dict]]) -> str:
    head = ("| sample | mode | n | valid % | exact % | tokens | rejected | check ms/token "
            "(median) | check ms (p90) | model ms/token |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (group, mode), rs in rows.items():
        n = len(rs)
        per_tok = [r["check_ms_per_token"] for r in rs if "check_ms_per_token" in r]
        p90 = [r["check_ms_p90"] for r in rs if "check_ms_p90" in r]
        lines.append(
            f"| {group} | {mode} | {n} | {100 * sum(r['valid'] for r in rs) / n:.1f} | "
            f"{100 * sum(r['exact'] for r in rs) / n:.1f} | "
            f"{statistics.mean(r['tokens'] for r in rs):.1f} | "
            f"{statistics.mean(r['rejected'] for r in rs):.1f} | "
            f"{_med(per_tok)} | {_med(p90)} | "
            f"{_med([r['model_ms_per_token'] for r in rs if r['tokens']])} |")
    return "\n".join(lines)


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}" if xs else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="folder or HF id (default: bundled model)")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--n", type=int, default=10, help="samples per group")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--top-k", type=int, default=8)
    run(p.parse_args())


if __name__ == "__main__":
    main()
