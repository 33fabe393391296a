"""`holefill bench`: run the decoding comparison, the scaling curve and the baselines, then
write report.md, results.json and the plots into one folder."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import baselines, metrics, plots, report
from .config import FULL, INFILLING_SPLITS, QUICK, BenchConfig
from .datasets import build_samples
from .modes import MODEL_MODES
from .options import DEFAULT_OUTPUT, PARTS, SUITES
from .results import BenchResults
from .runner import log_stderr, run_decoding
from .scaling import run_scaling, token_splitter
from .stages import Stages


def config_from(args: argparse.Namespace) -> BenchConfig:
    cfg = (QUICK if args.quick else FULL).limited(args.limit)
    changes: dict[str, Any] = {"seed": args.seed}
    if args.sizes:
        changes["sizes"] = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    if args.max_new_tokens is not None:
        changes["max_new_tokens"] = args.max_new_tokens
    if args.max_lines is not None:
        changes["python_max_lines"] = args.max_lines
    changes["suites"] = tuple(x for x in SUITES if x in args.suites.split(","))
    if args.splits:
        changes["infilling_splits"] = tuple(x for x in INFILLING_SPLITS
                                            if x in args.splits.split(","))
    if args.infilling is not None:
        changes["infilling_per_split"] = args.infilling
    if args.cuts is not None:
        changes["cuts_per_cell"] = args.cuts
    if args.steps is not None:
        changes["steps_per_cut"] = args.steps
    return dataclasses.replace(cfg, **changes)


def run(args: argparse.Namespace) -> BenchResults:
    parts = tuple(p for p in PARTS if p in args.parts.split(","))
    config = config_from(args)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    model = args.model or os.environ.get("HOLEFILL_MODEL") or None
    model_dir = _model_dir(model)
    res = BenchResults(config, {"command": _command(args)}, parts=parts)
    if "decode" in parts:
        _decode(res, model, args)
    if "scaling" in parts:
        _scaling(res, model_dir)
    res.environment.update(_environment(res.environment))
    res.plots = plots.write_plots(out, res.cells, res.by_language, res.by_group)
    res.write_json(out / "results.json")
    (out / "report.md").write_text(report.render(res), encoding="utf-8")
    log_stderr(f"wrote {out / 'report.md'}, results.json and {len(res.plots)} plot(s)")
    functional = report.functional_table(res)
    if functional:  # the headline numbers on stdout too (stderr has the progress)
        print("pass@1, validity, exact match and fills that swallowed fixed code, per split "
              "and mode (%; swallowed: fills)\n\n" + functional, flush=True)
    return res


def _decode(res: BenchResults, model: str | None, args: argparse.Namespace) -> None:
    from holefill.decode import Completer
    from holefill.decode.backend import choose_device

    threads = args.threads
    if threads is None and model is None and choose_device(args.device) == "cpu":
        threads = 1  # the 6M bundled model: thread hand-offs cost more than they save
    t0 = time.perf_counter()
    comp = Completer(model=model, device=args.device, threads=threads,
                     fim_format=args.fim_format)
    res.wall_s["model load"] = time.perf_counter() - t0
    res.environment.update(_model_info(comp))
    samples = build_samples(res.config)
    log_stderr(f"decoding {len(samples)} samples x {len(MODEL_MODES)} model modes with "
               f"{comp.name}")
    t0 = time.perf_counter()
    res.records = run_decoding(comp, samples, res.config, log_stderr)
    res.wall_s["decoding + oracles"] = time.perf_counter() - t0
    res.by_language = metrics.rows(res.records, lambda r: r.language)
    res.by_group = metrics.rows(res.records, lambda r: r.group)
    res.paired = {m: metrics.paired(res.records, lambda r: r.group, m)
                  for m in ("Con.-", "Con.", "Con.p", "Chk.")}
    if any(r.passed is not None for r in res.records):
        from .sandbox import Isolation

        res.environment["test sandbox"] = Isolation.probe().description


def _scaling(res: BenchResults, model_dir: Path | None) -> None:
    from holefill.datasets import stdlib_files

    tokenizer_json = model_dir / "tokenizer.json" if model_dir else None
    guidance = baselines.load_guidance(tokenizer_json)
    res.guidance = {"version": guidance.version, "vocab": guidance.vocab,
                    "error": guidance.error}
    if guidance.error:
        log_stderr(f"llguidance baseline skipped: {guidance.error}")
    t0 = time.perf_counter()
    with Stages() as stages:
        res.cells = run_scaling(res.config, token_splitter(tokenizer_json), guidance,
                                log_stderr, stages)
    res.stages = stages.rows()
    if guidance.ok:
        files = [p for p in stdlib_files(res.config.python_max_lines)
                 if p.stat().st_size > 4000]
        step = max(1, len(files) // max(1, res.config.llguidance_files))
        res.guidance_files = baselines.guidance_on_files(
            guidance, files[::step][: res.config.llguidance_files], 2000)
    res.wall_s["scaling + baselines"] = time.perf_counter() - t0


def _model_dir(model: str | None) -> Path | None:
    from holefill.decode.backend import resolve_model

    try:
        return resolve_model(model)[0]
    except Exception:  # an unknown model fails later, with the loader's own message
        return None


def _command(args: argparse.Namespace) -> str:
    words = ["holefill", "bench"]
    if args.quick:
        words.append("--quick")
    for flag in ("model", "device", "threads", "limit", "sizes", "cuts", "steps",
                 "max_new_tokens", "max_lines", "seed", "parts", "suites", "splits",
                 "infilling", "fim_format"):
        value = getattr(args, flag)
        default = {"device": "auto", "seed": 0, "parts": ",".join(PARTS),
                   "suites": ",".join(SUITES)}.get(flag)
        if value is not None and value != default:
            words += [f"--{flag.replace('_', '-')}", str(value)]
    if args.output != DEFAULT_OUTPUT:
        words += ["--output", str(args.output)]
    return " ".join(words)


def _model_info(comp: Any) -> dict[str, str]:
    import torch

    b = comp.backend
    params = sum(p.numel() for p in b.model.parameters())
    return {"model": f"{comp.name} ({params / 1e6:.1f}M parameters, template "
                     f"{b.template.family}, context {b.context_length})",
            "device": f"{b.device} ({str(b.dtype).replace('torch.', '')}), torch threads "
                      f"{torch.get_num_threads()}"}


def _environment(known: dict[str, Any]) -> dict[str, str]:
    info = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "machine": f"{_cpu_name()}, {os.cpu_count()} cores ({platform.machine()})",
            "python": platform.python_version(),
            "software": _versions(),
            "holefill": _commit()}
    return {k: v for k, v in info.items() if k not in known}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("torch", "transformers", "tree-sitter", "llguidance", "matplotlib"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} -")
    try:
        gpp = subprocess.run(["g++", "--version"], capture_output=True, text=True, timeout=10)
        out.append(gpp.stdout.splitlines()[0] if gpp.stdout else "g++ -")
    except (OSError, subprocess.TimeoutExpired):
        out.append("g++ -")
    return ", ".join(out)


def _commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return f"commit {head.stdout.strip()}" if head.returncode == 0 else "not a git checkout"


def missing_packages(parts: tuple[str, ...]) -> list[str]:
    """The packages this run needs that cannot be imported: asked before any work, so that a
    missing one is a line of advice, not a traceback after minutes of decoding."""
    needed = ["matplotlib"]  # the plots, written at the end
    if "decode" in parts:
        needed += ["torch", "transformers"]
    missing = []
    for name in needed:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(args: argparse.Namespace) -> int:
    for what, given, known in (("part", args.parts, PARTS), ("suite", args.suites, SUITES),
                               ("split", args.splits or "", INFILLING_SPLITS)):
        unknown = {x for x in given.split(",") if x} - set(known)
        if unknown:
            print(f"holefill bench: unknown {what}(s): {', '.join(sorted(unknown))}; "
                  f"use {', '.join(known)}", file=sys.stderr)
            return 2
    missing = missing_packages(tuple(p for p in PARTS if p in args.parts.split(",")))
    if missing:
        print(f"holefill bench needs {', '.join(missing)}, which cannot be imported here: "
              "pip install 'holefill[bench]' (in a clone: pip install -e '.[bench]' "
              "-c .ci/constraints.txt)", file=sys.stderr)
        return 2
    run(args)
    return 0
