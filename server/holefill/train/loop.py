"""Training loop: corpus -> tokenizer -> packed FIM rows -> small Llama, with checkpoints/resume."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import pickle
import shlex
import sys
import time
from pathlib import Path

from .data import chunk_corpus, corpus_fingerprint, load_corpus
from .fim import FimIds
from .spans import SpanMix
from .stream import FimStream
from .tokenizer import SPECIAL_TOKENS, load_tokenizer, special_ids, train_tokenizer


def _single_thread() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


# ----------------------------------------------------------------------------------------------
# data preparation (cached in the work folder)


def prepare(args) -> dict:
    """Corpus chunks and tokenizer, built once and cached in ``args.work``."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "corpus.pkl"
    key = {
        "sources": list(args.sources),
        "seed": args.seed,
        "valid_percent": args.valid_percent,
        "max_train_chars": args.max_train_chars,
        "chunk_chars": args.chunk_chars,
        "cpp_share": args.cpp_share,
        "order": "stdlib-cpp-site",
        "decontaminate": args.decontaminate,
        "units": args.units,
        "tokenizer_from": str(args.init_from or ""),
    }
    if cache.exists():
        with cache.open("rb") as fh:
            data = pickle.load(fh)
        if data["key"] == key:
            log(f"corpus from cache: {data['stats']}")
            return data
    t0 = time.time()
    corpus = load_corpus(
        args.sources,
        seed=args.seed,
        valid_percent=args.valid_percent,
        max_train_chars=args.max_train_chars,
        cpp_share=args.cpp_share,
    )
    overlap = _decontaminate(corpus) if args.decontaminate else None
    train_chunks = chunk_corpus(corpus.train_texts, args.chunk_chars)
    valid_chunks = chunk_corpus(corpus.valid_texts, args.chunk_chars)
    units = _units(corpus, args.units, sum(map(len, train_chunks)), args.seed)
    by_source: dict[str, int] = {}
    for sf, t in zip(corpus.train, corpus.train_texts, strict=True):
        by_source[sf.source] = by_source.get(sf.source, 0) + len(t)
    stats: dict[str, object] = dict(corpus.stats)
    if overlap is not None:
        stats["overlap"] = overlap
    stats.update(units=len(units), unit_chars=sum(map(len, units)))
    train_chunks += units
    stats.update(
        train_chunks=len(train_chunks),
        valid_chunks=len(valid_chunks),
        train_chars_by_source=by_source,
        train_fingerprint=corpus_fingerprint(corpus.train),
        valid_fingerprint=corpus_fingerprint(corpus.valid),
        seconds=round(time.time() - t0, 1),
    )
    data = {
        "key": key,
        "stats": stats,
        "train_chunks": train_chunks,
        "valid_chunks": valid_chunks,
        "valid_files": [(f.key, t) for f, t in zip(corpus.valid, corpus.valid_texts, strict=True)],
    }
    tok_dir = work / "tokenizer"
    if args.init_from:
        log(f"corpus: {stats}; tokenizer from {args.init_from}")
        _copy_tokenizer(Path(args.init_from), tok_dir)
    else:
        log(f"corpus: {stats}; training tokenizer (vocab {args.vocab})")
        train_tokenizer(
            corpus.train_texts, tok_dir, vocab_size=args.vocab, seed=args.seed,
            sample_chars=args.tokenizer_sample_chars, model_max_length=args.ctx,
        )
    with cache.open("wb") as fo:
        pickle.dump(data, fo)
    log(f"prepared in {time.time() - t0:.0f}s")
    return data


def _decontaminate(corpus) -> dict:
    """Drop the files that share a 13-gram with HumanEval / HumanEval-X (holefill.train.overlap);
    the summary of the scan, for the model card."""
    from .overlap import OverlapIndex, check_corpus, reference_texts

    index = OverlapIndex(reference_texts())
    files = zip(corpus.train + corpus.valid, corpus.train_texts + corpus.valid_texts,
                strict=True)
    report = check_corpus(((f.key, t) for f, t in files), index)
    bad = report.contaminated
    for split in ("train", "valid"):
        kept = [(f, t) for f, t in zip(getattr(corpus, split), getattr(corpus, split + "_texts"),
                                       strict=True) if f.key not in bad]
        setattr(corpus, split, [f for f, _ in kept])
        setattr(corpus, split + "_texts", [t for _, t in kept])
    summary = report.summary()
    log(f"overlap with HumanEval: {summary['files_with_13gram']} file(s) share a 13-gram "
        f"(dropped), {summary['files_with_shared_line']} share a line")
    return summary


