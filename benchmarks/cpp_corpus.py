"""Whole real files, by corpus: which of those two outside oracles accept does holefill accept?

For every file of every corpus the script asks three judges, none of which is our grammar
judging itself:

  - tree-sitter-cpp (tree-sitter-c for `--language c`): the parse has no ERROR/MISSING node;
  - `g++ -std=gnu++17 -fsyntax-only` (`gcc -std=c17 -fsyntax-only` for C), with the include
    paths the corpus needs (verdicts cached on disk, keyed by compiler version, flags and
    content);
  - holefill: `Checker.for_language(LANG).completable([text])` is YES.

It prints, per corpus: the files, how many each oracle accepts, how many both accept, and the
share of those that holefill accepts (the issue's goal is >= 99%), with UNKNOWN (budget ran
out) counted apart; `--failures` lists the refused files with the place where the longest
accepted prefix ends.

Corpora (all from Debian's or PyPI's packages; `--sdists DIR` says where the PyPI sdists
are unpacked, `pip download --no-deps --no-binary :all: NAME==VERSION` fetches them):

  C++: googletest 1.12.1 (Debian libgtest-dev: /usr/src/googletest, sources and tests),
       fmt 9.1.0 (Debian libfmt-dev: /usr/include/fmt), nlohmann-json 3.11.2 (Debian
       nlohmann-json3-dev: /usr/include/nlohmann), Boost 1.74 (Debian libboost1.74-dev:
       boost/core, optional, smart_ptr, algorithm/string, utility, iterator, range),
       RapidJSON 1.1.0 (Debian rapidjson-dev), CLI11 2.1.2 (Debian libcli11-dev), pugixml
       1.13 and tinyxml2 9.0.0 (Debian libpugixml-dev, libtinyxml2-dev: their headers),
       pybind11 3.1.0 (PyPI sdist: include/ and tests/).
  C:   brotli 1.2.1 (PyPI sdist: the C library and the extension module), lz4 4.4.5 (PyPI
       sdist: the bundled lz4 library and the extension modules), zstandard 0.25.0 (PyPI sdist:
       the extension module and the bundled zstd amalgamation), psutil 7.2.2 (PyPI sdist: its
       C sources for every platform; gcc here accepts the Linux and POSIX ones), CPython 3.11's
       headers (Debian libpython3.11-dev: /usr/include/python3.11, each compiled after
       Python.h).

    python benchmarks/cpp_corpus.py [--language cpp|c] [--sdists DIR] [--corpus NAME ...]
                                    [--failures] [--max-files N] [--jobs N] [--json OUT]
                                    [--grammar FILE]   (a variant grammar, e.g. without a
                                                        macro form, to measure what it buys)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# where the PyPI sdists were unpacked (`pip download --no-deps --no-binary :all: NAME==VERSION`
# and `tar xf` each); nothing outside the clone is assumed
DEFAULT_SDISTS = os.environ.get("HOLEFILL_CORPORA")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "holefill" / "oracle"
PY_INCLUDE = "/usr/include/python3.11"


@dataclass(frozen=True)
class Corpus:
    name: str
    version: str
    source: str  # the package it comes from
    roots: tuple[str, ...]  # files or folders; sdist-relative paths start with "sdist:"
    includes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = (".cc", ".cpp", ".h", ".hpp")
    skip: tuple[str, ...] = ()  # path fragments left out (not C/C++, or generated)
    flags: tuple[str, ...] = field(default=())  # more compiler flags (`-include Python.h`)


CPP_CORPORA = (
    Corpus("googletest", "1.12.1", "Debian libgtest-dev",
           ("/usr/src/googletest/googletest", "/usr/src/googletest/googlemock"),
           ("/usr/src/googletest/googletest", "/usr/src/googletest/googletest/include",
            "/usr/src/googletest/googlemock", "/usr/src/googletest/googlemock/include")),
    Corpus("fmt", "9.1.0", "Debian libfmt-dev", ("/usr/include/fmt",)),
    Corpus("nlohmann-json", "3.11.2", "Debian nlohmann-json3-dev", ("/usr/include/nlohmann",)),
    Corpus("boost", "1.74", "Debian libboost1.74-dev",
           tuple(f"/usr/include/boost/{d}" for d in
                 ("core", "optional", "smart_ptr", "algorithm/string", "utility", "iterator",
                  "range"))),
    Corpus("rapidjson", "1.1.0", "Debian rapidjson-dev", ("/usr/include/rapidjson",)),
    Corpus("cli11", "2.1.2", "Debian libcli11-dev", ("/usr/include/CLI",)),
    Corpus("pugixml+tinyxml2", "1.13/9.0.0", "Debian libpugixml-dev, libtinyxml2-dev",
           ("/usr/include/pugixml.hpp", "/usr/include/pugiconfig.hpp",
            "/usr/include/tinyxml2.h")),
    Corpus("pybind11", "3.1.0", "PyPI sdist pybind11",
           ("sdist:pybind11-3.1.0/include", "sdist:pybind11-3.1.0/tests"),
           ("sdist:pybind11-3.1.0/include", "sdist:pybind11-3.1.0/tests", PY_INCLUDE)),
)

C_CORPORA = (
    Corpus("brotli", "1.2.1", "PyPI sdist Brotli", ("sdist:brotli-1.2.1/c",
                                                    "sdist:brotli-1.2.1/python"),
           ("sdist:brotli-1.2.1/c/include", PY_INCLUDE), (".c", ".h"), ("/fuzz/",)),
    Corpus("lz4", "4.4.5", "PyPI sdist lz4", ("sdist:lz4-4.4.5/lz4libs", "sdist:lz4-4.4.5/lz4"),
           ("sdist:lz4-4.4.5/lz4libs", PY_INCLUDE), (".c", ".h")),
    Corpus("zstandard", "0.25.0", "PyPI sdist zstandard",
           ("sdist:zstandard-0.25.0/c-ext", "sdist:zstandard-0.25.0/zstd"),
           ("sdist:zstandard-0.25.0/c-ext", "sdist:zstandard-0.25.0/zstd", PY_INCLUDE),
           (".c", ".h")),
    Corpus("psutil", "7.2.2", "PyPI sdist psutil", ("sdist:psutil-7.2.2/psutil",),
           ("sdist:psutil-7.2.2/psutil", PY_INCLUDE), (".c", ".h")),
    # The headers are parts of Python.h (most refuse to be compiled alone): each is compiled
    # after it.
    Corpus("cpython-headers", "3.11", "Debian libpython3.11-dev", (PY_INCLUDE,), (PY_INCLUDE,),
           (".h",), flags=("-include", "Python.h")),
)


def resolve(path: str, sdists: Path) -> Path:
    return sdists / path[len("sdist:"):] if path.startswith("sdist:") else Path(path)


def corpus_files(corpus: Corpus, sdists: Path) -> list[Path]:
    out: list[Path] = []
    for root in corpus.roots:
        p = resolve(root, sdists)
        files = [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []
        out += [f for f in files
                if f.suffix in corpus.suffixes and f.is_file()
                and not any(s in str(f) for s in corpus.skip)]
    return out


# ---------------------------------------------------------------- the two outside oracles


class TreeSitter:
    def __init__(self, language: str) -> None:
        import tree_sitter

        if language == "c":
            import tree_sitter_c as mod
        else:
            import tree_sitter_cpp as mod  # type: ignore[no-redef]
        self.parser = tree_sitter.Parser(tree_sitter.Language(mod.language()))

    def accepts(self, text: str) -> bool:
        return not self.parser.parse(text.encode("utf-8")).root_node.has_error


class Compiler:
    """`g++`/`gcc -fsyntax-only`, verdicts cached on disk."""

    def __init__(self, language: str) -> None:
        self.cmd = ["gcc", "-std=c17"] if language == "c" else ["g++", "-std=gnu++17"]
        self.cmd += ["-fsyntax-only", "-w"]
        self.version = subprocess.run([self.cmd[0], "-dumpfullversion"], capture_output=True,
                                      text=True).stdout.strip()

    def accepts(self, path: Path, includes: Iterable[str], flags: Iterable[str] = ()) -> bool:
        inc = [f"-I{i}" for i in includes]
        # A header is compiled as a source of its language; `-iquote` its own folder.
        cmd = [*self.cmd, *inc, *flags, f"-iquote{path.parent}", "-x",
               "c" if self.cmd[0] == "gcc" else "c++", str(path)]
        key = hashlib.sha256("\0".join([self.version, *cmd, path.read_text(
            encoding="utf-8", errors="replace")]).encode()).hexdigest()
        CACHE.mkdir(parents=True, exist_ok=True)
        hit = CACHE / key
        if hit.exists():
            return hit.read_text() == "1"
        ok = subprocess.run(cmd, capture_output=True, timeout=300).returncode == 0
        hit.write_text("1" if ok else "0")
        return ok


# ---------------------------------------------------------------- holefill


def longest_prefix(chk: object, text: str) -> int:
    """The longest line-prefix that is still completable (where a refused file goes wrong)."""
    lines = text.splitlines(keepends=True)
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chk.completable(["".join(lines[:mid]), ""]):  # type: ignore[attr-defined]
            lo = mid
        else:
            hi = mid - 1
    return lo + 1  # 1-based line where it goes wrong


@dataclass
class FileResult:
    path: Path
    ts: bool
    cc: bool
    verdict: str
    ms: float


def checker(language: str, grammar: Path | None = None):  # -> holefill.Checker
    """The language's checker, or one over another grammar file (to measure a variant)."""
    from holefill import Checker
    from holefill.grammar import compile_grammar_file
    from holefill.languages import get_language

    if grammar is None:
        return Checker.for_language(language)
    spec = get_language(language)
    compiled = compile_grammar_file(grammar, language)
    return Checker(compiled, spec.make_lexer(compiled))


