"""`holefill bench`: the benchmark suite behind docs/bench/ (DESIGN §9).

Constrained vs unconstrained filling on real code (Python standard library, HumanEval-X C++,
JSON), judged by independent oracles; functional correctness (pass@1) on HumanEval-Infilling
and the HumanEval-X C++ spans, the tests run in a sandbox; per-token check time against file
size and holes; and baselines (whole-file re-parsing, llguidance) measured side by side in the
same run.

    holefill bench --quick            # bundled model on CPU, minutes; writes docs/bench/
    holefill bench --model M --device cuda
"""

from __future__ import annotations

import argparse

from .options import add_arguments

__all__ = ["add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    from .suite import main as run_main

    return run_main(args)