def _units(corpus, share: float, chunk_chars: int, seed: int) -> list[str]:
    """Function units of the training files (holefill.train.units), a seeded sample of at most
    ``share`` times the characters of the chunks."""
    import random

    from .units import function_units

    if share <= 0:
        return []
    units = [u for f, t in zip(corpus.train, corpus.train_texts, strict=True)
             if f.key.endswith(".py") for u in function_units(t)]
    random.Random(f"units:{seed}").shuffle(units)
    out, total = [], 0
    for u in units:
        if total + len(u) > share * chunk_chars:
            break
        out.append(u)
        total += len(u)
    return out


def _copy_tokenizer(model_dir: Path, tok_dir: Path) -> None:
    import shutil

    from .export import TOKENIZER_FILES

    tok_dir.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (model_dir / name).exists():
            shutil.copyfile(model_dir / name, tok_dir / name)


def raw_encoder(tok_dir: Path):
    """A fast encode function that treats special-token strings in source text as plain text."""
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    raw.encode_special_tokens = True

    def encode(s: str) -> list[int]:
        return raw.encode(s, add_special_tokens=False).ids if s else []

    return encode


def fim_ids(tokenizer) -> FimIds:
    sid = special_ids(tokenizer)
    e, p, m, s, pad = (sid[t] for t in SPECIAL_TOKENS)
    return FimIds(eot=e, prefix=p, middle=m, suffix=s, pad=pad)


# ----------------------------------------------------------------------------------------------
# model


def make_config(args, tokenizer):
    from transformers import LlamaConfig

    ids = fim_ids(tokenizer)
    heads = args.heads or max(1, args.d_model // 64)
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.d_model,
        intermediate_size=args.ffn or int(8 * args.d_model / 3 / 32 + 0.999) * 32,
        num_hidden_layers=args.layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=args.ctx,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=ids.eot,
        eos_token_id=ids.eot,
        pad_token_id=ids.pad,
        attention_bias=False,
        mlp_bias=False,
        hidden_act="silu",
        initializer_range=0.02,
    )


def n_params(model) -> int:
    seen = set()
    total = 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
    return total


def schedule(args) -> list[dict]:
    """The learning-rate cycles: the first (warm-up + cosine) and any warm restarts added by
    ``--extend-to`` (each: warm-up to its peak, cosine down to ``min_lr``) or cooldowns added
    by ``--cooldown`` (from the learning rate of the step it starts at, no warm-up, cosine down
    to ``min_lr``: a cycle cut short; the cycle before keeps its planned end)."""
    extra = list(getattr(args, "cycles", None) or [])
    first_end = extra[0].get("planned_end", extra[0]["start"]) if extra else args.steps
    return [{"start": 0, "end": first_end, "lr": args.lr, "warmup": args.warmup}, *extra]


def lr_at(step: int, args) -> float:
    c = [c for c in schedule(args) if c["start"] <= step][-1]
    s, n = step - c["start"], c["end"] - c["start"]
    if s < c["warmup"]:
        return c["lr"] * (s + 1) / c["warmup"]
    prog = min(1.0, (s - c["warmup"]) / max(1, n - c["warmup"]))
    return args.min_lr + 0.5 * (c["lr"] - args.min_lr) * (1 + math.cos(math.pi * prog))


# ----------------------------------------------------------------------------------------------
# training

# what a data phase fixes; checkpoints from before a field existed had its default
_DEFAULT_PHASE = {"packing": "split", "example_chars": 0, "span_mix": "char=1",
                  "fim_rate": 0.7}


def _phase_data(args, last: dict | None = None) -> dict:
    """The data options of this run; an option not given keeps the last phase's value (or the
    default on a fresh run), so a plain ``--resume`` never starts a new phase."""
    base = {**_DEFAULT_PHASE, **(last or {})}
    out = {k: base[k] if getattr(args, k, None) is None else getattr(args, k)
           for k in _DEFAULT_PHASE}
    out["span_mix"] = str(SpanMix.parse(out["span_mix"]))
    return out


