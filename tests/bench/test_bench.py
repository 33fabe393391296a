"""`holefill bench --quick` end to end on a tiny sample, and the suite's pure parts.

The end-to-end run uses the random-weight model of tests/conftest.py: the worst proposer
there is, so the constrained mode with witness completion must still give 100% valid files.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from holefill.bench.baselines import llguidance_python_grammar
from holefill.bench.metrics import percentile
from holefill.bench.modes import checked_fills
from holefill.bench.oracles import python_valid
from holefill.bench.scaling import build_file
from holefill.cli import main
from holefill.datasets import Cut
from holefill.languages import get_language

PNG = b"\x89PNG\r\n\x1a\n"
PRIMARY = {"python": "ast.parse", "cpp": "tree-sitter", "json": "json.loads"}


@pytest.fixture(scope="module")
def quick_run(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    code = main(["bench", "--quick", "--limit", "1", "--model", str(tiny_model_dir),
                 "--device", "cpu", "--threads", "1", "--max-new-tokens", "6",
                 "--max-lines", "40", "--sizes", "100", "--output", str(out)])
    assert code == 0
    return out


def test_quick_run_writes_the_report_the_results_and_the_plots(quick_run: Path) -> None:
    report = (quick_run / "report.md").read_text(encoding="utf-8")
    for heading in ("## Setup", "## Summary", "## Results per language", "### python",
                    "### cpp", "### json", "## Results per group", "## Scaling",
                    "## Baselines", "## Definitions"):
        assert heading in report
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    assert set(results["plots"]) == {"scaling_file_size", "scaling_holes", "validity",
                                     "time_per_token", "pass_at_1"}
    assert "## Functional correctness: pass@1" in report
    assert "### Published figures of other FIM models" in report
    for name in results["plots"].values():
        assert (quick_run / name).read_bytes().startswith(PNG)
        assert f"]({name})" in report


def test_constrained_with_witness_is_always_valid_and_the_oracles_accept_the_originals(
        quick_run: Path) -> None:
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    rows = {(r["key"], r["mode"]): r for r in results["by_language"]}
    assert {lang for lang, _ in rows} == {"python", "cpp", "json"}
    for lang, oracle in PRIMARY.items():
        assert {m for k, m in rows if k == lang} == {"Ref.", "Van.", "Con.-", "Con.", "Con.p",
                                                     "Con.l", "Chk."}
        # a result the loop marks verified is valid; unverified ones are reported, and a
        # witness that fails its own re-check (python_layout rendering) makes one
        assert rows[lang, "Con."][f"valid {oracle} if verified"] in (100.0, None)
        assert rows[lang, "Ref."][f"valid {oracle}"] == 100.0
        assert rows[lang, "Con."]["errors"] == 0
        # the checked mode only ever shortens Van.'s fillings towards validity
        assert rows[lang, "Chk."][f"valid {oracle}"] >= rows[lang, "Van."][f"valid {oracle}"]
    for lang in ("cpp", "json"):
        assert rows[lang, "Con."][f"valid {PRIMARY[lang]}"] == 100.0
    if rows["cpp", "Ref."]["valid g++"] is not None:  # g++ installed
        assert rows["cpp", "Ref."]["valid g++"] == 100.0
        assert rows["cpp", "Ref."]["pass"] == 100.0


def test_quick_run_tests_every_humaneval_infilling_split_and_the_originals_pass(
        quick_run: Path) -> None:
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    groups = {(r["key"], r["mode"]): r for r in results["by_group"]}
    for split in ("single-line", "multi-line", "random-span", "random-span-light"):
        for mode in ("Ref.", "Van.", "Con.-", "Con.", "Con.p", "Chk."):
            assert groups[f"python {split}", mode]["pass"] is not None, (split, mode)
        assert groups[f"python {split}", "Ref."]["pass"] == 100.0
        assert groups[f"python {split}", "Con."]["valid ast.parse if verified"] in (100.0, None)
    assert set(results["paired_with_vanilla"]["Con."]) >= {"python single-line", "cpp span 1h"}
    assert "test sandbox" in results["environment"]


def test_constrained_fills_swallow_no_fixed_code_and_the_report_counts_them(
        quick_run: Path) -> None:
    """Issue 13: the bench reports fills that swallowed fixed code per mode, 0 for Con.
    (CPython's tokenize judges, Python samples only)."""
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    rows = {(r["key"], r["mode"]): r for r in results["by_language"]}
    assert rows["python", "Con."]["swallowed"] == 0
    assert rows["python", "Ref."]["swallowed"] == 0
    for mode in ("Van.", "Con.-", "Con.p", "Chk."):
        assert rows["python", mode]["swallowed"] is not None
    assert rows["cpp", "Con."]["swallowed"] is None  # not judged
    judged = [s for s in results["samples"] if s["language"] == "python" and not s["error"]]
    assert judged and all(s["swallowed"] is not None for s in judged)
    groups = {(r["key"], r["mode"]): r for r in results["by_group"]}
    for split in ("single-line", "multi-line", "random-span", "random-span-light"):
        assert groups[f"python {split}", "Con."]["swallowed"] == 0
    report = (quick_run / "report.md").read_text(encoding="utf-8")
    assert "| swallowed Con. |" in report and "| swallowed Con.p |" in report
    assert "Fills that swallowed fixed code, over all Python samples" in report


def test_scaling_replays_only_completable_states(quick_run: Path) -> None:
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    cells = results["scaling"]
    variants = {(c["variant"], c["holes"]) for c in cells}
    for want in [("whole", 1), ("window", 1), ("prefix", 1), ("whole", 3), ("window", 3),
                 ("ast.parse", 0), ("tree-sitter", 0)]:
        assert want in variants
    for c in cells:
        assert c["times_ms"], c["variant"]
        assert c["verdicts"].get("no", 0) == 0, c


def test_checked_fills_keep_the_longest_valid_prefix() -> None:
    c = Cut("t", ("x = [1, ", "]\n"), ("2",))
    assert checked_fills(c, ["2, 3"], python_valid).fills == ["2, 3"]
    assert checked_fills(c, ["2, 3)) junk"], python_valid).fills == ["2, 3"]
    assert checked_fills(c, ["))"], python_valid).fills == [""]


def test_checked_fills_with_several_holes_find_a_valid_combination() -> None:
    c = Cut("t", ("a = (", ")\nb = [", "]\n"), ("1", "2"))
    res = checked_fills(c, ["1 +", "2]]"], python_valid)
    assert python_valid(c.filled(res.fills))
    assert res.fills == ["1 ", "2"]  # longest prefixes: the space stays


def test_built_scaling_files_parse_and_have_about_the_asked_size() -> None:
    # files of <= 40 lines, as in the quick run above: the standard library is parsed once
    text = build_file(300, seed=0, max_file_lines=40)
    assert python_valid(text)
    assert 0.9 * 300 <= text.count("\n") <= 300


@pytest.mark.skipif(importlib.util.find_spec("llguidance") is None,
                    reason="llguidance not installed")
def test_layout_free_grammar_runs_in_llguidance_and_still_rejects_garbage() -> None:
    import llguidance

    from holefill.models import default_model_path

    tok = llguidance.LLTokenizer(str(default_model_path() / "tokenizer.json"))
    source = get_language("python").grammar_path.read_text(encoding="utf-8")
    grammar = llguidance.LLMatcher.grammar_from_lark(llguidance_python_grammar(source))
    assert llguidance.LLMatcher.validate_grammar(grammar, tok) == ""

    def accepts(text: str) -> bool:
        m = llguidance.LLMatcher(tok, grammar, log_level=0)
        return m.consume_tokens(tok.tokenize_str(text)) and m.is_accepting()

    assert accepts("# c\nif x:\n    y = [1,\n  2]\nelse:\n    pass\n")
    assert accepts("@d\nclass A(B):\n    def f(self): return f'{self!r}'\n")
    assert not accepts("def (:\n")
    assert not accepts("x = = 1\n")


def test_percentile_interpolates() -> None:
    xs = [float(i) for i in range(101)]
    random.Random(0).shuffle(xs)
    assert percentile(xs, 0.99) == 99.0
    assert percentile([5.0], 0.9) == 5.0


BLOCKED = """
import sys
sys.modules["matplotlib"] = None  # as if it were not installed: `import matplotlib` fails
from holefill.cli import main
sys.exit(main(["bench", "--quick", "--output", sys.argv[1]]))
"""


def test_bench_without_matplotlib_says_so_before_any_work(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-c", BLOCKED, str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "holefill bench needs matplotlib" in proc.stderr and "holefill[bench]" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()  # nothing was started


def test_constrained_fills_keep_the_users_brackets_in_every_language(quick_run: Path) -> None:
    """Issue 30: the bench counts fills that re-paired the user's brackets in every language
    (CPython's tokenize for Python, the language's reading for C++ and JSON) and fills that
    moved a fixed Python line to another block; Con. re-pairs none where it verified."""
    results = json.loads((quick_run / "results.json").read_text(encoding="utf-8"))
    rows = {(r["key"], r["mode"]): r for r in results["by_language"]}
    for lang in ("python", "cpp", "json"):
        for mode in ("Van.", "Con.", "Con.l"):
            assert rows[lang, mode]["repaired"] is not None, (lang, mode)
    assert rows["python", "Con."]["moved"] is not None
    verified = [s for s in results["samples"] if s["mode"] == "Con." and s["verified"]]
    assert verified and not any(s["repaired"] for s in verified)
    report = (quick_run / "report.md").read_text(encoding="utf-8")
    assert "cpp: fills that re-paired the user's brackets" in report
