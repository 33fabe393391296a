"""Witnesses that read like code: plain and readable Python witnesses of the same states, side
by side.

The states are every prefix (every `--stride`-th character) of the real middles of
HumanEval-Infilling multi-line and random-span tasks and of standard-library span cuts: the
text before the hole is the prompt and that prefix, the text after it the suffix, as when the
decoder must end a hole early. Both checkers witness every state (`check(...,
want_witness=True)`): "plain" leaves the choice among equally short witnesses to the core and
puts a blank between all lexemes of a hole (the witnesses before witness_style), "readable" is
the default checker. Printed per set and checker: states, witnesses, witnesses that `ast.parse`
accepts, witnesses the checker's own re-check refused (rendered, but unverified), the share
that holds `b""`, a backslash continuation, `while`, `;`, a blank before `:`/`,`/`)`, the
mean witness length, the mean check time; and the states that lost a witness (must be 0).

    python benchmarks/bench_witness.py [--tasks N] [--stdlib N] [--stride K] [--show N]
"""

from __future__ import annotations

import argparse
import ast
import re
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from holefill import Checker
from holefill.datasets import humaneval_infilling, python_cuts
from holefill.languages import get_language
from holefill.lexing.python_layout import PythonLexer

# What a person would not write: (name, test on the witness).
UGLY: dict[str, Callable[[str], bool]] = {
    'b""': lambda w: 'b""' in w,
    "\\ cont": lambda w: "\\\n" in w or w.endswith("\\"),
    "while": lambda w: re.search(r"\bwhile\b", w) is not None,
    ";": lambda w: ";" in w,
    "blank ):,": lambda w: re.search(r"[^\s] [:,)\]]", w) is not None,
}


@dataclass
class Tally:
    states: int = 0
    witnesses: int = 0
    parsed: int = 0
    unverified: int = 0  # witnesses whose filled text the checker's own re-check refused
    chars: int = 0
    seconds: float = 0.0
    ugly: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UGLY, 0))

    def add(self, before: str, fill: str | None, after: str, seconds: float,
            verified: bool) -> None:
        self.states += 1
        self.seconds += seconds
        if fill is None:
            return
        self.witnesses += 1
        self.unverified += not verified
        self.chars += len(fill)
        self.parsed += parses(before + fill + after)
        for name, test in UGLY.items():
            self.ugly[name] += test(fill)


def parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def states(tasks: int, stdlib: int, stride: int) -> Iterator[tuple[str, str, str, str]]:
    """(set, name, text before the hole, text after it) for every middle prefix."""
    for split in ("multi-line", "random-span"):
        rows = humaneval_infilling(split)
        step = max(1, len(rows) // tasks)
        for row in rows[::step][:tasks]:
            mid = row["canonical_solution"]
            for k in range(0, len(mid) + 1, stride):
                yield split, row["task_id"], row["prompt"] + mid[:k], row["suffix"]
    for cut in python_cuts("span", stdlib, seed=14):
        mid = cut.middles[0]
        for k in range(0, len(mid) + 1, stride):
            yield "stdlib span", cut.name, cut.chunks[0] + mid[:k], cut.chunks[1]


def row(label: str, t: Tally) -> str:
    w = max(t.witnesses, 1)
    shares = " ".join(f"{100 * n / w:>9.1f}%" for n in t.ugly.values())
    return (f"{label:<22} {t.states:>6} {t.witnesses:>6} {100 * t.parsed / w:>7.2f}% "
            f"{t.unverified:>6} {shares} {t.chars / w:>7.1f} "
            f"{1e3 * t.seconds / max(t.states, 1):>7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=40, help="tasks per HumanEval split")
    ap.add_argument("--stdlib", type=int, default=40, help="standard-library span cuts")
    ap.add_argument("--stride", type=int, default=3, help="every k-th prefix of a middle")
    ap.add_argument("--show", type=int, default=0, help="print N witnesses that changed")
    args = ap.parse_args()

    compiled = get_language("python").compile()
    checkers = {"plain": Checker(compiled, PythonLexer(compiled, readable=False)),
                "readable": Checker(compiled, PythonLexer(compiled, readable=True))}
    tallies: dict[tuple[str, str], Tally] = {}
    lost: list[str] = []
    shown = 0
    for kind, name, before, after in states(args.tasks, args.stdlib, args.stride):
        fills: dict[str, str | None] = {}
        for label, chk in checkers.items():
            t0 = time.perf_counter()
            res = chk.check([before, after], want_witness=True)
            dt = time.perf_counter() - t0
            fills[label] = res.fills[0] if res.fills else None
            verified = res.stats.get("witness_verified") == 1.0
            for key in ((kind, label), ("all", label)):
                tallies.setdefault(key, Tally()).add(before, fills[label], after, dt, verified)
        if fills["plain"] is not None and fills["readable"] is None:
            lost.append(f"{name} at {len(before)}")
        if shown < args.show and fills["plain"] != fills["readable"]:
            shown += 1
            print(f"{name}: {before[-30:]!r} | {fills['plain']!r} -> {fills['readable']!r}")

    ugly = " ".join(f"{n:>10}" for n in UGLY)
    print(f"{'set / witnesses':<22} {'states':>6} {'wit':>6} {'ast ok':>8} {'unver':>6} {ugly} "
          f"{'chars':>7} {'ms':>7}")
    for kind in ("multi-line", "random-span", "stdlib span", "all"):
        for label in checkers:
            if (kind, label) in tallies:
                print(row(f"{kind} {label}", tallies[(kind, label)]))
    print(f"states that lost a witness: {len(lost)}", *lost[:10])


if __name__ == "__main__":
    main()