def run_corpus(corpus: Corpus, language: str, sdists: Path, jobs: int,
               max_files: int | None, grammar: Path | None = None) -> list[FileResult]:
    files = corpus_files(corpus, sdists)[:max_files]
    ts = TreeSitter(language)
    cc = Compiler(language)
    includes = [str(resolve(i, sdists)) for i in corpus.includes]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        cc_ok = list(pool.map(lambda f: cc.accepts(f, includes, corpus.flags), files))
    chk = checker(language, grammar)
    out = []
    for f, c in zip(files, cc_ok, strict=True):
        text = f.read_text(encoding="utf-8", errors="replace")
        t0 = time.perf_counter()
        verdict = chk.completable([text]).value
        ms = (time.perf_counter() - t0) * 1e3
        out.append(FileResult(f, ts.accepts(text), c, verdict, ms))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--language", default="cpp", choices=["cpp", "c"])
    ap.add_argument("--sdists", type=Path, default=DEFAULT_SDISTS,
                    help="folder with the unpacked PyPI sdists (default: $HOLEFILL_CORPORA)")
    ap.add_argument("--corpus", nargs="*", help="only these corpora")
    ap.add_argument("--failures", action="store_true", help="list the refused files")
    ap.add_argument("--max-files", type=int)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write per-file results here")
    ap.add_argument("--grammar", type=Path, help="check with this grammar file instead")
    args = ap.parse_args(argv)

    corpora = C_CORPORA if args.language == "c" else CPP_CORPORA
    if args.corpus:
        corpora = tuple(c for c in corpora if c.name in args.corpus)
    if args.sdists is None and any(r.startswith("sdist:") for c in corpora for r in c.roots):
        ap.error("the PyPI corpora need their sdists: pass --sdists DIR or set "
                 "HOLEFILL_CORPORA (the docstring lists the packages and versions)")
    from holefill.grammar import format_stats

    chk = checker(args.language, args.grammar)
    print(format_stats(chk.compiled).splitlines()[1])
    head = (f"{'corpus':<16} {'version':<8} {'files':>5} {'ts':>5} {'cc':>5} {'both':>5} "
            f"{'hf':>5} {'share':>7} {'unk':>4} {'hf all':>6} {'med ms':>7} {'max ms':>7}")
    print(head)
    print("-" * len(head))
    dump = []
    totals = [0, 0]
    for corpus in corpora:
        res = run_corpus(corpus, args.language, args.sdists, args.jobs, args.max_files,
                         args.grammar)
        if not res:
            print(f"{corpus.name:<16} (no files: is {corpus.source} installed/unpacked?)")
            continue
        both = [r for r in res if r.ts and r.cc]
        hf = [r for r in both if r.verdict == "yes"]
        unk = sum(r.verdict == "unknown" for r in both)
        totals[0] += len(both)
        totals[1] += len(hf)
        ms = sorted(r.ms for r in res)
        share = f"{100 * len(hf) / len(both):6.1f}%" if both else "     -"
        print(f"{corpus.name:<16} {corpus.version:<8} {len(res):>5} "
              f"{sum(r.ts for r in res):>5} {sum(r.cc for r in res):>5} {len(both):>5} "
              f"{len(hf):>5} {share:>7} {unk:>4} {sum(r.verdict == 'yes' for r in res):>6} "
              f"{ms[len(ms) // 2]:7.1f} {ms[-1]:7.0f}")
        if args.failures:
            for r in both:
                if r.verdict != "yes":
                    text = r.path.read_text(encoding="utf-8", errors="replace")
                    line = longest_prefix(chk, text) if r.verdict == "no" else 0
                    bad = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) \
                        else ""
                    print(f"    {r.verdict:<7} {r.path}:{line}: {bad.strip()[:90]}")
        dump += [{"corpus": corpus.name, "path": str(r.path), "tree_sitter": r.ts,
                  "compiler": r.cc, "holefill": r.verdict, "ms": round(r.ms, 1)} for r in res]
    if totals[0]:
        print(f"{'all':<16} {'':<8} {'':>5} {'':>5} {'':>5} {totals[0]:>5} {totals[1]:>5} "
              f"{100 * totals[1] / totals[0]:6.1f}%")
    print("\nts: tree-sitter accepts; cc: the compiler accepts; both: both do; hf: holefill "
          "accepts of those; share = hf/both;\nunk: UNKNOWN (budget) among both; hf all: "
          "holefill accepts of all files; ms: one whole-file check.")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
