"""Constrained fills of holes cut into real C/C++ files, judged by tree-sitter and g++/gcc.

For files of benchmarks/cpp_corpus.py's corpora that both oracles accept whole, cut 1-3 spans
(10-60 characters, seeded, whose removed text keeps the reading of the text around it), fill
them with holefill's constrained loop, and judge the filled
file: tree-sitter-cpp/-c (no ERROR/MISSING node) and the compiler with the corpus's include
paths. A compiler rejection is "syntax" when its first error is a syntax error (`expected
...`, `stray ...`, `missing terminating ...`, an invalid directive) and "semantic" otherwise
(an undeclared name, a type that is not one, a wrong argument count): the fill parses as C++
but names things that do not exist, the part a context-free grammar cannot see (the grammars'
headers). The semantic rate is the share of fills rejected only for semantic reasons.

    python benchmarks/cpp_fills.py [--language cpp|c] [--model tiny|bundled|PATH]
                                   [--files N] [--per-hole N] [--max-new-tokens N]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import cpp_corpus  # noqa: E402

SYNTAX = re.compile(
    r"error: (expected |stray |missing terminating|unterminated|invalid preprocessing"
    r"|#(else|elif|endif) without|unbalanced|invalid suffix|empty character constant"
    r"|extra tokens|too many decimal points|exponent has no digits|missing '\)'"
    r"|unmatched|macro names must)"
)


# "expected" errors that g++ gives when a name is not declared as what the text uses it as
# (a base class, a type, a macro that would expand to one): semantic, not syntax.
UNKNOWN_NAME = re.compile(r"expected (class-name|type-specifier|constructor, destructor, or type "
                          r"conversion|template-name)")


def model_dir(name: str) -> Path | None:
    if name == "bundled":
        return None
    if name == "tiny":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from conftest import build_tiny_model

        out = Path(tempfile.mkdtemp(prefix="holefill-tiny-"))
        return build_tiny_model(out)
    return Path(name)


def compile_verdict(cc: cpp_corpus.Compiler, path: Path, text: str, includes: list[str],
                    flags: tuple[str, ...]) -> tuple[str, str]:
    """'ok', 'syntax' or 'semantic' for `text` compiled as if it were `path`, judged by the
    compiler's first error (later ones are often cascades of it), and that error."""
    lang = "c" if cc.cmd[0] == "gcc" else "c++"
    cmd = [*cc.cmd, *[f"-I{i}" for i in includes], *flags, f"-iquote{path.parent}", "-x", lang,
           "-"]
    res = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=300)
    if res.returncode == 0:
        return "ok", ""
    first = next((line for line in res.stderr.splitlines() if "error:" in line), res.stderr)
    syntax = SYNTAX.search(first) and not UNKNOWN_NAME.search(first)
    return ("syntax" if syntax else "semantic"), first.split("error:", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--language", default="cpp", choices=["cpp", "c"])
    ap.add_argument("--model", default="tiny", help="tiny (random weights), bundled, or a path")
    ap.add_argument("--files", type=int, default=12, help="files per hole count")
    ap.add_argument("--per-hole", type=int, default=1, help="cuts per file and hole count")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--sdists", type=Path, default=cpp_corpus.DEFAULT_SDISTS)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch

    from holefill import Checker
    from holefill.bench.scaling import reading_cuts
    from holefill.decode import Completer

    torch.set_num_threads(1)
    comp = Completer(model=model_dir(args.model), device="cpu", threads=1)
    checker = Checker.for_language(args.language)
    corpora = cpp_corpus.C_CORPORA if args.language == "c" else cpp_corpus.CPP_CORPORA
    ts = cpp_corpus.TreeSitter(args.language)
    cc = cpp_corpus.Compiler(args.language)
    pool = []
    for corpus in corpora:
        includes = [str(cpp_corpus.resolve(i, args.sdists)) for i in corpus.includes]
        for f in cpp_corpus.corpus_files(corpus, args.sdists):
            text = f.read_text(encoding="utf-8", errors="replace")
            if 300 < len(text) < 12_000 and ts.accepts(text) and cc.accepts(f, includes,
                                                                           corpus.flags):
                pool.append((corpus, f, text, includes))
    rng = random.Random(args.seed)
    print(f"{len(pool)} files accepted by both oracles (300 B - 12 kB); model {args.model}")
    head = f"{'holes':>5} {'fills':>5} {'ts ok':>6} {'cc ok':>6} {'syntax':>6} {'semantic':>8}"
    print(head + "   (cc: the compiler; syntax/semantic: why it refused)")
    totals = {"fills": 0, "ok": 0, "syntax": 0, "semantic": 0, "ts": 0, "either": 0}
    for holes in (1, 2, 3):
        row = {"fills": 0, "ok": 0, "syntax": 0, "semantic": 0, "ts": 0, "either": 0}
        for corpus, f, text, includes in rng.sample(pool, min(args.files, len(pool))):
            for _ in range(args.per_hole):
                cuts = reading_cuts(checker, text, holes, 1, rng, f.name, span=(10, 60))
                if not cuts:
                    continue
                chunks = list(cuts[0].chunks)
                res = comp.fill(chunks, args.language, max_new_tokens=args.max_new_tokens,
                                top_k=8, seed=args.seed)
                filled = "".join(c + x for c, x in zip(chunks, [*res.fills, ""], strict=True))
                row["fills"] += 1
                ts_ok = ts.accepts(filled)
                row["ts"] += ts_ok
                verdict, error = compile_verdict(cc, f, filled, includes, corpus.flags)
                row[verdict] += 1
                row["either"] += ts_ok or verdict == "ok"
                if verdict == "syntax" or not ts_ok:
                    print(f"      {verdict}{'' if ts_ok else ', tree-sitter refuses'}: "
                          f"{f.name}: {res.fills!r}:{error[:100]}")
        print(f"{holes:>5} {row['fills']:>5} {row['ts']:>6} {row['ok']:>6} {row['syntax']:>6} "
              f"{row['semantic']:>8}")
        for k in totals:
            totals[k] += row[k]
    n = max(totals["fills"], 1)
    print(f"\nall: {totals['fills']} fills; tree-sitter accepts {totals['ts']} "
          f"({100 * totals['ts'] / n:.0f}%); the compiler accepts {totals['ok']}; "
          f"syntax rejections {totals['syntax']} ({100 * totals['syntax'] / n:.1f}%); "
          f"semantic rate {100 * totals['semantic'] / n:.1f}%; accepted by tree-sitter or the "
          f"compiler {totals['either']}/{totals['fills']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