def validation_rows(chunks: list[str], encode, ids: FimIds, args, kind: str) -> list[list[int]]:
    """The fixed held-out rows: the FIM mixture of the first bundled model (fim rate 0.7, PSM
    and SPM 50/50, packed as ``split``) with ``kind`` cuts: "char" (the paper's random
    characters, the curve every model card reports) or "line" (one whole line)."""
    stream = FimStream(chunks, encode, ids, ctx=args.ctx, seed=args.seed + 1, fim_rate=0.7,
                       spm_rate=0.5, spans=SpanMix.parse(f"{kind}=1"))
    return stream.rows(args.val_rows)


def _initial_weights(model_dir: Path) -> dict:
    """The fp32 state dict of a shipped model folder (fp16 safetensors), to start from."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True,
                                                 dtype=torch.float32)
    return model.state_dict()


def shape_from(model_dir: Path, args) -> None:
    """Set the model shape arguments from a model folder's config.json (for --init-from)."""
    cfg = json.loads((model_dir / "config.json").read_text())
    args.d_model, args.layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    args.heads, args.ffn = cfg["num_attention_heads"], cfg["intermediate_size"]
    args.ctx, args.vocab = cfg["max_position_embeddings"], cfg["vocab_size"]


def evaluate(model, rows, batch: int, autocast: bool) -> float:
    import torch

    model.eval()
    tot, n = 0.0, 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        for i in range(0, len(rows), batch):
            x = torch.tensor(rows[i : i + batch], dtype=torch.long)
            out = model(input_ids=x, labels=x)
            k = x.numel() - x.shape[0]
            tot += out.loss.float().item() * k
            n += k
    model.train()
    return tot / max(1, n)


