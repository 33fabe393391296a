"""The constrained loop with the worst proposer there is: a tiny random-weight model.

Validity is judged by oracles nobody here wrote: `ast.parse` for Python, tree-sitter-cpp for
C++. Unconstrained fillings of the same cuts are measured beside the constrained ones.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from holefill import Checker
from holefill.bench.oracles import cpp_ts_valid, json_valid
from holefill.bench.oracles import python_valid as parses
from holefill.datasets import (
    TREE_SITTER_REJECTS_CPP,
    humaneval_cpp_programs,
    json_documents,
    python_cuts,
    span_cuts,
)
from holefill.errors import LanguageError, ModelError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from holefill.decode import Cancelled, Completer, NotCompletable  # noqa: E402

FAST = dict(max_new_tokens=10, top_k=4)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def completer(tiny_model_dir: Path) -> Completer:
    torch.set_num_threads(1)
    return Completer(model=tiny_model_dir, device="cpu", threads=1)




def _python_sample() -> list:
    return [*python_cuts("span", 8, seed=11, max_lines=150),
            *python_cuts("boundary", 4, seed=11, max_lines=150),
            *python_cuts("line", 3, seed=11, max_lines=150),
            *python_cuts("span", 4, seed=12, holes=2, max_lines=150),
            *python_cuts("span", 3, seed=13, holes=3, max_lines=150)]


def test_constrained_python_fills_parse_with_a_random_model(completer: Completer) -> None:
    """Every cut whose removed text keeps the reading of the text around it gets a valid
    fill; the others may be refused as not completable (their only repairs would turn fixed
    text into string or comment content), never filled invalidly."""
    constrained_ok, free_ok, cuts = 0, 0, _python_sample()
    checker = Checker.for_language("python")
    for c in cuts:
        try:
            res = completer.fill(c.chunks, "python", **FAST)
        except NotCompletable:
            assert not checker.keeps_place(c.chunks, c.middles), c.name
            continue
        assert len(res.fills) == len(c.chunks) - 1
        assert parses(c.filled(res.fills)), (c.name, res.fills, res.holes)
        constrained_ok += 1
        free = completer.fill(c.chunks, "python", constrained=False, **FAST)
        free_ok += parses(c.filled(free.fills))
    print(f"\npython: constrained {constrained_ok}/{len(cuts)} valid, "
          f"unconstrained {free_ok}/{len(cuts)}")


@pytest.mark.parametrize("holes", [1, 2, 3])
def test_constrained_cpp_fills_parse_with_a_random_model(completer, holes) -> None:
    programs = [p for p in humaneval_cpp_programs() if p[0] not in TREE_SITTER_REJECTS_CPP]
    cuts = list(span_cuts(programs[::23], holes, 1, seed=5))
    free_ok = 0
    # Cuts whose removed text changed the reading around it (one that splits `#include`
    # leaves `e<math.h>` to be read as code) have no filling that keeps the reading; the
    # check then finds the grammar's looser corners, which tree-sitter does not share.
    checker = Checker.for_language("cpp")
    cuts = [c for c in cuts if checker.keeps_place(c.chunks, c.middles)]
    for c in cuts:
        res = completer.fill(c.chunks, "cpp", **FAST)
        assert cpp_ts_valid(c.filled(res.fills)), (c.name, res.fills)
        free = completer.fill(c.chunks, "cpp", constrained=False, **FAST)
        free_ok += cpp_ts_valid(c.filled(free.fills))
    print(f"\ncpp {holes} hole(s): constrained {len(cuts)}/{len(cuts)}, "
          f"unconstrained {free_ok}/{len(cuts)}")


@pytest.mark.parametrize("holes", [1, 2])
def test_constrained_json_fills_parse_with_a_random_model(completer, holes) -> None:
    """JSON goes through its window (head 0, the rest of the containers as `,0`/`,"":0`) and
    the engine; json.loads judges."""
    checker = Checker.for_language("json")
    cuts = [c for c in span_cuts(json_documents(6, seed=4), holes, 1, seed=6)
            if checker.keeps_place(c.chunks, c.middles)]
    assert cuts
    for c in cuts:
        res = completer.fill(c.chunks, "json", **FAST)
        assert json_valid(c.filled(res.fills)), (c.name, res.fills)


def test_fills_in_the_middle_of_long_cpp_and_json_files_are_valid(completer) -> None:
    """Windows cut these files around the hole (a few hundred characters are checked)."""
    programs = [p for p in humaneval_cpp_programs() if p[0] not in TREE_SITTER_REJECTS_CPP]
    cpp = "".join(t if t.endswith("\n") else t + "\n" for _, t in programs[:40])
    at = cpp.index("return", len(cpp) // 2)
    res = completer.fill([cpp[:at], cpp[at + 6:]], "cpp", **FAST)
    assert cpp_ts_valid(cpp[:at] + res.fills[0] + cpp[at + 6:]), res.fills
    doc = "[" + ",\n".join(d for _, d in json_documents(40, seed=2)) + "]"
    at = doc.index(",", len(doc) // 2) + 1
    res = completer.fill([doc[:at], doc[at:]], "json", **FAST)
    assert json_valid(doc[:at] + res.fills[0] + doc[at:]), res.fills


def test_fill_reports_costs_and_never_emits_special_tokens(completer) -> None:
    chunks = ["def add(a, b):\n    return ", "\n\nprint(add(1, 2))\n"]
    res = completer.fill(chunks, "python", max_new_tokens=6, top_k=8)
    assert res.verified
    for key in ("tokens", "rejected", "checks", "model_s", "check_ms_median", "total_s"):
        assert key in res.stats, key
    assert res.stats["checks"] >= 1
    assert len(res.holes[0].check_ms) >= 1 and all(ms > 0 for ms in res.holes[0].check_ms)
    assert all("<fim_" not in f and "<|endoftext|>" not in f for f in res.fills)
    assert parses(res.text(chunks))


def test_sampling_is_reproducible_by_seed(completer) -> None:
    chunks = ["x = [1, 2", "]\n"]
    runs = [completer.fill(chunks, "python", temperature=1.0, seed=s, **FAST).fills
            for s in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert all(parses(chunks[0] + f[0] + chunks[1]) for f in runs)


def test_a_check_out_of_budget_accepts_and_the_whole_file_check_decides(completer) -> None:
    chunks = ["def f():\n    return ", "\n"]
    res = completer.fill(chunks, "python", max_check_steps=1, on_stuck="stop", **FAST)
    # UNKNOWN never rejects: the model's own choices go through as without the constraint
    assert res.fills == completer.fill(chunks, "python", constrained=False, **FAST).fills
    # and the final check of the filled file (holefill.check.final) says what they make
    assert res.verified == parses(chunks[0] + res.fills[0] + chunks[1])
    assert res.refused == (not res.verified)


def test_a_fill_the_whole_file_check_refuses_is_marked_refused_with_its_reason(
        completer) -> None:
    """An empty filling accepted by out-of-budget checks leaves `x = `: never verified."""
    res = completer.fill(["x = ", "\ny = 1\n"], "python", max_check_steps=1,
                         on_stuck="stop", max_new_tokens=0)
    assert (res.fills, res.verified, res.refused) == ([""], False, True)
    assert res.reason is not None and "CPython refuses line 1" in res.reason


def test_outside_text_that_no_filling_repairs_is_an_error(completer) -> None:
    with pytest.raises(NotCompletable, match="syntax error"):
        completer.fill(["x = = 1\n", "\n"], "python", **FAST)


def test_unknown_language_is_named(completer) -> None:
    with pytest.raises(LanguageError, match="cobol.*python"):
        completer.fill(["a", "b"], "cobol")


def test_cancel_stops_within_one_token(completer) -> None:
    stop = threading.Event()
    session = completer._session
    seen: list[int] = []

    def progress(frac: float, message: str) -> None:
        if "2 tokens" in message:
            seen.append(session.forward_tokens)
            stop.set()

    with pytest.raises(Cancelled):
        completer.fill(["def f():\n    return ", "\n"], "python", constrained=False,
                       max_new_tokens=50, cancel=stop, progress=progress)
    assert seen and session.forward_tokens <= seen[0] + 1


def test_token_healing_regenerates_the_word_the_cursor_is_in(completer) -> None:
    from holefill.decode.prompt import build_prompt

    backend = completer.backend
    before = "def add(a, b):\n    retu"
    prompt = build_prompt(backend, before, "\n", budget=200, heal=True)
    assert prompt.heal and before.endswith(prompt.heal)
    res = completer.fill([before, "\n"], "python", **FAST)
    assert parses(before + res.fills[0] + "\n")


def test_long_files_are_cut_around_the_hole(completer) -> None:
    from holefill.decode.prompt import build_prompt

    before = "".join(f"x{i} = {i}\n" for i in range(3000)) + "y = "
    after = "\n" + "".join(f"z{i} = {i}\n" for i in range(3000))
    prompt = build_prompt(completer.backend, before, after, budget=100, heal=False)
    assert prompt.truncated and len(prompt.ids) <= 100
    text = completer.backend.decode(prompt.ids)
    assert "y = " in text and "x2999 = 2999" in text and "z0 = 0" in text
    res = completer.fill([before, after], "python", max_prompt_tokens=100, **FAST)
    assert parses(before + res.fills[0] + after)


def test_kv_cache_reuses_the_shared_prompt_prefix(completer) -> None:
    session = completer.backend.session()
    ids = completer.backend.encode("def f(x):\n    return x + 1\n" * 3)
    first = session.prefill(ids)
    before = session.forward_tokens
    again = session.prefill(ids)
    assert session.forward_tokens - before == 1  # only the last token re-runs
    assert torch.allclose(first, again, atol=1e-5)
    longer = session.prefill(ids + ids[:3])
    assert session.forward_tokens - before == 4
    fresh = completer.backend.session().prefill(ids + ids[:3])
    assert torch.allclose(longer, fresh, atol=1e-4)


def test_partial_utf8_bytes_are_held_until_the_character_completes(completer) -> None:
    from holefill.decode.backend import Detokenizer

    backend = completer.backend
    ids = backend.encode("😀")
    assert len(ids) > 1  # a 600-token byte-level vocabulary splits the emoji into bytes
    detok = Detokenizer(backend, backend.encode("x = '"))
    out = [detok.push(i) for i in ids]
    assert out[:-1] == [""] * (len(ids) - 1) and out[-1] == "😀"
    assert not detok.holding


def test_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        Completer(model=tmp_path / "nope", device="cpu")
    with pytest.raises(ModelError, match="not in the local Hugging Face cache"):
        Completer(model="nobody/no-such-model", device="cpu")


def test_model_without_fim_tokens_is_refused(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(["def f(x): return x\n"] * 10, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>").save_pretrained(
        str(tmp_path))
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(ModelError, match="fill-in-the-middle"):
        Completer(model=tmp_path, device="cpu")


def test_only_the_asked_holes_are_filled_and_the_others_stay_open(completer) -> None:
    from holefill import Checker

    chunks = ["def f(a):\n    x = (", "\n    return x\n\ndef g(b):\n    return ", "\n"]
    res = completer.fill(chunks, "python", only=[1], **FAST)
    assert len(res.fills) == 1
    rest = [chunks[0], chunks[1] + res.fills[0] + chunks[2]]
    assert Checker.for_language("python").completable(rest)


def test_a_filling_stays_in_its_block_when_asked(completer) -> None:
    chunks = ["def f(a):\n    if a:\n        ", "\n    return a\n"]
    res = completer.fill(chunks, "python", block_indent=8, max_new_tokens=30, top_k=4)
    lines = res.fills[0].split("\n")
    assert all(not ln.strip() or len(ln) - len(ln.lstrip()) >= 8 for ln in lines[1:])
    assert parses(chunks[0] + res.fills[0] + chunks[1])


def test_closers_the_editor_inserted_are_replaced_not_duplicated(completer) -> None:
    from holefill.decode.loop import HoleState

    state = HoleState(["print("], [")\n"])
    assert state.closed("1)", drop=1) == ["print(1)\n"]
    res = completer.fill(["print(", ")\n"], "python", replaceable=")", **FAST)
    fill, replaced = res.fills[0], res.holes[0].replaced
    assert replaced in (0, 1)
    assert parses("print(" + fill + ")\n"[replaced:])


def test_a_model_in_the_local_hugging_face_cache_loads_by_id(tiny_model_dir, tmp_path,
                                                             monkeypatch) -> None:
    import shutil

    snap = tmp_path / "hub" / "models--someone--tiny-fim" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_model_dir, snap)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    comp = Completer(model="someone/tiny-fim", device="cpu", threads=1)
    assert comp.backend.source == "hf-cache" and comp.backend.path == snap
    res = comp.fill(["x = [1, ", "]\n"], "python", **FAST)
    assert parses("x = [1, " + res.fills[0] + "]\n")


def test_best_stop_cuts_where_closing_is_allowed(completer) -> None:
    chunks = ["def f(a):\n    return (a +", "\n"]
    res = completer.fill(chunks, "python", on_stuck="best-stop", **FAST)
    assert parses(chunks[0] + res.fills[0] + chunks[1])
    assert res.holes[0].completed_by in ("model", "best-stop", "witness")


def test_device_and_dtype_defaults_and_errors() -> None:
    from holefill.decode.backend import choose_device, choose_dtype

    assert choose_dtype("auto", "cpu") == torch.float32
    assert choose_dtype("bf16", "cpu") == torch.bfloat16
    with pytest.raises(ModelError, match="unknown dtype"):
        choose_dtype("int3", "cpu")
    assert choose_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        assert choose_device("auto") in ("cpu", "mps")
        with pytest.raises(ModelError, match="no CUDA GPU"):
            choose_device("cuda")


def test_typing_along_reuses_the_engine_of_the_previous_request(completer) -> None:
    """Two requests at the same place, the second after the user typed on: the incremental
    engine (its parse of the text before the cursor, its closure of the text after) is kept
    and re-reads only what changed."""
    src = "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
    at = src.index("        total += x")
    completer._engines.clear()
    first = completer.fill([src[:at], src[at:]], "python", **FAST)
    assert len(completer._engines) == 1
    engine = next(iter(completer._engines.values()))
    second = completer.fill([src[:at] + "        count", src[at:]], "python", **FAST)
    assert list(completer._engines.values()) == [engine]
    for chunks, res in (([src[:at], src[at:]], first),
                        ([src[:at] + "        count", src[at:]], second)):
        assert parses(res.text(chunks))


@pytest.mark.parametrize(("text", "cut"), [
    ("x = 1\n    y = f(x)\n    y = f(x)\n    ", "x = 1\n    y = f(x)"),
    ("a = g(" + "0, " * 12, "a = g(0, "),
    ("foo(a)\nbar(b)\n", None),
    ("    )\n    )\n", None),  # closing lines repeat in real code
    ("t = [0, 0, 0, 0]\n", None),
    ('d = {"a": ' + '"max": "max", ' * 4, 'd = {"a": "max": "max", '),
    ('d = {"a": ' + '"max": "max", ' * 3, None),  # a longer piece: four copies
])
def test_repetition_guard_cuts_where_the_model_starts_copying_itself(text, cut) -> None:
    from holefill.decode.loop import repetition_cut

    got = repetition_cut(text)
    assert (None if got is None else text[:got]) == cut


@pytest.mark.parametrize(("body", "start", "right", "at"), [
    ("n}", 1, "}\n", 1),             # `"count": n}` before the user's `}`
    ("f(x))", 4, ")\n", 4),          # its own `(` closed first, then the outer one
    ("x\n}", 2, "\n}\n", 2),         # the block's `}` on the next line of the right context
    ("s}", 0, "}", 1),                # inside the token: the cut keeps `s`
    ("n]", 1, "}\n", None),           # another closer than the right context's
    ("n}", 1, "  x}", None),           # the right context does not begin with a closer
    ("a) + b)", 6, ")", None),         # the body closed an outer bracket before this token
    ("'}'}", 3, "}", 3),               # a quoted closer is not one
    ("g(}", 2, "}", None),             # `}` inside the body's own `(`
])
def test_a_closer_the_text_after_the_hole_already_writes_ends_the_filling(
        body, start, right, at) -> None:
    from holefill.decode.loop import right_closer_echo

    assert right_closer_echo(body, start, right) == at


def test_the_readme_example_keeps_the_users_closing_brace_to_its_dict() -> None:
    """The bundled model once wrote `radients} ; {` at `"count": <|hole|>}` (valid: the
    user's `}` then closed a new empty dict). Its filling stops before re-closing what the
    user's `}` closes (or before it repeats itself), with the model's own text."""
    chunks = (ROOT / "examples" / "holes.py").read_text().split("<|hole|>")
    res = Completer(device="cpu", threads=1).fill(chunks, "python", keep_to_place=True)
    assert parses(res.text(chunks))
    fill = res.fills[1]
    assert fill.count("{") == fill.count("}") and "}" not in fill.replace("{}", "")
    assert res.holes[1].ended_by in ("closer", "end", "repetition")
    assert res.holes[1].completed_by == "model"


def test_a_suggestion_at_a_line_end_stops_at_a_blank_line(completer) -> None:
    """With stop_at_blank_line (inline suggestions at a line end), a filling that wrote a
    blank line after a complete statement ends there instead of running to max tokens."""
    chunks = ["def f(x):\n    return x\n", "\n"]
    res = completer.fill(chunks, "python", max_new_tokens=40, stop_at_blank_line=True,
                         temperature=1.0, seed=5, top_k=8)
    hole = res.holes[0]
    if hole.ended_by == "blank-line":  # cut after the statement's line break
        assert res.fills[0].endswith("\n") and parses(res.text(chunks))
    assert hole.ended_by != "blank-line" or not _BLANKS.search(res.fills[0][:-1])


_BLANKS = __import__("re").compile(r"\n[ \t]*\n")


SPREAD = ["def f(x):\n    y = x\n    return ", "\n    z = 1\n\n\ndef g(y):\n    z = ",
          "\n    return z\n\n\nclass C:\n    a = ", "\n    b = 2\n"]


def test_holes_in_different_definitions_are_checked_by_segment(completer) -> None:
    """Each hole's checks look at its own definition only, and the filled document is still
    valid with its fixed text kept (the segments' soundness, end to end)."""
    from holefill.check.checker import Checker
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    parts = request_checks(Checker.for_language("python"), SPREAD, DecodeSettings())
    assert [list(seg.holes) for seg, _ in parts] == [[0], [1], [2]]
    for segmented in (True, False):
        res = completer.fill(SPREAD, "python", max_new_tokens=12, segmented=segmented)
        text = res.text(SPREAD)
        assert parses(text), (segmented, res.fills)
        assert Checker.for_language("python").keeps_reading(SPREAD, res.fills)


def test_checks_out_of_budget_twice_in_a_row_are_not_run_again_until_a_hole_closes() -> None:
    from holefill.check.checker import Checker, Verdict
    from holefill.check.window import Window
    from holefill.decode.loop import GIVE_UP_AFTER, Constraint

    constraint = Constraint(Checker.for_language("python"), Window(), 1, None)
    state = ["x = ", "\ny = ", "\n"]
    got = [constraint.verdict(state, [], incremental=False) for _ in range(GIVE_UP_AFTER + 2)]
    assert got == [Verdict.UNKNOWN] * len(got)
    assert len(constraint.times_ms) == GIVE_UP_AFTER and constraint.skipped == 2
    constraint.verdict(["x = 1\ny = ", "\n"], [], incremental=False)  # a hole closed
    assert len(constraint.times_ms) == GIVE_UP_AFTER + 1


def test_fill_holes_keeps_each_hole_to_its_place(completer) -> None:
    """`keep_to_place` (the editor's Fill holes and the CLI): a hole at a line end in a loop's
    body stays in that body, a hole with fixed text after it on its line stays on the line,
    whatever the model would rather write."""
    chunks = ["def mean(xs):\n    total = 0\n    for x in xs:\n        total += ",
              "\n    return total / len(xs)\n\n\ndef describe(xs):\n"
              "    return {\"mean\": mean(xs), \"count\": ", "}\n"]
    for seed in range(3):
        res = completer.fill(chunks, "python", keep_to_place=True, stop_at_blank_line=True,
                             max_new_tokens=40, seed=seed, temperature=1.0)
        assert parses(res.text(chunks)), res.fills
        body, line = res.fills
        if res.holes[0].completed_by == "model":
            assert all(len(x) - len(x.lstrip()) >= 8 for x in body.split("\n")[1:]
                       if x.strip()), body
        if res.holes[1].completed_by == "model":
            assert "\n" not in line, line
