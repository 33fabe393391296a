"""``python -m holefill.train``: train (or resume, or export) the bundled default FIM model."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "models" / "default"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m holefill.train", description=__doc__)
    p.add_argument("--out", default=str(DEFAULT_OUT), help="shipped model folder")
    p.add_argument("--work", default="build/holefill-train",
                   help="work folder: corpus cache, tokenizer, checkpoints, log.csv")
    p.add_argument("--minutes", type=float, default=80.0, help="wall-clock limit of this run")
    p.add_argument("--resume", action="store_true", help="continue from WORK/ckpt.pt")
    p.add_argument("--extend-to", type=int, default=0,
                   help="with --resume: add a warm-restart cosine cycle up to this many steps")
    p.add_argument("--extend-lr", type=float, default=1e-3, help="peak lr of that cycle")
    p.add_argument("--extend-warmup", type=int, default=40)
    p.add_argument("--cooldown", type=int, default=0,
                   help="with --resume: end the schedule early, decaying from the current"
                   " learning rate to --min-lr over this many steps")
    p.add_argument("--stop-at-step", type=int, default=0,
                   help="save and stop after this step (the schedule is unchanged)")
    p.add_argument("--export-only", action="store_true",
                   help="export WORK/ckpt.pt to OUT with model card, plot and samples")
    p.add_argument("--no-card", action="store_true", help="skip the model card after training")
    p.add_argument("--eval-model", action="append", default=[], metavar="DIR",
                   help="print the held-out loss of this model folder on the run's validation"
                   " rows (char and line cuts) and exit; repeatable")
    p.add_argument("--card-bench", metavar="RESULTS_JSON",
                   help="the results.json of a `holefill bench` run of this model: its "
                   "HumanEval-Infilling and C++ pass@1 go into the model card")
    p.add_argument("--card-baseline", metavar="DIR",
                   help="a previous model folder (same tokenizer) whose held-out loss the card"
                   " shows beside this model's")
    p.add_argument("--probe", type=float, default=0.0,
                   help="measure tokens/s of each --sizes for this many seconds, then exit")
    p.add_argument("--probe-fp32", action="store_true", help="probe bf16 and fp32 both")
    p.add_argument("--sizes", default="192x4,256x4,256x6,320x6")
    # data
    p.add_argument("--sources", default="stdlib,site,cpp", help="comma list of stdlib,site,cpp")
    p.add_argument("--cpp-share", type=float, default=0.1)
    p.add_argument("--max-train-chars", type=int, default=120_000_000)
    p.add_argument("--valid-percent", type=float, default=2.0)
    p.add_argument("--chunk-chars", type=int, default=1600)
    p.add_argument("--packing", choices=("split", "whole"),
                   help="split (default): concatenate examples and cut rows (an example may"
                   " straddle two rows); whole: rows of whole examples, padded")
    p.add_argument("--example-chars", type=int,
                   help="cut chunks further into examples of at most this many characters"
                   " (default 0: no)")
    p.add_argument("--span-mix",
                   help="where FIM examples are cut, kind=weight: char (random characters, the"
                   " default), line (one whole line), lines (2-8 whole lines), line-end (cursor"
                   " to end of line); e.g. char=0.4,line=0.3,lines=0.2,line-end=0.1")
    p.add_argument("--units", type=float, default=0.0,
                   help="add each function of the training files as a document of its own, up"
                   " to this share of the chunks' characters (0: none)")
    p.add_argument("--decontaminate", action=argparse.BooleanOptionalAction, default=True,
                   help="leave out files sharing a 13-gram with HumanEval / HumanEval-X")
    p.add_argument("--init-from",
                   help="start from the weights and tokenizer of this model folder (its shape"
                   " replaces --d-model/--layers/--heads/--ffn/--ctx/--vocab)")
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--tokenizer-sample-chars", type=int, default=20_000_000)
    # model
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=0, help="0: d_model // 64")
    p.add_argument("--ffn", type=int, default=0, help="0: ~8/3 d_model")
    p.add_argument("--ctx", type=int, default=512)
    # optimisation
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--fim-rate", type=float, help="share of FIM examples (default 0.7)")
    p.add_argument("--spm-rate", type=float, default=0.5)
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                   help="bf16 autocast on CPU (fp32 master weights)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--val-rows", type=int, default=48)
    p.add_argument("--ckpt-minutes", type=float, default=4.0)
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.sources = tuple(s for s in args.sources.split(",") if s)
    args.cycles = []
    args.phases = []
    from . import loop

    if args.init_from:
        loop.shape_from(Path(args.init_from), args)

    if args.probe:
        loop.probe(args)
        return
    if args.eval_model:
        import json

        print(json.dumps(loop.heldout_losses(args, [Path(d) for d in args.eval_model]),
                         indent=1))
        return
    if not args.export_only:
        loop.train(args)
    if not args.no_card:
        from .card import write_card

        write_card(Path(args.work), Path(args.out),
                   bench_json=Path(args.card_bench) if args.card_bench else None,
                   baseline=Path(args.card_baseline) if args.card_baseline else None)


if __name__ == "__main__":
    main()
