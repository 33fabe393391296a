"""`holefill` on the command line.

    holefill serve [--tcp PORT [--token-file F]]  the language server (stdio by default)
    holefill fill FILE [--write]          fill every hole marker (prints a diff, or writes)
    holefill complete FILE:LINE:COL       print the completion at a position (1-based)
    holefill check FILE [--language L] [--hole-marker M] [--max-steps N] [--quiet]
    holefill grammar LANG
    holefill models
    holefill bench [--quick] [--output DIR] [--model M] [--device D]

Exit status of `check`: 0 completable, 1 not completable, 3 unknown (budget ran out),
2 bad input (unknown language, unreadable file, malformed grammar).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from holefill.errors import HolefillError

EXIT_YES, EXIT_NO, EXIT_ERROR, EXIT_UNKNOWN = 0, 1, 2, 3


def _cmd_check(args: argparse.Namespace) -> int:
    from holefill.check.checker import Checker, Verdict
    from holefill.languages import get_language, language_for_path, split_holes

    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HolefillError(f"cannot read {path}: {exc}") from exc
    spec = get_language(args.language) if args.language else language_for_path(path)
    marker = args.hole_marker or spec.hole_marker
    chunks = split_holes(text, marker)
    checker = Checker.for_language(spec.name)
    t0 = time.perf_counter()
    res = checker.check(chunks, want_witness=True, max_steps=args.max_steps)
    ms = (time.perf_counter() - t0) * 1e3
    holes = len(chunks) - 1
    verdict = res.verdict.value
    print(f"{path}: {spec.name}, {holes} hole(s): completable: {verdict} ({ms:.1f} ms)",
          file=sys.stderr)
    if res.verdict is Verdict.YES and res.fills is not None and not args.quiet:
        sys.stdout.write("".join(c + f for c, f in zip(chunks, res.fills + [""], strict=True)))
    if res.verdict is Verdict.NO:
        return EXIT_NO
    if res.verdict is Verdict.UNKNOWN:
        print("the check ran out of budget; raise --max-steps to decide", file=sys.stderr)
        return EXIT_UNKNOWN
    return EXIT_YES


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HolefillError(f"cannot read {path}: {exc}") from exc


def _completer(args: argparse.Namespace):
    """Load the model with a progress bar on stderr."""
    from tqdm import tqdm

    from holefill.decode import Completer

    model = args.model or os.environ.get("HOLEFILL_MODEL") or None
    with tqdm(total=100, desc="loading model", unit="%", file=sys.stderr, leave=False,
              disable=args.quiet or None) as bar:

        def progress(stage: str, frac: float | None) -> None:
            bar.set_postfix_str(stage)
            if frac is not None:
                bar.update(int(frac * 100) - bar.n)

        return Completer(model=model, device=args.device, progress=progress)


def _fill_options(args: argparse.Namespace) -> dict:
    return dict(constrained=not args.no_constraint, max_new_tokens=args.max_new_tokens,
                top_k=args.top_k, temperature=args.temperature, seed=args.seed)


def _run_fill(comp, chunks: list[str], language: str, args: argparse.Namespace):
    from tqdm import tqdm

    with tqdm(total=100, desc="filling", unit="%", file=sys.stderr, leave=False,
              disable=args.quiet or None) as bar:

        def progress(frac: float, message: str) -> None:
            bar.set_postfix_str(message)
            bar.update(int(frac * 100) - bar.n)

        res = comp.fill(chunks, language, progress=progress, **_fill_options(args))
    if not args.quiet:
        s = res.stats
        note = "" if res.verified else ", UNVERIFIED (a check ran out of budget)"
        print(f"{len(res.fills)} hole(s), {int(s['tokens'])} tokens, {int(s['rejected'])} "
              f"rejected, {s['total_s']:.2f} s{note}", file=sys.stderr)
    return res


def _cmd_fill(args: argparse.Namespace) -> int:
    import difflib

    from holefill.languages import get_language, language_for_path, split_holes

    path = Path(args.file)
    text = _read(path)
    spec = get_language(args.language) if args.language else language_for_path(path)
    marker = args.hole_marker or spec.hole_marker
    chunks = split_holes(text, marker)
    if len(chunks) < 2:
        print(f"{path}: no hole markers ({marker}) to fill", file=sys.stderr)
        return EXIT_YES
    res = _run_fill(_completer(args), chunks, spec.name, args)
    filled = res.text(chunks)
    if args.write:
        path.write_text(filled, encoding="utf-8")
        print(f"{path}: filled {len(res.fills)} hole(s)", file=sys.stderr)
    else:
        diff = "".join(difflib.unified_diff(
            text.splitlines(keepends=True), filled.splitlines(keepends=True),
            fromfile=str(path), tofile=f"{path} (filled)"))
        sys.stdout.write(diff if diff.endswith("\n") else diff + "\n\\ No newline at end of file\n")
        sys.stdout.flush()
    return EXIT_YES


def _split_position(target: str) -> tuple[Path, int, int]:
    parts = target.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise HolefillError(f"expected FILE:LINE:COL (1-based), got {target!r}")
    return Path(parts[0]), int(parts[1]), int(parts[2])


def _offset(text: str, line: int, col: int) -> int:
    lines = text.splitlines(keepends=True) or [""]
    if not 1 <= line <= len(lines) + 1:
        raise HolefillError(f"line {line} is outside the file (it has {len(lines)} lines)")
    if line == len(lines) + 1:
        if col != 1:
            raise HolefillError(f"column {col} is past the end of the file")
        return len(text)
    body = lines[line - 1].rstrip("\r\n")
    if not 1 <= col <= len(body) + 1:
        raise HolefillError(f"column {col} is outside line {line} (it has {len(body)} "
                            "characters)")
    return sum(len(s) for s in lines[: line - 1]) + col - 1


def _cmd_complete(args: argparse.Namespace) -> int:
    from holefill.languages import get_language, language_for_path, split_holes

    path, line, col = _split_position(args.position)
    text = _read(path)
    spec = get_language(args.language) if args.language else language_for_path(path)
    at = _offset(text, line, col)
    marker = args.hole_marker or spec.hole_marker
    # the other hole markers of the file are holes too
    before, after = split_holes(text[:at], marker), split_holes(text[at:], marker)
    chunks = [*before, *after]
    res = _run_fill(_completer(args), chunks, spec.name, args)
    sys.stdout.write(res.fills[len(before) - 1])
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    return EXIT_YES


def _model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--language", "-l", help="python, cpp, json (default: from the extension)")
    p.add_argument("--hole-marker", help="the text that marks a hole (default: <|hole|>)")
    p.add_argument("--model", "-m", help="a model folder or a Hugging Face id in the local "
                   "cache (default: $HOLEFILL_MODEL, else the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    p.add_argument("--max-new-tokens", type=int, default=64, help="per hole (default 64)")
    p.add_argument("--top-k", type=int, default=8, help="candidates tried per token")
    p.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-constraint", action="store_true",
                   help="plain model output, for comparison (may be invalid)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress or summary")


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from holefill.lsp.server import serve

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="holefill %(levelname)s %(name)s: %(message)s")
    if args.token_file is not None and args.tcp is None:
        raise HolefillError("--token-file goes with --tcp")

    def announce(line: str) -> None:
        print(f"holefill: {line}", file=sys.stderr, flush=True)

    code = serve(args.tcp, Path(args.token_file) if args.token_file else None, announce)
    # Leave at once: the protocol is done, and tearing down a loaded model (torch's
    # finalizers) kept the editor waiting for seconds after `exit`.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)


def _cmd_grammar(args: argparse.Namespace) -> int:
    from holefill.grammar import format_stats
    from holefill.languages import get_language

    spec = get_language(args.language)
    print(format_stats(spec.compile()))
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from holefill.models import format_models

    print(format_models())
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from holefill.bench import main as bench_main

    return bench_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holefill",
        description="Syntax-guaranteed code completion: checks and fills holes in code.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    p.add_argument("--tcp", type=int, metavar="PORT",
                   help="listen on 127.0.0.1:PORT instead (0: any free port) for one client "
                        "that sends the server's token as initializationOptions.token")
    p.add_argument("--token-file", metavar="FILE",
                   help="with --tcp: the token is in FILE (readable by you alone) or, when "
                        "FILE does not exist, written there (default: a new token in "
                        "$XDG_RUNTIME_DIR/holefill/tcp-PORT.token)")
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("fill", help="fill every hole marker of a file with the model")
    p.add_argument("file")
    p.add_argument("--write", "-w", action="store_true",
                   help="write the filled file (default: print a diff)")
    _model_arguments(p)
    p.set_defaults(func=_cmd_fill)

    p = sub.add_parser("complete", help="print the completion at FILE:LINE:COL (1-based)")
    p.add_argument("position", metavar="FILE:LINE:COL")
    _model_arguments(p)
    p.set_defaults(func=_cmd_complete)

    p = sub.add_parser("check", help="is a file with hole markers completable? print a filling")
    p.add_argument("file")
    p.add_argument("--language", "-l", help="json, cpp (default: from the file extension)")
    p.add_argument("--hole-marker", help="the text that marks a hole (default: <|hole|>)")
    p.add_argument("--max-steps", type=int, default=20_000_000,
                   help="work budget of the check; past it the answer is 'unknown'")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the verdict")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("grammar", help="print the normalized size of a language's grammar")
    p.add_argument("language")
    p.set_defaults(func=_cmd_grammar)

    p = sub.add_parser("models", help="list the bundled model and local models with FIM tokens")
    p.set_defaults(func=_cmd_models)

    from holefill.bench import add_arguments as bench_arguments

    p = sub.add_parser("bench", help="benchmark: constrained vs unconstrained, check-time "
                       "scaling, baselines; writes a Markdown report and plots")
    bench_arguments(p)
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except HolefillError as exc:
        print(f"holefill: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
