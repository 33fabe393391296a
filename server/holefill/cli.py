"""`holefill` on the command line.

    holefill serve [--tcp PORT [--token-file F]]  the language server (stdio by default)
    holefill fill FILE [--write]          fill every hole marker (prints a diff, or writes);
                                          --decoder diffusion: a diffusion model, all at once
    holefill complete FILE:LINE:COL       print the completion at a position (1-based)
    holefill check FILE [--language L] [--hole-marker M] [--max-steps N] [--quiet]
    holefill grammar LANG
    holefill models [--export-gguf OUT.gguf [--model M]]
    holefill bench [--quick] [--output DIR] [--model M] [--device D]

Exit status of `check`: 0 completable, 1 not completable, 3 unknown (budget ran out),
2 bad input (unknown language, unreadable file, malformed grammar). `fill` and `complete` exit
with 1 when the text outside the holes cannot be completed (checked before the model loads).

Files come back byte for byte outside the holes (holefill.sourcefile); a "no" names the line
and column of the first place no filling repairs (holefill.check.diagnose).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from holefill import __version__
from holefill.errors import HolefillError
from holefill.languages import (
    LANGUAGES,
    LanguageSpec,
    get_language,
    language_for_document,
    language_for_path,
    split_holes,
)
from holefill.progress import Progress
from holefill.sourcefile import SourceFile, normalize, read_source

if TYPE_CHECKING:  # the checker and the model load on first use, not at start-up
    from holefill.check.checker import Checker
    from holefill.decode import Completer, FillResult

EXIT_YES, EXIT_NO, EXIT_ERROR, EXIT_UNKNOWN = 0, 1, 2, 3
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
KNOWN = ", ".join(sorted(LANGUAGES))


def _cmd_check(args: argparse.Namespace) -> int:
    from holefill.check.checker import Checker, Verdict

    path = Path(args.file)
    spec = _language(args, path)
    src = read_source(path, spec.name)
    marker = args.hole_marker or spec.hole_marker
    own, chunks = _split(src, marker)
    checker = Checker.for_language(spec.name)
    t0 = time.perf_counter()
    res = checker.check(chunks, want_witness=True, max_steps=args.max_steps)
    ms = (time.perf_counter() - t0) * 1e3
    holes = len(chunks) - 1
    print(f"{path}: {spec.name}, {holes} hole(s): completable: {res.verdict.value} "
          f"({ms:.1f} ms)", file=sys.stderr)
    if res.verdict is Verdict.YES and res.fills is not None and not args.quiet:
        sys.stdout.buffer.write(src.encode(src.filled(own, res.fills)))
        sys.stdout.flush()
    if res.verdict is Verdict.NO:
        _where(checker, src, chunks, marker, args.max_steps)
        return EXIT_NO
    if res.verdict is Verdict.UNKNOWN:
        print("the check ran out of budget; raise --max-steps to decide", file=sys.stderr)
        return EXIT_UNKNOWN
    return EXIT_YES


def _language(args: argparse.Namespace, path: Path) -> LanguageSpec:
    """--language, else the file's extension (a `.h` file goes to C unless its text is
    evidently C++)."""
    if args.language:
        return get_language(args.language)
    if path.suffix.lower() == ".h" and path.is_file():
        return language_for_document(path, None, path.read_text("utf-8", errors="replace"))
    return language_for_path(path)


def _split(src: SourceFile, marker: str, at: int | None = None) -> tuple[list[str], list[str]]:
    """The file's own chunks around every marker (and at offset `at`, a cursor), and the
    same chunks as the engine sees them."""
    if at is None:
        own = split_holes(src.text, marker)
    else:
        own = [*split_holes(src.text[:at], marker), *split_holes(src.text[at:], marker)]
    return own, [normalize(c) for c in own]


def _where(checker: Checker, src: SourceFile, chunks: list[str], marker: str | list[str],
           max_steps: int) -> None:
    """Print the first place no filling repairs, with its line and a caret (nothing when a
    check on the way ran out of budget: a guessed place would mislead)."""
    from holefill.check.diagnose import first_unrepairable
    from holefill.positions import line_bodies

    place = first_unrepairable(checker, chunks, hole_text=marker, max_steps=max_steps)
    if place is None:
        print("(the place could not be located: a check on the way ran out of budget)",
              file=sys.stderr)
        return
    what = ("the text ends before it can be completed (something opened is never closed)"
            if place.at_end else "no filling of the holes can repair the text from here on")
    body = line_bodies(src.plain)[place.line]
    pad = "".join(c if c == "\t" else " " for c in body[: place.col])  # tabs stay tabs
    print(f"{src.path}:{place.line + 1}:{place.col + 1}: {what}\n    {body}\n    {pad}^",
          file=sys.stderr)


def _completer(args: argparse.Namespace) -> Completer:
    """Load the model, with progress on stderr."""
    from holefill.decode import Completer

    model = args.model or os.environ.get("HOLEFILL_MODEL") or None
    with Progress("loading model", enabled=not args.quiet) as bar:

        def progress(stage: str, frac: float | None) -> None:
            bar.update(frac, stage, stage=stage)

        return Completer(model=model, device=args.device, progress=progress,
                         remote_model=args.remote_model, template=args.template,
                         fim_format=args.fim_format, timeout_s=args.timeout,
                         decoder=args.decoder)


def _precheck(args: argparse.Namespace, src: SourceFile, chunks: list[str],
              language: str, marker: str | list[str]) -> bool:
    """The cheap check before the model loads: can the text outside the holes be completed
    at all? False (after saying where) when it cannot; UNKNOWN lets the fill go on."""
    from holefill.check.checker import DEFAULT_MAX_STEPS, Checker, Verdict
    from holefill.check.window import find_window

    if args.no_constraint:
        return True
    checker = Checker.for_language(language)
    window = find_window(language, chunks)
    if checker.check(window.apply(chunks)).verdict is not Verdict.NO:
        return True
    print(f"{src.path}: no filling of the {len(chunks) - 1} hole(s) makes this valid "
          f"{language}", file=sys.stderr)
    _where(checker, src, chunks, marker, DEFAULT_MAX_STEPS)
    print("mark that place as a hole too, or fill with --no-constraint", file=sys.stderr)
    return False


def _fill_options(args: argparse.Namespace, comp: Completer) -> dict:
    options = dict(constrained=not args.no_constraint, max_new_tokens=args.max_new_tokens,
                   top_k=args.top_k, temperature=args.temperature, seed=args.seed)
    if comp.decoder != "diffusion":
        # as an editor's Fill holes: a filling keeps to its hole's block and ends at a blank
        # line after a complete statement, so it cannot carry the code after it elsewhere
        options.update(keep_to_place=True, stop_at_blank_line=True)
    if comp.decoder == "diffusion":
        options.update(hole_tokens=min(args.hole_tokens, args.max_new_tokens),
                       steps=args.steps)
    return options


def _run_fill(comp: Completer, chunks: list[str], language: str,
              args: argparse.Namespace) -> FillResult:
    with Progress("filling", enabled=not args.quiet) as bar:

        def progress(frac: float, message: str) -> None:
            bar.update(frac, message)

        res = comp.fill(chunks, language, progress=progress, **_fill_options(args, comp))
    if not args.quiet:
        s = res.stats
        note = "" if res.verified else f", UNVERIFIED ({res.reason or 'not checked'})"
        print(f"{len(res.fills)} hole(s), {int(s['tokens'])} tokens, {int(s['rejected'])} "
              f"rejected, {s['total_s']:.2f} s{note}", file=sys.stderr)
    return res


def _cmd_fill(args: argparse.Namespace) -> int:
    path = Path(args.file)
    spec = _language(args, path)
    src = read_source(path, spec.name)
    marker = args.hole_marker or spec.hole_marker
    own, chunks = _split(src, marker)
    if len(chunks) < 2:
        if not args.quiet:
            print(f"{path}: no hole markers ({marker}) to fill", file=sys.stderr)
        return EXIT_YES
    if not _precheck(args, src, chunks, spec.name, marker):
        return EXIT_NO
    res = _run_fill(_completer(args), chunks, spec.name, args)
    code = _unverified(args, path, res)
    if code != EXIT_YES and not args.allow_unverified:
        return code
    filled = src.filled(own, res.fills)
    if args.write:
        path.write_bytes(src.encode(filled))
        if not args.quiet:
            print(f"{path}: filled {len(res.fills)} hole(s)", file=sys.stderr)
    else:
        diff = "".join(difflib.unified_diff(
            _lines(src.text), _lines(filled), fromfile=str(path), tofile=f"{path} (filled)"))
        sys.stdout.write(diff if diff.endswith("\n") else diff + "\n\\ No newline at end of file\n")
        sys.stdout.flush()
    return code


def _unverified(args: argparse.Namespace, path: Path, res: FillResult) -> int:
    """EXIT_YES for a verified fill; else says why and returns EXIT_NO (the final whole-file
    check refused it: the file would be invalid) or EXIT_UNKNOWN (it could not decide).
    Unverified output is neither written nor printed unless --allow-unverified."""
    if res.verified:
        return EXIT_YES
    what = ("the filled file would not be valid" if res.refused
            else "the filled file could not be verified")
    then = ("shown anyway (--allow-unverified)" if args.allow_unverified
            else "nothing was written (--allow-unverified shows it anyway)")
    print(f"{path}: {what} ({res.reason or 'not checked'}); {then}", file=sys.stderr)
    return EXIT_NO if res.refused else EXIT_UNKNOWN


def _lines(text: str) -> list[str]:
    """Lines with their breaks, split only at line breaks (not at form feeds)."""
    return _LINE.findall(text)


def _split_position(target: str) -> tuple[Path, int, int]:
    parts = target.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise HolefillError(f"expected FILE:LINE:COL (1-based), got {target!r}")
    return Path(parts[0]), int(parts[1]), int(parts[2])


def _offset(text: str, line: int, col: int) -> int:
    """The offset of 1-based `line` and `col` (code points), or a HolefillError."""
    from holefill.positions import line_bodies, line_starts

    bodies, starts = line_bodies(text), line_starts(text)
    if not 1 <= line <= len(bodies):
        lines = len(bodies) - (len(bodies) > 1 and bodies[-1] == "")  # after a final break
        raise HolefillError(f"line {line} is outside the file (it has {lines} lines)")
    body = bodies[line - 1]
    if not 1 <= col <= len(body) + 1:
        raise HolefillError(f"column {col} is outside line {line} (it has {len(body)} "
                            "characters)")
    return starts[line - 1] + col - 1


def _cmd_complete(args: argparse.Namespace) -> int:
    path, line, col = _split_position(args.position)
    spec = _language(args, path)
    src = read_source(path, spec.name)
    at = _offset(src.text, line, col)
    marker = args.hole_marker or spec.hole_marker
    # the other hole markers of the file are holes too
    own, chunks = _split(src, marker, at)
    cursor = len(split_holes(src.text[:at], marker)) - 1
    marks = [marker] * (len(chunks) - 1)
    marks[cursor] = ""
    if not _precheck(args, src, chunks, spec.name, marks):
        return EXIT_NO
    res = _run_fill(_completer(args), chunks, spec.name, args)
    code = _unverified(args, path, res)
    if code != EXIT_YES and not args.allow_unverified:
        return code
    sys.stdout.buffer.write(src.encode(src.own(res.fills[cursor])))
    if sys.stdout.isatty():
        sys.stdout.buffer.write(b"\n")
    sys.stdout.flush()
    return code


def _model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--language", "-l", help=f"{KNOWN} (default: from the file extension)")
    p.add_argument("--hole-marker", help="the text that marks a hole (default: <|hole|>)")
    p.add_argument("--model", "-m", help="a model folder, a Hugging Face id in the local "
                   "cache, or the URL of an OpenAI-compatible completions server "
                   "(http://127.0.0.1:8080/v1; API key from $HOLEFILL_API_KEY) "
                   "(default: $HOLEFILL_MODEL, else the bundled model)")
    p.add_argument("--remote-model", metavar="NAME",
                   help="with a server URL: which of its models (default: the only one)")
    p.add_argument("--template", help="FIM template: a family name (starcoder, "
                   "qwen2.5-coder, ...) or a string with {prefix} and {suffix} "
                   "(default: detected from the tokenizer)")
    p.add_argument("--fim-format", choices=("psm", "spm"),
                   help="prefix-suffix-middle or suffix-prefix-middle (default: what the "
                   "model folder says, else psm)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="with a server URL: the longest wait for one answer (default 60)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    p.add_argument("--decoder", choices=("auto", "autoregressive", "diffusion"), default="auto",
                   help="diffusion: a masked-diffusion model fills every hole at once (the "
                   "bundled one unless --model names one); auto: from the model")
    p.add_argument("--max-new-tokens", type=int, default=64,
                   help="per hole (default 64); diffusion: the positions a hole may grow to")
    p.add_argument("--hole-tokens", type=int, default=16,
                   help="diffusion: masked positions each hole starts with (default 16)")
    p.add_argument("--steps", type=int, default=0,
                   help="diffusion: model runs to unmask them (default 0: one token per run)")
    p.add_argument("--top-k", type=int, default=8, help="candidates tried per token")
    p.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-constraint", action="store_true",
                   help="plain model output, for comparison (may be invalid)")
    p.add_argument("--allow-unverified", action="store_true",
                   help="write or print a fill that the final whole-file check did not "
                   "verify (exit code still 1 or 3 tells so)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="print nothing on stderr but errors (no progress, no summary)")


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
    if args.export_gguf:
        from holefill.decode.gguf_export import export_gguf

        model = args.model or os.environ.get("HOLEFILL_MODEL") or None
        out = export_gguf(model, args.export_gguf, outtype=args.outtype)
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {args.outtype}) from "
              f"{model or 'the bundled model'}", file=sys.stderr)
        return 0
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
    parser.add_argument("--version", action="version", version=f"holefill {__version__}")
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
    p.add_argument("--language", "-l", help=f"{KNOWN} (default: from the file extension)")
    p.add_argument("--hole-marker", help="the text that marks a hole (default: <|hole|>)")
    p.add_argument("--max-steps", type=int, default=20_000_000,
                   help="work budget of the check; past it the answer is 'unknown'")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the verdict")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("grammar", help="print the normalized size of a language's grammar")
    p.add_argument("language")
    p.set_defaults(func=_cmd_grammar)

    p = sub.add_parser("models", help="list the bundled model and local models with FIM tokens")
    p.add_argument("--export-gguf", metavar="OUT.gguf",
                   help="write the model (--model, default the bundled one) as a GGUF file "
                   "that llama.cpp's server can serve (Llama models with byte-level BPE)")
    p.add_argument("--model", "-m", help="with --export-gguf: the model folder or cached id")
    p.add_argument("--outtype", choices=("f32", "f16"), default="f32",
                   help="with --export-gguf: weight type (default f32, as holefill runs "
                   "on a CPU)")
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
