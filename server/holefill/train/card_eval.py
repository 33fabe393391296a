"""The model card's measured sections: speed on one CPU thread, pass@1 from a `holefill bench`
run, the held-out loss beside a previous model, and the decontamination report."""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

MODES = ("Van.", "Con.-", "Con.", "Chk.")


def per_token_ms(model: Any, vocab: int, prompt: int = 300, new: int = 120,
                 seed: int = 0) -> dict[str, float]:
    """Model time per generated token with a KV cache, batch 1, on this process's threads:
    median and p90 over ``new`` steps after a ``prompt``-token prefill (the first 20 steps
    are warm-up and not counted)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(5, vocab, (1, prompt), generator=gen)
    times = []
    with torch.no_grad():
        out = model(input_ids=x, use_cache=True)
        past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(new + 20):
            t0 = time.perf_counter()
            out = model(input_ids=tok, past_key_values=past, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
            times.append((time.perf_counter() - t0) * 1e3)
    times = sorted(times[20:])
    return {"median": statistics.median(times), "p90": times[int(0.9 * (len(times) - 1))]}


def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.1f}" if isinstance(x, float) else str(x)


def bench_rows(results_json: Path) -> list[dict[str, Any]]:
    """The by-group rows of a bench run whose tests ran."""
    res = json.loads(results_json.read_text(encoding="utf-8"))
    rows = res["by_group"]
    tested = {r["key"] for r in rows if r["mode"] == "Van." and r.get("pass") is not None}
    return [r for r in rows if r["key"] in tested]


def bench_section(results_json: Path) -> tuple[str, dict[str, float]]:
    """Markdown for the card and the headline numbers (single-line pass@1 per mode)."""
    res = json.loads(results_json.read_text(encoding="utf-8"))
    rows = bench_rows(results_json)
    get = {(r["key"], r["mode"]): r for r in rows}
    groups = list(dict.fromkeys(r["key"] for r in rows))
    paired = res.get("paired_with_vanilla", {}).get("Con.", {})
    head = ("| split | tasks | pass@1 % Van. | Con.- | Con. | Chk. | valid % Van. | Con. "
            "| exact % Van. | Con. | Con. vs Van. (won / lost) | model ms/token |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for g in groups:
        van = get[g, "Van."]
        valid = "valid ast.parse" if van["language"] == "python" else "valid tree-sitter"
        duel = paired.get(g, {})
        lines.append("| " + " | ".join([
            g, str(van["n"]), *(_fmt(get.get((g, m), {}).get("pass")) for m in MODES),
            _fmt(van.get(valid)), _fmt(get[g, "Con."].get(valid)), _fmt(van.get("exact")),
            _fmt(get[g, "Con."].get("exact")),
            f"+{duel.get('gains', 0)} / -{duel.get('losses', 0)}",
            _fmt(van.get("model_ms_per_token"))]) + " |")
    cfg = res["config"]
    each = ("every task" if cfg.get("infilling_per_split") is None
            else f"a fixed sample of {cfg['infilling_per_split']} tasks per split (seed "
                 f"{cfg['seed']})")
    text = (f"Measured by `{res['environment'].get('command', 'holefill bench')}` on "
            f"{res['environment'].get('machine', '?')} ({res['environment'].get('device', '?')})"
            f": HumanEval-Infilling, {each}; greedy, top-k {cfg['top_k']}, token budgets "
            f"{', '.join(f'{k} {v}' for k, v in cfg['infilling_max_new_tokens'])}; the "
            "single-line filling stops at the end of its line. Tests run in the bench's "
            "sandbox.\n\n" + "\n".join(lines))
    headline = {m: get.get(("python single-line", m), {}).get("pass", math.nan) for m in MODES}
    return text, headline


def overlap_section(overlap: dict[str, Any] | None) -> str:
    if not overlap:
        return ("The corpus of this run was not checked for overlap with HumanEval "
                "(trained with `--no-decontaminate`).")
    bad = overlap.get("contaminated", [])
    shown = "; ".join(f"`{k}` ({n} 13-gram(s), {', '.join(t)})" for k, n, t in bad[:12])
    lines = ", ".join(f"`{line}` ({n})" for line, n in overlap.get("shared_lines", [])[:8])
    return (
        f"Every training and validation file ({overlap['files_scanned']} files, "
        f"{overlap['chars_scanned'] / 1e6:.0f}M characters) was compared with every field of "
        f"HumanEval-Infilling (all four splits: the 164 problems) and HumanEval-X (C++, Python, "
        f"JavaScript, Java, Go, Rust): {overlap['reference_texts']} texts, "
        f"{overlap['reference_13grams']:,} distinct 13-grams of words (identifiers and keywords; "
        "numbers, punctuation and layout ignored; n-grams of fewer than 7 distinct words "
        f"skipped) and {overlap['reference_lines']:,} distinct code lines of at least 30 "
        "characters (`holefill.train.overlap`).\n\n"
        f"- Files sharing a 13-gram with a task: **{overlap['files_with_13gram']}**, all left out"
        f" of training. {shown}.\n"
        f"- Files sharing a long line with a task (reported, not removed): "
        f"{overlap['files_with_shared_line']}; the lines and how many files hold them: "
        f"{lines or '-'}.")
