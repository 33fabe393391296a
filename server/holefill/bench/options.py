"""The command line of `holefill bench` (kept free of heavy imports: the CLI builds every
sub-parser at start-up)."""

from __future__ import annotations

import argparse

PARTS = ("decode", "scaling")
# the decoding run's sample sets: standard-library Python cuts, HumanEval-X C++ spans, JSON,
# HumanEval-Infilling
SUITES = ("stdlib", "cpp", "json", "infilling")
DEFAULT_OUTPUT = "docs/bench"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="small sample for the bundled model on a CPU (minutes); default: full")
    p.add_argument("--output", "-o", default=DEFAULT_OUTPUT,
                   help=f"folder for report.md, results.json and plots (default {DEFAULT_OUTPUT})")
    p.add_argument("--model", "-m", help="a model folder or a Hugging Face id in the local "
                   "cache (default: $HOLEFILL_MODEL, else the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    p.add_argument("--threads", type=int, help="torch threads (default: 1 for the bundled "
                   "model on CPU, where more threads are slower; else torch's choice)")
    p.add_argument("--limit", type=int, help="at most N samples per group and cuts per "
                   "scaling cell (for smoke tests)")
    p.add_argument("--sizes", help="scaling file sizes in lines, comma-separated "
                   "(default 100,1000,5000,10000)")
    p.add_argument("--cuts", type=int, help="cuts (requests) per scaling cell "
                   "(default: 2 quick, 5 full)")
    p.add_argument("--steps", type=int, help="replayed tokens checked per cut "
                   "(default: 6 quick, 16 full)")
    p.add_argument("--max-new-tokens", type=int, help="per hole (default: 32 quick, 64 full)")
    p.add_argument("--max-lines", type=int, help="largest Python file for decoding samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parts", default=",".join(PARTS),
                   help="what to run: decode, scaling (comma-separated; default both)")
    p.add_argument("--suites", default=",".join(SUITES),
                   help="the decoding run's samples: stdlib, cpp, json, infilling "
                   "(comma-separated; default all)")
    p.add_argument("--splits", help="HumanEval-Infilling splits (comma-separated; default "
                   "single-line,multi-line,random-span,random-span-light)")
    p.add_argument("--infilling", type=int, help="HumanEval-Infilling tasks per split "
                   "(default: 24 quick, every task full)")
    p.add_argument("--fim-format", choices=("psm", "spm"),
                   help="FIM prompt layout (default: what the model folder suggests)")
