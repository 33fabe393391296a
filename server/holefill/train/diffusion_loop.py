"""``python -m holefill.train --objective diffusion``: train (or resume, or export) the
bundled masked-diffusion model.

The tokenizer is the bundled FIM model's with one special token added, ``<|mask|>`` (id
4096), so both models read code the same way. The network is `BidirectionalLM` (no causal
mask); the objective is `holefill.train.diffusion`. Like the FIM trainer: the corpus is code
already on the machine (the same files, the same held-out split by file hash), one CPU
thread, bf16 autocast, checkpoints every few minutes, `--resume` continues exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import pickle
import shlex
import shutil
import sys
import time
from pathlib import Path

from .data import chunk_corpus, corpus_fingerprint, load_corpus
from .diffusion import MdmIds, MdmStream, collate, mdm_loss
from .loop import _single_thread, log, raw_encoder

MODELS = Path(__file__).resolve().parent.parent / "models"
MASK_TOKEN = "<|mask|>"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m holefill.train --objective diffusion",
                                description=__doc__)
    p.add_argument("--out", default=str(MODELS / "diffusion"), help="shipped model folder")
    p.add_argument("--work", default="build/holefill-train-diffusion",
                   help="work folder: corpus cache, tokenizer, checkpoints, log.csv")
    p.add_argument("--base-tokenizer", default=str(MODELS / "default"),
                   help="folder whose tokenizer is extended with the mask token")
    p.add_argument("--minutes", type=float, default=120.0, help="wall-clock limit of this run")
    p.add_argument("--resume", action="store_true", help="continue from WORK/ckpt.pt")
    p.add_argument("--set-steps", type=int, default=0,
                   help="with --resume: end the cosine schedule at this step instead")
    p.add_argument("--export-only", action="store_true", help="export WORK/ckpt.pt to OUT")
    p.add_argument("--sources", default="stdlib,site,cpp")
    p.add_argument("--cpp-share", type=float, default=0.2)
    p.add_argument("--max-train-chars", type=int, default=40_000_000)
    p.add_argument("--valid-percent", type=float, default=2.0)
    p.add_argument("--chunk-chars", type=int, default=1400)
    p.add_argument("--d-model", type=int, default=192)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=3)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--ctx", type=int, default=384)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--min-lr", type=float, default=3e-4)
    p.add_argument("--warmup", type=int, default=60)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--infill-rate", type=float, default=0.75)
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--val-rows", type=int, default=64)
    p.add_argument("--ckpt-minutes", type=float, default=5.0)
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.sources = tuple(s for s in args.sources.split(",") if s)
    if not args.export_only:
        train(args)
    else:
        import torch

        ck = torch.load(Path(args.work) / "ckpt.pt", map_location="cpu", weights_only=False)
        net = _network(ck["config"])
        net.load_state_dict(ck["model"])
        export(net, Path(args.work), Path(args.out), ck)


# ---------------------------------------------------------------------------------- data


def prepare(args) -> dict:
    """Corpus chunks (cached in the work folder) and the extended tokenizer."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    key = {"sources": list(args.sources), "seed": args.seed, "valid": args.valid_percent,
           "chars": args.max_train_chars, "chunk": args.chunk_chars, "cpp": args.cpp_share}
    cache = work / "corpus.pkl"
    if cache.exists():
        with cache.open("rb") as fh:
            data = pickle.load(fh)
        if data["key"] == key:
            log(f"corpus from cache: {data['stats']}")
            return data
    t0 = time.time()
    corpus = load_corpus(args.sources, seed=args.seed, valid_percent=args.valid_percent,
                         max_train_chars=args.max_train_chars, cpp_share=args.cpp_share)
    stats: dict[str, object] = dict(corpus.stats)
    stats.update(train_fingerprint=corpus_fingerprint(corpus.train),
                 valid_fingerprint=corpus_fingerprint(corpus.valid))
    data = {"key": key, "stats": stats,
            "train_chunks": chunk_corpus(corpus.train_texts, args.chunk_chars),
            "valid_chunks": chunk_corpus(corpus.valid_texts, args.chunk_chars),
            "valid_files": [f.key for f in corpus.valid]}
    with cache.open("wb") as fo:
        pickle.dump(data, fo)
    log(f"corpus: {stats} in {time.time() - t0:.0f}s")
    return data