def train(args) -> Path:
    _single_thread()
    import torch

    torch.set_num_threads(1)
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    from transformers import LlamaForCausalLM

    t_start = time.time()
    work = Path(args.work)
    if args.resume and (work / "meta.json").exists():
        _restore_data_args(args, json.loads((work / "meta.json").read_text())["args"])
    data = prepare(args)
    tok_dir = work / "tokenizer"
    tokenizer = load_tokenizer(tok_dir)
    encode = raw_encoder(tok_dir)
    ids = fim_ids(tokenizer)

    ckpt_path = work / "ckpt.pt"
    meta_path = work / "meta.json"
    log_path = work / "log.csv"
    resume = args.resume and ckpt_path.exists()
    if resume:
        ck = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        saved = ck["args"]
        # the run's shape and schedule come from the checkpoint; only time limits may change
        for k in ("d_model", "layers", "heads", "ffn", "ctx", "batch", "lr", "min_lr", "warmup",
                  "steps", "seed", "spm_rate", "weight_decay", "bf16", "vocab",
                  "cycles", "phases", "init_from"):
            setattr(args, k, saved.get(k, []) if k in ("cycles", "phases") else saved.get(k))
        if not args.phases:  # checkpoints from before data phases existed
            args.phases = [{"start": 0, "packing": "split", "example_chars": 0}]
        last = {**_DEFAULT_PHASE, **args.phases[-1]}
        phase = {"start": ck["step"], **_phase_data(args, last)}
        if any(phase[k] != last[k] for k in _DEFAULT_PHASE):
            # a new data phase: same corpus, new packing / example size / cuts; a fresh stream
            args.phases = [*args.phases, phase]
        if args.extend_to > args.steps:
            # a warm restart: one more cosine cycle from the end of the schedule to extend_to
            args.cycles = [*args.cycles, {"start": args.steps, "end": args.extend_to,
                                          "lr": args.extend_lr, "warmup": args.extend_warmup}]
            args.steps = args.extend_to
        elif getattr(args, "cooldown", 0):
            # end early but annealed: decay from the current learning rate over the next steps
            now = ck["step"]
            args.cycles = [*args.cycles, {"start": now, "end": now + args.cooldown,
                                          "lr": lr_at(now, args), "warmup": 0,
                                          "planned_end": args.steps}]
            args.steps = now + args.cooldown
    if not resume:
        args.phases = [{"start": 0, **_phase_data(args)}]
    torch.manual_seed(args.seed)
    config = make_config(args, tokenizer)
    model = LlamaForCausalLM(config)
    if args.init_from and not resume:
        model.load_state_dict(_initial_weights(Path(args.init_from)))
        log(f"weights from {args.init_from}")
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
    )
    phase_no = len(args.phases) - 1
    cur = {**_DEFAULT_PHASE, **args.phases[-1]}
    chunks = data["train_chunks"]
    if cur["example_chars"]:
        chunks = chunk_corpus(chunks, cur["example_chars"])
    stream = FimStream(
        chunks, encode, ids, ctx=args.ctx, seed=args.seed + 1000 * phase_no,
        fim_rate=cur["fim_rate"], spm_rate=args.spm_rate, packing=cur["packing"],
        spans=SpanMix.parse(cur["span_mix"]),
    )
    val_rows = validation_rows(data["valid_chunks"], encode, ids, args, "char")
    line_rows = validation_rows(data["valid_chunks"], encode, ids, args, "line")

    step, tokens, train_seconds = 0, 0, 0.0
    meta = {"commands": [], "params": n_params(model), "corpus": data["stats"]}
    if resume:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        if ck.get("phase", 0) == phase_no:
            stream.load_state(ck["stream"])
        else:
            log(f"data phase {phase_no}: {cur}, {len(chunks)} examples per epoch")
        torch.set_rng_state(ck["torch_rng"])
        step, tokens, train_seconds = ck["step"], ck["tokens"], ck["train_seconds"]
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
        log(f"resumed at step {step} ({tokens} tokens, {train_seconds:.0f}s trained)")
    else:
        with log_path.open("w", newline="") as f:
            csv.writer(f).writerow(
                ["step", "tokens", "train_seconds", "lr", "train_loss", "val_loss", "val_line"])
    meta["commands"].append(
        "python -m holefill.train " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    meta["args"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}
    meta["params"] = n_params(model)
    meta["torch"] = torch.__version__
    meta_path.write_text(json.dumps(meta, indent=2))
    log(f"model: {meta['params']:,} params, config {config.to_dict()['hidden_size']}x"
        f"{config.num_hidden_layers} heads {config.num_attention_heads} "
        f"ffn {config.intermediate_size} vocab {config.vocab_size} ctx {args.ctx}; "
        f"steps {args.steps} x {args.batch}x{args.ctx} tokens")

    def save() -> None:
        tmp = ckpt_path.with_suffix(".tmp")
        torch.save({
            "model": model.state_dict(), "opt": opt.state_dict(), "stream": stream.state(),
            "torch_rng": torch.get_rng_state(), "step": step, "tokens": tokens,
            "train_seconds": train_seconds, "args": vars(args), "phase": phase_no,
            "config": config.to_dict(),
        }, tmp)
        os.replace(tmp, ckpt_path)
        meta["step"], meta["tokens"], meta["train_seconds"] = step, tokens, train_seconds
        meta_path.write_text(json.dumps(meta, indent=2))
        if args.out:
            from .export import export_model

            export_model(model, tokenizer, tok_dir, Path(args.out))
        log(f"checkpoint at step {step}")

    deadline = t_start + args.minutes * 60
    last_ckpt = time.time()
    run_loss, run_n = 0.0, 0
    if step == 0:
        v = evaluate(model, val_rows, args.batch, args.bf16)
        vl = evaluate(model, line_rows, args.batch, args.bf16)
        with log_path.open("a", newline="") as f:
            csv.writer(f).writerow([0, 0, 0.0, 0.0, "", f"{v:.4f}", f"{vl:.4f}"])
        log(f"step 0 val {v:.4f} val_line {vl:.4f}")
    stop = _stop_on_signals()
    while step < args.steps:
        if time.time() > deadline:
            log("time limit reached")
            break
        if stop:
            log(f"signal {stop[0]}: saving at step {step}; --resume continues")
            break
        if args.stop_at_step and step >= args.stop_at_step:
            log(f"stopping at step {step} as asked (--stop-at-step); --resume continues")
            break
        t0 = time.time()
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        x = torch.tensor(stream.rows(args.batch), dtype=torch.long)
        labels = x.masked_fill(x == ids.pad, -100)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = model(input_ids=x, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += int((x != ids.pad).sum())
        train_seconds += time.time() - t0
        run_loss += loss.item()
        run_n += 1
        if step % args.log_every == 0 or step == args.steps:
            vtxt = ltxt = ""
            if step % args.eval_every == 0 or step == args.steps:
                vtxt = f"{evaluate(model, val_rows, args.batch, args.bf16):.4f}"
                ltxt = f"{evaluate(model, line_rows, args.batch, args.bf16):.4f}"
            tl = run_loss / run_n
            run_loss, run_n = 0.0, 0
            with log_path.open("a", newline="") as f:
                csv.writer(f).writerow(
                    [step, tokens, f"{train_seconds:.1f}", f"{lr:.6f}", f"{tl:.4f}", vtxt, ltxt])
            log(f"step {step}/{args.steps} tok {tokens} loss {tl:.4f} val {vtxt or '-'} "
                f"val_line {ltxt or '-'} lr {lr:.2e} "
                f"{tokens / max(1e-9, train_seconds):.0f} tok/s")
        if time.time() - last_ckpt > args.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    save()
    log(f"done: step {step}, {tokens} tokens, {train_seconds:.0f}s")
    return ckpt_path


# what the corpus and the tokenizer of a run depend on: a resumed run reads them from the run
_DATA_ARGS = ("sources", "seed", "valid_percent", "max_train_chars", "chunk_chars", "cpp_share",
              "decontaminate", "units", "init_from", "vocab", "tokenizer_sample_chars")


def _restore_data_args(args, saved: dict) -> None:
    for k in _DATA_ARGS:
        if k in saved:
            value = saved[k]
            setattr(args, k, tuple(value) if k == "sources" else value)


def _stop_on_signals() -> list[int]:
    """SIGTERM and SIGINT end the run after the current step, with a checkpoint: the list
    returned gets the signal number."""
    import signal

    got: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        got.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    return got


def heldout_losses(args, model_dirs: list[Path]) -> dict[str, dict[str, float]]:
    """The held-out loss of shipped model folders (fp16 weights, fp32 compute) on this run's
    fixed validation rows, with char and with line cuts; they must share the run's tokenizer."""
    _single_thread()
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    work = Path(args.work)
    if (work / "corpus.pkl").exists() and (work / "meta.json").exists():
        # the run's own data and row settings, whatever this command line says
        with (work / "corpus.pkl").open("rb") as fh:
            data = pickle.load(fh)
        saved = json.loads((work / "meta.json").read_text())["args"]
        for k in ("seed", "ctx", "val_rows", "batch"):
            setattr(args, k, saved[k])
    else:
        data = prepare(args)
    tok_dir = work / "tokenizer"
    encode, ids = raw_encoder(tok_dir), fim_ids(load_tokenizer(tok_dir))
    rows = {kind: validation_rows(data["valid_chunks"], encode, ids, args, kind)
            for kind in ("char", "line")}
    out: dict[str, dict[str, float]] = {}
    for d in model_dirs:
        model = AutoModelForCausalLM.from_pretrained(str(d), local_files_only=True,
                                                     dtype=torch.float32).eval()
        if model.config.vocab_size != len(load_tokenizer(d)):
            raise ValueError(f"{d} does not use this run's tokenizer")
        out[str(d)] = {kind: evaluate(model, r, args.batch, False) for kind, r in rows.items()}
        log(f"held-out loss of {d}: {out[str(d)]}")
    return out


def probe(args) -> None:
    """Tokens/s of each size in ``args.sizes`` ("DxL" or "DxLxH") for ``args.probe`` seconds."""
    _single_thread()
    import torch

    torch.set_num_threads(1)
    from transformers import LlamaForCausalLM

    data = prepare(args)
    tok_dir = Path(args.work) / "tokenizer"
    tokenizer = load_tokenizer(tok_dir)
    encode = raw_encoder(tok_dir)
    ids = fim_ids(tokenizer)
    for spec in args.sizes.split(","):
        parts = [int(p) for p in spec.split("x")]
        args.d_model, args.layers = parts[0], parts[1]
        args.heads = parts[2] if len(parts) > 2 else 0
        for bf16 in ([True, False] if args.probe_fp32 else [args.bf16]):
            torch.manual_seed(0)
            model = LlamaForCausalLM(make_config(args, tokenizer))
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            stream = FimStream(data["train_chunks"], encode, ids, ctx=args.ctx, seed=0,
                               fim_rate=args.fim_rate or 0.7, spm_rate=args.spm_rate)
            t_end = time.time() + args.probe
            n, tok, t_train = 0, 0, 0.0
            while time.time() < t_end:
                x = torch.tensor(stream.rows(args.batch), dtype=torch.long)
                t0 = time.time()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    loss = model(input_ids=x, labels=x).loss
                loss.backward()
                opt.step()
                opt.zero_grad()
                if n > 0:  # first step is warm-up
                    t_train += time.time() - t0
                    tok += x.numel()
                n += 1
            log(f"probe {spec} bf16={bf16}: {n_params(model):,} params, "
                f"{tok / max(1e-9, t_train):.0f} tok/s, {n} steps, last loss {loss.item():.3f}")
