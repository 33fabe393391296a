"""Model card, loss plot and FIM samples of the shipped default model."""

from __future__ import annotations

import csv
import json
import pickle
import platform
import random
import subprocess
import time
from pathlib import Path

from .export import export_model, shipped_bytes
from .loop import _single_thread, evaluate, fim_ids, log, raw_encoder
from .stream import FimStream


def read_log(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def plot_loss(rows: list[dict], out_png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tr = [(int(r["tokens"]) / 1e6, float(r["train_loss"])) for r in rows if r["train_loss"]]
    va = [(int(r["tokens"]) / 1e6, float(r["val_loss"])) for r in rows if r["val_loss"]]
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    if tr:
        ax.plot(*zip(*tr, strict=True), label="train (mean over 10 steps)", lw=1, alpha=0.8)
    if va:
        ax.plot(*zip(*va, strict=True), "o-", label="validation (held-out files)", ms=3, lw=1.5)
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats / token)")
    ax.set_ylim(bottom=min([v for _, v in tr + va] + [1.0]) - 0.2,
                top=min(8.5, max([v for _, v in tr[3:] + va[1:]] + [4.0])) + 0.2)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)


def line_cuts(valid_files: list[tuple[str, str]], n: int, seed: int) -> list[dict]:
    """Deterministic single-line FIM cuts from held-out Python files: the middle is the code of
    one line (indentation and newline stay in prefix / suffix)."""
    rng = random.Random(seed)
    py = [(k, t) for k, t in valid_files if k.endswith(".py")]
    std = [(k, t) for k, t in py if k.startswith("stdlib/")] or py
    cuts: list[dict] = []
    tries = 0
    while len(cuts) < n and tries < n * 50 and py:
        tries += 1
        pool = std if tries % 2 else py  # half from the standard library, half from any file
        key, text = pool[rng.randrange(len(pool))]
        lines = text.splitlines(keepends=True)
        if len(lines) < 12:
            continue
        i = rng.randrange(5, len(lines) - 3)
        line = lines[i]
        code = line.strip()
        if not (8 <= len(code) <= 80) or code.startswith(("#", '"""', "'''")):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        start = sum(len(x) for x in lines[:i]) + len(indent)
        end = start + len(code)
        if any(c["key"] == key and c["start"] == start for c in cuts):
            continue
        cuts.append({"key": key, "start": start, "prefix": text[:start], "middle": code,
                     "suffix": text[end:]})
    return cuts


MAX_NEW = 32
FORMATS = ("psm", "spm")