def extended_tokenizer(base: Path, out: Path):
    """The base tokenizer plus ``<|mask|>`` as a special token, saved to ``out`` in a form
    transformers 4.x and 5.x both read."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    tok.add_special_tokens({"mask_token": MASK_TOKEN})
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg["mask_token"] = MASK_TOKEN
    extra = cfg.pop("extra_special_tokens", None)
    if isinstance(extra, list):
        cfg["additional_special_tokens"] = extra
    cfg["added_tokens_decoder"] = {
        str(tid): {"content": t.content, "lstrip": False, "normalized": False,
                   "rstrip": False, "single_word": False, "special": True}
        for tid, t in sorted(tok.added_tokens_decoder.items())}
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    for stale in ("special_tokens_map.json", "chat_template.jinja"):
        with contextlib.suppress(FileNotFoundError):
            (out / stale).unlink()
    return AutoTokenizer.from_pretrained(str(out), local_files_only=True)


def mdm_ids(tok) -> MdmIds:
    mask = tok.convert_tokens_to_ids(MASK_TOKEN)
    pad = tok.convert_tokens_to_ids("<fim_pad>")
    return MdmIds(mask=int(mask), pad=int(pad))


# ---------------------------------------------------------------------------------- model


def model_config(args, tok) -> dict:
    ids = mdm_ids(tok)
    return {"vocab_size": len(tok), "hidden_size": args.d_model, "num_layers": args.layers,
            "num_heads": args.heads, "num_kv_heads": args.heads,
            "intermediate_size": args.ffn, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
            "max_positions": args.ctx, "tie_embeddings": True, "qkv_bias": False,
            "mask_token_id": ids.mask, "shift_logits": False}


def _network(cfg: dict):
    from holefill.decode.diffusion_models import BidirectionalConfig, BidirectionalLM

    return BidirectionalLM(BidirectionalConfig.from_dict(cfg))


def lr_at(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    prog = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * prog))


def evaluate(model, batches, pad: int, autocast: bool) -> tuple[float, float]:
    """(loss, accuracy on the masked positions) over fixed validation batches."""
    import torch

    model.eval()
    tot = n = 0.0
    hits = count = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        for b in batches:
            ids, targets, keep, weights, slots = collate(b, pad)
            loss, _, right = mdm_loss(model, ids, targets, keep, weights, slots)
            tot += float(loss) * slots
            n += slots
            hits += int(right.sum())
            count += int(right.numel())
    model.train()
    return tot / max(1.0, n), hits / max(1, count)


def train(args) -> None:
    _single_thread()
    import torch

    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    t_start = time.time()
    work = Path(args.work)
    data = prepare(args)
    tok_dir = work / "tokenizer"
    tok = extended_tokenizer(Path(args.base_tokenizer), tok_dir)
    ids = mdm_ids(tok)
    encode = raw_encoder(tok_dir)
    ckpt_path, log_path, meta_path = work / "ckpt.pt", work / "log.csv", work / "meta.json"
    resume = args.resume and ckpt_path.exists()
    ck = torch.load(ckpt_path, map_location="cpu", weights_only=False) if resume else None
    if ck is not None:
        for k, v in ck["args"].items():  # the run's shape and schedule come from the checkpoint
            if k not in ("minutes", "resume", "ckpt_minutes", "export_only", "set_steps"):
                setattr(args, k, tuple(v) if k == "sources" else v)
        if args.set_steps:
            args.steps = args.set_steps
    torch.manual_seed(args.seed)
    cfg = model_config(args, tok)
    model = _network(cfg)
    model.init_weights()
    model.train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    stream = MdmStream(data["train_chunks"], encode, ids, ctx=args.ctx, seed=args.seed,
                       infill_rate=args.infill_rate)
    vstream = MdmStream(data["valid_chunks"], encode, ids, ctx=args.ctx, seed=args.seed + 1,
                        infill_rate=args.infill_rate)
    val = [vstream.batch(args.batch) for _ in range(max(1, args.val_rows // args.batch))]
    step, tokens, seconds = 0, 0, 0.0
    meta = {"commands": [], "corpus": data["stats"], "params": model.n_params()}
    if ck is not None:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        stream.load_state(ck["stream"])
        torch.set_rng_state(ck["torch_rng"])
        step, tokens, seconds = ck["step"], ck["tokens"], ck["train_seconds"]
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else meta
        log(f"resumed at step {step}")
    else:
        with log_path.open("w", newline="") as f:
            csv.writer(f).writerow(["step", "tokens", "train_seconds", "lr", "train_loss",
                                    "val_loss", "val_acc"])
    meta["commands"].append("python -m holefill.train --objective diffusion "
                            + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    meta["args"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}
    meta["torch"] = torch.__version__
    meta_path.write_text(json.dumps(meta, indent=2))
    log(f"model: {model.n_params():,} params {cfg}; {args.steps} steps x {args.batch} rows")

    def save() -> None:
        state = {"model": model.state_dict(), "opt": opt.state_dict(), "stream": stream.state(),
                 "torch_rng": torch.get_rng_state(), "step": step, "tokens": tokens,
                 "train_seconds": seconds, "args": vars(args), "config": cfg}
        tmp = ckpt_path.with_suffix(".tmp")
        torch.save(state, tmp)
        os.replace(tmp, ckpt_path)
        meta.update(step=step, tokens=tokens, train_seconds=seconds)
        meta_path.write_text(json.dumps(meta, indent=2))
        if args.out:
            export(model, work, Path(args.out), state)
        log(f"checkpoint at step {step}")

    if step == 0:
        v, acc = evaluate(model, val, ids.pad, args.bf16)
        with log_path.open("a", newline="") as f:
            csv.writer(f).writerow([0, 0, 0.0, 0.0, "", f"{v:.4f}", f"{acc:.4f}"])
        log(f"step 0 val {v:.4f} acc {acc:.3f}")
    deadline = t_start + args.minutes * 60
    last_ckpt = time.time()
    run_loss = run_n = 0.0
    while step < args.steps and time.time() < deadline:
        t0 = time.time()
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        batch = stream.batch(args.batch)
        x, targets, keep, weights, slots = collate(batch, ids.pad)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss, _, _ = mdm_loss(model, x, targets, keep, weights, slots)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += int(keep.sum())
        seconds += time.time() - t0
        run_loss += loss.item()
        run_n += 1
        if step % args.log_every == 0 or step == args.steps:
            vtxt = atxt = ""
            if step % args.eval_every == 0 or step == args.steps:
                v, acc = evaluate(model, val, ids.pad, args.bf16)
                vtxt, atxt = f"{v:.4f}", f"{acc:.4f}"
            with log_path.open("a", newline="") as f:
                csv.writer(f).writerow([step, tokens, f"{seconds:.1f}", f"{lr:.6f}",
                                        f"{run_loss / run_n:.4f}", vtxt, atxt])
            log(f"step {step}/{args.steps} loss {run_loss / run_n:.4f} val {vtxt or '-'} "
                f"acc {atxt or '-'} lr {lr:.2e} {tokens / max(1e-9, seconds):.0f} tok/s")
            run_loss = run_n = 0.0
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    save()
    log(f"done: step {step}, {tokens} tokens, {seconds:.0f}s")


# --------------------------------------------------------------------------------- export


def export(model, work: Path, out: Path, state: dict) -> None:
    """The shipped folder from a training state."""
    save_model(model, work / "tokenizer", out, {
        "step": state["step"], "tokens": state["tokens"],
        "train_seconds": round(state["train_seconds"], 1)})


def save_model(model, tok_dir: Path, out: Path, training: dict | None = None) -> None:
    """A diffusion model folder holefill loads: fp16 safetensors, config.json in our format
    (the network's `BidirectionalConfig` under "holefill"), the tokenizer files."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to(torch.float16).contiguous()
               for k, v in model.state_dict().items()}
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    for name in TOKENIZER_FILES:
        shutil.copyfile(tok_dir / name, out / name)
    tok = AutoTokenizer.from_pretrained(str(tok_dir), local_files_only=True)
    config = {
        "model_type": "holefill-mdm",
        "architectures": ["HolefillMaskedDiffusionLM"],
        "holefill": model.config.to_dict(),
        "pad_token_id": mdm_ids(tok).pad,
        "eos_token_id": int(tok.eos_token_id),
        "torch_dtype": "float16",
    }
    if training is not None:
        config["training"] = training
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for p in out.iterdir():
        if p.is_file():
            p.chmod(0o644)


def random_twin(out: Path, like: Path | None = None, *, seed: int = 0,
                std: float = 0.3) -> Path:
    """A model folder with the shape and tokenizer of the diffusion model in ``like`` (the
    bundled one by default) and random weights: the worst proposer there is, for tests and
    benchmarks. ``std`` is larger than a trained model's weights: small random weights give
    every masked position the same near-uniform guess, these spread the guesses over the
    vocabulary (seconds to build)."""
    import torch

    from holefill.decode.diffusion_models import BidirectionalConfig, BidirectionalLM
    from holefill.models import diffusion_model_path

    like = like or diffusion_model_path()
    cfg = json.loads((like / "config.json").read_text())
    torch.manual_seed(seed)
    net = BidirectionalLM(BidirectionalConfig.from_dict(cfg["holefill"]))
    net.init_weights(std=std)
    save_model(net, like, out, {"random_weights": True, "seed": seed, "std": std})
    return out
