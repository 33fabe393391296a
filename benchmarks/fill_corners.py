"""Model fills in the corners of Python, judged by CPython: what a user gets, end to end.

    python benchmarks/fill_corners.py [--model random|bundled|PATH] [--fills 300] [--seed 0]
        [--max-new-tokens 32] [--json OUT]

Files: the corner files in tests/data/corners/python (match statements, decorators, every
clause kind, nested f-strings with format specs and conversions, non-ASCII names, tab
indentation) and variants of each made here: CRLF and CR-only line breaks, form feeds before
top-level lines, every indentation step written as a tab. Cuts: 1-3 holes, random spans of
1-60 characters, half of them starting at a line's indentation (where clause lines go).
Each cut is filled through `Completer.fill` as `holefill fill` fills it (each hole kept to
its place), and the filled file is judged by every CPython of the machine that reads the
original file (the venv's, and pyenv's 3.12 and 3.13 where present: the file's versions;
holefill.bench.oracles_syntax).

Prints, per variant: fills, verified, verified and refused by a CPython (must be 0: the
guarantee), unverified (the final whole-file check said no or could not decide: never
written), and unverified fills that CPython would have taken. `--model random` is a
random-weight twin of the bundled model (same tokenizer): junk proposals that stress the
checker far more than a trained model does.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from holefill.bench.oracles_syntax import PythonOracles

ROOT = Path(__file__).resolve().parents[1]
CORNERS = ROOT / "tests" / "data" / "corners" / "python"


def variants(text: str) -> dict[str, str]:
    """The file as written, and re-written in the ways real files differ."""
    crlf = text.replace("\n", "\r\n")
    cr = text.replace("\n", "\r")
    # a form feed at the start of a top-level line after a blank one (PEP 8's page breaks)
    feeds = re.sub(r"\n\n(?=[^\s#])", "\n\n\f", text)
    tabs = tabbed(text)
    out = {"plain": text, "crlf": crlf, "cr": cr, "formfeed": feeds}
    if tabs is not None:
        out["tabs"] = tabs
    return out


def tabbed(text: str) -> str | None:
    """Every 4-space indentation step as a tab (lines inside brackets or strings included:
    what an editor's "convert indentation" does); None when the file has no such steps."""
    lines = text.split("\n")
    out = []
    for line in lines:
        lead = len(line) - len(line.lstrip(" "))
        out.append("\t" * (lead // 4) + " " * (lead % 4) + line[lead:])
    result = "\n".join(out)
    return result if result != text else None


def cuts(text: str, rng: random.Random) -> list[str]:
    """1-3 non-overlapping holes: the chunks around them."""
    n = rng.choice([1, 1, 2, 3])
    line_starts = [m.end() for m in re.finditer(r"[\r\n]+[ \t\f]*", text)]
    spans: list[tuple[int, int]] = []
    for _ in range(n * 4):
        if len(spans) == n:
            break
        a = rng.choice(line_starts) if rng.random() < 0.5 else rng.randrange(len(text))
        b = min(len(text), a + rng.randrange(1, 61))
        if all(b < c or a > d for c, d in spans):
            spans.append((a, b))
    spans.sort()
    chunks, at = [], 0
    for a, b in spans:
        chunks.append(text[at:a])
        at = b
    chunks.append(text[at:])
    return chunks


def readers_of(oracles: PythonOracles, text: str) -> list[str]:
    """The CPython versions that read `text`: the file's versions, which judge its fills."""
    return [v for v, j in oracles.judge_all(text).items() if j is not None and j.ok]


def random_twin(work: Path) -> Path:
    """The bundled model's architecture and tokenizer with fresh random weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from holefill.models import default_model_path

    src = default_model_path()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src))
    model.save_pretrained(work)
    AutoTokenizer.from_pretrained(src).save_pretrained(work)
    for extra in Path(src).glob("*.json"):  # the FIM template and other model-card files
        if not (work / extra.name).exists():
            (work / extra.name).write_text(extra.read_text(encoding="utf-8"), encoding="utf-8")
    return work


def run(model: str, fills: int, seed: int,
        max_new_tokens: int) -> tuple[dict, list[dict], list[str]]:
    import torch

    from holefill.decode.completer import Completer

    torch.set_num_threads(2)
    files = {f"{p.stem}:{kind}": v for p in sorted(CORNERS.glob("*.py"))
             for kind, v in variants(p.read_text(encoding="utf-8")).items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = (str(random_twin(Path(tmp))) if model == "random" else
                None if model == "bundled" else model)
        comp = Completer(model=path, device="cpu")
        oracles = PythonOracles()
        readers = {name: readers_of(oracles, text) for name, text in files.items()}
        rng = random.Random(seed)
        table: dict[str, Counter] = {}
        bad: list[dict] = []
        reasons: Counter = Counter()
        names = [n for n in files if readers[n]]
        t0 = time.perf_counter()
        for k in range(fills):
            name = names[k % len(names)]
            chunks = cuts(files[name], rng)
            row = table.setdefault(name.split(":")[1], Counter())
            try:
                res = comp.fill(chunks, "python", max_new_tokens=max_new_tokens,
                                keep_to_place=True, stop_at_blank_line=True)
            except Exception as exc:  # NotCompletable: the cut left no valid filling
                row["not completable" if "makes this valid" in str(exc) else "error"] += 1
                continue
            text = res.text(chunks)
            refusals = {v: j.message if j else "crashed"
                        for v, j in oracles.judge_all(text).items()
                        if v in readers[name] and not (j and j.ok)}
            row["fills"] += 1
            row["verified"] += res.verified
            row["verified, refused by CPython"] += res.verified and bool(refusals)
            row["unverified"] += not res.verified
            row["unverified, valid"] += not res.verified and not refusals
            if not res.verified:
                reasons[re.sub(r"line \d+", "line N", res.reason or "?")[:90]] += 1
            if res.verified and refusals:
                bad.append({"file": name, "chunks": chunks, "fills": res.fills,
                            "cpython": refusals})
            if (k + 1) % 25 == 0:
                print(f"  {k + 1}/{fills} fills, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr)
        versions = oracles.versions
        oracles.close()
    for reason, n in reasons.most_common():
        print(f"unverified {n}x: {reason}")
    return table, bad, versions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="random", help="random, bundled or a model folder")
    ap.add_argument("--fills", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--json", type=Path, help="write the table and every bad fill here")
    args = ap.parse_args()
    table, bad, versions = run(args.model, args.fills, args.seed, args.max_new_tokens)
    cols = ["fills", "verified", "verified, refused by CPython", "unverified",
            "unverified, valid", "not completable", "error"]
    print(f"model {args.model}, {args.fills} fills, seed {args.seed}; CPythons: "
          f"{', '.join(versions)}")
    print("| variant | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    total: Counter = Counter()
    for kind, row in sorted(table.items()):
        total.update(row)
        print(f"| {kind} | " + " | ".join(str(row[c]) for c in cols) + " |")
    print("| all | " + " | ".join(str(total[c]) for c in cols) + " |")
    for case in bad[:5]:
        print(f"VERIFIED BUT REFUSED: {case['file']} fills={case['fills']!r} "
              f"{case['cpython']}")
    if args.json:
        args.json.write_text(json.dumps({"table": {k: dict(v) for k, v in table.items()},
                                         "bad": bad}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