def line_end_cuts(cuts: list[dict], seed: int) -> list[dict]:
    """From each line cut, a hole that is the rest of the line after a cursor in its second half."""
    rng = random.Random(seed)
    out = []
    for c in cuts:
        m = c["middle"]
        k = rng.randrange(len(m) // 2, len(m) - 1)
        out.append({**c, "prefix": c["prefix"] + m[:k], "middle": m[k:], "start": c["start"] + k})
    return out


def fim_prompt(tok, ids, prefix: str, suffix: str, budget: int, fmt: str = "psm") -> list[int]:
    p = tok.encode(prefix, add_special_tokens=False)
    s = tok.encode(suffix, add_special_tokens=False)
    keep_s = min(len(s), budget // 3)
    keep_p = min(len(p), budget - keep_s)
    keep_s = min(len(s), budget - keep_p)
    p, s = p[len(p) - keep_p:], s[:keep_s]
    if fmt == "spm":
        return [ids.prefix, ids.suffix, *s, ids.middle, *p]
    return [ids.prefix, *p, ids.suffix, *s, ids.middle]


def fill(model, tok, ids, prefix: str, suffix: str, ctx: int, max_new: int = 48,
         fmt: str = "psm") -> str:
    import torch

    prompt = fim_prompt(tok, ids, prefix, suffix, ctx - max_new - 3, fmt)
    x = torch.tensor([prompt], dtype=torch.long)
    with torch.no_grad():
        out = model.generate(
            input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=max_new,
            do_sample=False, eos_token_id=ids.eot, pad_token_id=ids.pad,
        )
    gen = out[0, len(prompt):].tolist()
    if ids.eot in gen:
        gen = gen[: gen.index(ids.eot)]
    return tok.decode(gen, skip_special_tokens=True)


def _cycles_text(args: dict) -> str:
    extra = args.get("cycles") or []
    if not extra:
        return ""
    parts = [f"steps {c['start']}-{c['end']}: warm-up {c['warmup']} steps to {c['lr']}, cosine to"
             f" {args['min_lr']}" for c in extra]
    return (" The first cosine cycle ended at step " + str(extra[0]["start"]) + "; training then"
            " continued from that checkpoint with a warm restart (`--resume --extend-to`), "
            + "; ".join(parts) + ".")


def _phases_text(args: dict) -> str:
    phases = args.get("phases") or []
    if len(phases) < 2:
        return ""
    out = []
    for i, ph in enumerate(phases):
        end = phases[i + 1]["start"] if i + 1 < len(phases) else args["steps"]
        size = (f"chunks cut further into examples of at most {ph['example_chars']} characters"
                if ph["example_chars"] else f"the {args.get('chunk_chars', 1600)}-character chunks")
        pack = ("concatenated and cut into rows (`--packing split`: an example may straddle two"
                " rows)" if ph["packing"] == "split" else
                "packed whole into rows (`--packing whole`: an example never straddles two rows;"
                " padding is left out of the loss and of the token counts)")
        out.append(f"steps {ph['start']}-{end}: {size}, {pack}")
    return (" Data phases: " + "; ".join(out) + ". The change came from the first samples: with"
            " chunks of about 660 tokens in 512-token rows, the middle of a PSM example was"
            " usually trained without its prefix, and the model ignored the prefix at the hole.")


def _parses(src: str) -> bool:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(src)
    except (SyntaxError, ValueError):
        return False
    return True


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _tail(s: str, n: int) -> str:
    return "".join(s.splitlines(keepends=True)[-n:])


def _head(s: str, n: int) -> str:
    return "".join(s.splitlines(keepends=True)[:n])


def write_card(work: Path, out: Path, n_eval: int = 60, n_show: int = 3) -> None:
    _single_thread()
    import torch

    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..models import detect_fim_tokens

    t0 = time.time()
    ck = torch.load(work / "ckpt.pt", map_location="cpu", weights_only=False)
    meta = json.loads((work / "meta.json").read_text())
    args = ck["args"]
    tok_dir = work / "tokenizer"
    tok = AutoTokenizer.from_pretrained(str(tok_dir), local_files_only=True)
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    model32 = LlamaForCausalLM(LlamaConfig.from_dict(ck["config"]))
    model32.load_state_dict(ck["model"])
    model32.eval()
    export_model(model32, tok, tok_dir, out)

    # the shipped files, loaded the way users load them
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True,
                                                 dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    ids = fim_ids(tok)
    assert detect_fim_tokens(out) is not None

    with (work / "corpus.pkl").open("rb") as f:
        data = pickle.load(f)
    vstream = FimStream(data["valid_chunks"], raw_encoder(tok_dir), ids, ctx=args["ctx"],
                        seed=args["seed"] + 1, fim_rate=args["fim_rate"],
                        spm_rate=args["spm_rate"])
    val_rows = vstream.rows(args["val_rows"])
    val16 = evaluate(model, val_rows, args["batch"], False)
    val32 = evaluate(model32, val_rows, args["batch"], bool(args.get("bf16", True)))
    log(f"val loss: checkpoint {val32:.4f} (as in training), shipped fp16 weights {val16:.4f}")

    rows = read_log(work / "log.csv")
    vals = [r for r in rows if r["val_loss"]]
    final_val = val32
    assert vals, "no validation loss logged"
    trains = [float(r["train_loss"]) for r in rows if r["train_loss"]]
    final_train = sum(trains[-5:]) / len(trains[-5:])
    plot_loss(rows, out / "loss.png",
              f"holefill default model ({meta['params'] / 1e6:.1f}M params), FIM objective")

    line = line_cuts(data["valid_files"], n_eval, seed=1234)
    kinds = {"line": line, "line-end": line_end_cuts(line, seed=99)}
    results: dict[tuple[str, str], dict[str, int]] = {}
    shown: list[tuple[str, dict, dict[str, str]]] = []
    for kind, cuts in kinds.items():
        for i, c in enumerate(cuts):
            gots = {}
            for fmt in FORMATS:
                r = results.setdefault(
                    (kind, fmt), {"n": 0, "exact": 0, "first": 0, "parse_ok": 0, "parse_n": 0})
                got = fill(model, tok, ids, c["prefix"], c["suffix"], args["ctx"],
                           max_new=MAX_NEW, fmt=fmt)
                gots[fmt] = got
                r["n"] += 1
                r["exact"] += got == c["middle"]
                r["first"] += (got.splitlines() or [""])[0].strip() == c["middle"].strip()
                if _parses(c["prefix"] + c["middle"] + c["suffix"]):
                    r["parse_n"] += 1
                    r["parse_ok"] += _parses(c["prefix"] + got + c["suffix"])
            if i < n_show:
                shown.append((kind, c, gots))
        for fmt in FORMATS:
            log(f"{kind} {fmt} fills: {results[(kind, fmt)]}")

    score = {f: (sum(results[(k, f)]["first"] for k in kinds),
                 sum(results[(k, f)]["parse_ok"] for k in kinds)) for f in FORMATS}
    best = max(FORMATS, key=lambda f: (score[f], f == "psm"))
    (out / "holefill.json").write_text(json.dumps({
        "fim_format": best,
        "note": "prompt format that worked best for this model on held-out fills (see"
                " MODEL_CARD.md); PSM = <fim_prefix>p<fim_suffix>s<fim_middle>, SPM ="
                " <fim_prefix><fim_suffix>s<fim_middle>p",
    }, indent=2) + "\n")
    (out / "heldout_files.txt").write_text(
        "# files held out from training (validation split by hash of path); evaluate on these\n"
        + "".join(k + "\n" for k, _ in data["valid_files"]))
    size = shipped_bytes(out)
    st = meta["corpus"]
    steps_done, steps_planned = ck["step"], args["steps"]
    hours = ck["train_seconds"] / 3600
    lines: list[str] = []
    w = lines.append
    w("# holefill default model\n")
    w("A tiny Llama-style causal language model trained from scratch by `python -m holefill.train`"
      " with the fill-in-the-middle objective, on code that is already on every machine. It is"
      " shipped inside the package so that holefill works offline, with no download, out of the"
      " box. It is **small and weak**: it exists so that everything works end to end, not to write"
      " your code (see *Limits*).\n")
    w("## Summary\n")
    w("| | |\n|---|---|")
    w(f"| architecture | `LlamaForCausalLM`: {ck['config']['num_hidden_layers']} layers, hidden "
      f"{ck['config']['hidden_size']}, {ck['config']['num_attention_heads']} heads, MLP "
      f"{ck['config']['intermediate_size']} (SwiGLU), RoPE, RMSNorm, tied embeddings |")
    w(f"| parameters | {meta['params']:,} |")
    w(f"| context | {args['ctx']} tokens |")
    w(f"| tokenizer | byte-level BPE, {len(tok)} tokens, StarCoder special tokens "
      "`<|endoftext|>`=0 `<fim_prefix>`=1 `<fim_middle>`=2 `<fim_suffix>`=3 `<fim_pad>`=4 |")
    st_bytes = (out / "model.safetensors").stat().st_size
    w(f"| shipped size | {size / 1e6:.1f} MB in this folder ({st_bytes / 1e6:.1f} MB fp16"
      " safetensors) |")
    w(f"| training | {steps_done} steps (of {steps_planned} scheduled) x {args['batch']} x "
      f"{args['ctx']} tokens = {ck['tokens'] / 1e6:.2f}M tokens, {ck['train_seconds'] / 60:.0f} "
      f"min ({hours:.2f} h) |")
    w(f"| hardware | CPU only: 1 thread (`torch.set_num_threads(1)`, `nice -n 10`) on {cpu_name()}"
      " (2 vCPUs shared with other jobs); bf16 autocast with fp32 master weights; no GPU |")
    w(f"| final train loss | {final_train:.3f} nats/token (mean of the last 50 steps) |")
    w(f"| final validation loss | {final_val:.3f} nats/token (final checkpoint, as in training);"
      f" {val16:.3f} with the shipped fp16 weights (fp32 compute) |")
    for kind, what in (("line", "a whole line removed"),
                       ("line-end", "the rest of a line removed")):
        for fmt in FORMATS:
            r = results[(kind, fmt)]
            w(f"| held-out fills, {what}, {fmt.upper()} prompt | exact {r['exact']}/{r['n']},"
              f" first generated line right {r['first']}/{r['n']}, file still parses"
              f" (`ast.parse`) {r['parse_ok']}/{r['parse_n']}; greedy, unconstrained |")
    w(f"| software | torch {meta.get('torch', '?')}, transformers, tokenizers; Python "
      f"{platform.python_version()} |")
    w("")
    w("![loss curve](loss.png)\n")
    w("## Data\n")
    w("Sources, read in a deterministic order (sorted list, seeded shuffle, standard library first,"
      " then C/C++ headers up to a share, then installed packages until the character budget):\n")
    by = st.get("train_chars_by_source", {})
    w(f"- the `.py` files of the standard library of the Python {platform.python_version()} that "
      f"ran the training: {by.get('stdlib', 0) / 1e6:.1f}M characters;")
    w(f"- the `.py` files of the installed packages (`site-packages`; it held torch, transformers, "
      "numpy, matplotlib, ... and holefill's own dependencies):"
      f" {by.get('site', 0) / 1e6:.1f}M characters;")
    w("- C/C++ headers under `/usr/include` (glibc, libstdc++, ...):"
      f" {by.get('cpp', 0) / 1e6:.1f}M characters.\n")
    w(f"{st['candidates']} candidate files; skipped {st['skipped']} (over 200 kB, non-UTF-8, a "
      "\"generated\" marker in the first 2 kB, lines over 1000 characters, data-like content);"
      f" {st['duplicates']} exact duplicates (whitespace-insensitive) dropped. The validation split"
      f" is by file, by a hash of its path (2%): {st['valid_files']} held-out files, listed in "
      f"`heldout_files.txt`; {st['train_files']} training files, {st['train_chars'] / 1e6:.0f}M "
      f"characters (training saw {ck['tokens'] / 1e6:.1f}M tokens, less than one pass). Corpus "
      f"fingerprints (hash of the file list): train `{st['train_fingerprint']}`, validation "
      f"`{st['valid_fingerprint']}`. Files are cut at line boundaries into chunks of at most "
      f"{args.get('chunk_chars', 1600)} characters. The tokenizer is a"
      f" byte-level BPE ({len(tok)} tokens, the five special tokens first) trained with"
      f" `tokenizers` on a seeded {args.get('tokenizer_sample_chars', 0) / 1e6:.0f}M-character"
      " sample of the training files.\n")
    w("Note: the validation files are held out from *this* model only; an evaluation that samples"
      " arbitrary standard-library files will include files the model was trained on. Use"
      " `heldout_files.txt` for an uncontaminated sample.\n")
    w("## Objective\n")
    w("Fill-in-the-middle as in Bavarian et al. 2022, *Efficient Training of Language Models to"
      f" Fill in the Middle*: each chunk is, with probability {args['fim_rate']}, cut at two"
      " uniform"
      " random *character* positions into prefix / middle / suffix and rearranged, PSM and SPM"
      f" {int(100 * (1 - args['spm_rate']))}/{int(100 * args['spm_rate'])}:\n")
    w("```\nPSM: <fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle <|endoftext|>\n"
      "SPM: <fim_prefix> <fim_suffix> suffix <fim_middle> prefix middle <|endoftext|>\n```\n")
    w("otherwise it stays left-to-right (`text <|endoftext|>`). Pieces are tokenized separately"
      " (special-token strings inside source text are encoded as plain text), examples are packed"
      f" into rows of {args['ctx']} tokens, and the loss is over all tokens but padding. AdamW"
      " (betas 0.9/0.95,"
      f" weight decay {args['weight_decay']}), peak learning rate {args['lr']}, {args['warmup']}"
      f" warm-up steps, cosine decay to {args['min_lr']}, gradient clipping 1.0, seed"
      f" {args['seed']}.{_cycles_text(args)}{_phases_text(args)} The validation loss is over"
      f" {args['val_rows']} fixed rows of held-out files under the same FIM mixture, packed as in"
      " the first phase (`split`) throughout, so that the curve stays comparable.\n")
    w("## Use\n")
    w("holefill loads it when no model is configured. Directly with transformers:\n")
    w("```python\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\n"
      "from holefill.models import default_model_path\n\n"
      "path = default_model_path()\n"
      "tok = AutoTokenizer.from_pretrained(path)\n"
      "model = AutoModelForCausalLM.from_pretrained(path)\n"
      'prompt = "<fim_prefix>def add(a, b):\\n    <fim_suffix>\\n<fim_middle>"\n'
      "out = model.generate(**tok(prompt, return_tensors=\"pt\"), max_new_tokens=16)\n```\n")
    w("## Samples\n")
    w("Held-out files (`heldout_files.txt`), PSM and SPM prompts cut to the context around the"
      " hole,"
      f" greedy, unconstrained (no grammar checks), up to {MAX_NEW} new tokens, stopped at"
      " `<|endoftext|>`. Two kinds of hole: **line**, the code of one line removed (indentation"
      " and newline stay); **line-end**, the rest of a line after a cursor in its second half (the"
      " usual completion at the cursor). The table above counts them over"
      f" {results[('line', 'psm')]['n']} holes of each kind.\n")
    for kind, c, gots in shown:
        w(f"### {kind}: `{c['key']}`\n")
        w("prefix (last lines, \u2588 = hole):\n```python\n"
          + _tail(c["prefix"], 6).replace("```", "`\u200b``") + "\u2588\n```")
        w("suffix (first lines):\n```python\n" + _head(c["suffix"], 4).replace("```", "`\u200b``")
          + "\n```")
        w(f"- expected: `{c['middle']!r}`")
        for fmt, got in gots.items():
            ok = "exact" if got == c["middle"] else (
                "first line right" if (got.splitlines() or [""])[0].strip() == c["middle"].strip()
                else "miss")
            w(f"- model, {fmt.upper()}: `{got!r}` ({ok})")
        w("")
    kept = _evaluation_section(out / "MODEL_CARD.md")
    if kept:  # written by benchmarks/eval_decode.py runs, not by training: keep it
        w(kept)
    w("## Reproduce\n")
    w("From the repository root (the corpus depends on the Python version and on the installed"
      " packages; the fingerprints above tell whether you read the same files; bf16 CPU kernels"
      " may differ across CPUs):\n")
    w("`--work` may be any folder (corpus cache, tokenizer, checkpoints, `log.csv`); `--out`"
      " defaults to this folder.\n")
    w("`--minutes` is a wall-clock cap: on a slower machine raise it so that the scheduled steps"
      " complete (the run stops early otherwise, and `--resume` finishes it).\n")
    w("```sh\npip install -e '.[model,train]'   # torch==2.13.0 (CPU wheel)")
    for cmd in meta["commands"]:
        w(f"PYTHONPATH=server nice -n 10 {cmd}")
    w("```\n")
    w("The run checkpoints every few minutes to `--work` (model, optimizer, data-stream position,"
      " RNG) and exports the fp16 model to `--out` each time; `--resume` continues exactly where it"
      " stopped (same rows, same schedule), `--export-only` rewrites this card, the plot and the"
      " samples from the last checkpoint. `--probe 40 --sizes 192x4,256x6,320x6` measures"
      " tokens/s of candidate sizes before choosing one.\n")
    w("## Limits\n")
    other = "spm" if best == "psm" else "psm"
    w(f"- Prompt format: with this model **{best.upper()}** prompts gave better fills than"
      f" {other.upper()} on the held-out holes above (`holefill.json` records it). A model this"
      " small and this briefly trained makes little use of a prefix that sits far back in the"
      " prompt: in PSM the prefix is separated from the middle by the whole suffix; in SPM it comes"
      " right before the middle, but then the suffix (needed to know where to stop) is far back.")
    n_exact = sum(r["exact"] for r in results.values())
    n_all = sum(r["n"] for r in results.values())
    w(f"- It is tiny ({meta['params'] / 1e6:.1f}M parameters) and saw about"
      f" {ck['tokens'] / 1e6:.0f}M tokens: it has learnt the surface of code (indentation,"
      " brackets, common identifiers and idioms), not programming, and it rarely knows where a"
      f" hole ends: {n_exact} of the {n_all} held-out fills above were exact, and greedy output"
      " tends to repeat itself until the token budget runs out. With SPM, a hole at the start of"
      " a line is often filled with nothing (the model ends the middle at once), which is why"
      " whole-line SPM fills keep the file parseable more often than they are right.")
    w(f"- Context is {args['ctx']} tokens: holefill cuts the prompt around the hole.")
    w("- Mostly Python; some C/C++ from system headers; other languages barely.")
    w("- Real use wants a real code model with FIM tokens, e.g. **Qwen2.5-Coder-1.5B**,"
      " **DeepSeek-Coder-1.3B** or **StarCoder2-3B**; holefill loads them from a local folder or"
      " from the Hugging Face cache (`holefill models` lists the ones it finds), with no network"
      " once they are there.")
    w("- holefill's constrained decoding keeps the *syntax* valid whatever the model proposes; it"
      " cannot make the model's choices good.\n")
    (out / "MODEL_CARD.md").write_text("\n".join(lines))
    log(f"card written to {out} ({size / 1e6:.1f} MB total) in {time.time() - t0:.0f}s")


def _evaluation_section(card: Path) -> str:
    """The "## Evaluation" section of an existing card, or ""."""
    try:
        text = card.read_text(encoding="utf-8")
    except OSError:
        return ""
    start = text.find("\n## Evaluation")
    if start < 0:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start + 1: end if end >= 0 else len(text)].rstrip() + "\n"
