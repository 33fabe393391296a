"""`holefill` on the command line.

    holefill check FILE [--language L] [--hole-marker M] [--max-steps N] [--quiet]
    holefill grammar LANG
    holefill models

Exit status of `check`: 0 completable, 1 not completable, 3 unknown (budget ran out),
2 bad input (unknown language, unreadable file, malformed grammar).
"""

from __future__ import annotations

import argparse
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="holefill",
        description="Syntax-guaranteed code completion: checks and fills holes in code.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

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
