"""The document model: LSP positions in three encodings, incremental and whole-document
changes against plain-string oracles, the incrementally reparsed tree against a fresh parse,
and edit sites carried through later changes.

Data: small texts with emoji (astral plane), CJK and mixed line breaks written here, and
`textwrap.py` from the running interpreter's standard library.
"""

from __future__ import annotations

import random
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from holefill.datasets import random_spans
from holefill.lsp.documents import (
    Document,
    DocumentStore,
    EditSite,
    LineIndex,
    PositionError,
    UnknownDocumentError,
    diff_replacements,
)

ENCODINGS = ("utf-16", "utf-8", "utf-32")
MIXED = "a😀b\r\n中文x\rz\n\n末😀"
STDLIB_TEXT = Path(textwrap.__file__).read_text(encoding="utf-8")

# Pieces that stress positions (astral, CJK, every line break) and trees (brackets, quotes,
# indentation).
PIECES = ["x", "é", "中", "😀", "\n", "\r\n", "\r", " ", "    ", "(", ")", "[", "]", "{", "}",
          ":", ",", "'", '"', '"""', "#", "def ", "if ", "return ", "1", "=", "\\"]
SEEDS = {
    "python": "def f(x):\n    s = '中😀'\n    return [x,\n            s]\r\n\nclass C:\n    pass\n",
    "cpp": "int main() {\n  const char *s = \"中😀\";\n  return f(1, 2);\n}\n",
    "json": '{"a": [1, 2.5, "中😀"],\n "b": {"c": null}}\n',
    "plaintext": "no grammar 中😀\r\nsecond line\n",
}


# --- oracles written independently of the code under test ---------------------------------


def oracle_position(text: str, offset: int, encoding: str) -> tuple[int, int]:
    """Brute force: count line breaks before the offset, encode the rest of the line."""
    head = text[:offset]
    breaks = list(re.finditer(r"\r\n|\r|\n", head))
    line_start = breaks[-1].end() if breaks else 0
    rest = head[line_start:]
    if encoding == "utf-32":
        col = len(rest)
    elif encoding == "utf-8":
        col = len(rest.encode("utf-8"))
    else:
        col = len(rest.encode("utf-16-le")) // 2
    return len(breaks), col


def inside_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def oracle_range(text: str, a: int, b: int, encoding: str) -> types.Range:
    (l1, c1), (l2, c2) = oracle_position(text, a, encoding), oracle_position(text, b, encoding)
    return types.Range(types.Position(line=l1, character=c1), types.Position(line=l2, character=c2))


def fresh_sexp(language: str, text: str) -> str:
    tree = Document("file:///fresh", language, 0, text).tree
    return str(tree.root_node) if tree is not None else ""


texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


# --- positions ------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positions_round_trip_and_match_brute_force(encoding):
    """Every offset (but the middle of a CRLF) goes to the brute-force position and back,
    for emoji, CJK, CRLF, lone CR and a trailing empty line (MIXED)."""
    index = LineIndex(MIXED)
    assert index.line_count == 5
    for offset in range(len(MIXED) + 1):
        if inside_crlf(MIXED, offset):
            continue
        line, col = index.position_of(offset, encoding)
        assert (line, col) == oracle_position(MIXED, offset, encoding)
        assert index.offset_of(line, col, encoding, strict=True) == offset


def test_units_per_encoding():
    """'b' after one emoji: column 1+2 in UTF-16, 1+4 in UTF-8, 1+1 in UTF-32."""
    doc = Document("file:///m", "plaintext", 1, MIXED)
    b = MIXED.index("b")
    for encoding, col in (("utf-16", 3), ("utf-8", 5), ("utf-32", 2)):
        doc.encoding = encoding
        assert doc.position_at(b) == types.Position(line=0, character=col)
    doc.encoding = "utf-16"
    x = MIXED.index("x")
    assert doc.offset_at(types.Position(line=1, character=2)) == x


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=texts, encoding=st.sampled_from(ENCODINGS))
def test_positions_random_texts(text, encoding):
    """Random texts of emoji, CJK and line breaks: positions match brute force and round-trip."""
    index = LineIndex(text)
    for offset in range(len(text) + 1):
        if not inside_crlf(text, offset):
            pos = index.position_of(offset, encoding)
            assert pos == oracle_position(text, offset, encoding)
            assert index.offset_of(*pos, encoding) == offset


def test_clamping_like_lsp():
    """Past a line's end: the line's end; past the last line: the document's end; inside a
    surrogate pair or a UTF-8 sequence: the character's start."""
    index = LineIndex(MIXED)
    line1_end = MIXED.index("\r", 3)  # the '\r' of the first CRLF
    assert index.offset_of(0, 99) == line1_end
    assert index.offset_of(99, 0) == len(MIXED)
    assert index.offset_of(-1, -5) == 0
    emoji = MIXED.index("😀")
    assert index.offset_of(0, 2, "utf-16") == emoji  # between the surrogates
    assert index.offset_of(0, 3, "utf-8") == emoji  # inside the 4-byte sequence
    assert index.offset_of(2, 5) == MIXED.index("z") + 1  # line 2 is "z", after a lone CR


@pytest.mark.parametrize(
    ("line", "col", "encoding", "why"),
    [
        (5, 0, "utf-16", "past the last line"),
        (0, 5, "utf-16", "past the end of its line"),
        (0, 2, "utf-16", "inside a character"),
        (0, 2, "utf-8", "inside a character"),
        (-1, 0, "utf-32", "negative"),
    ],
)
def test_strict_reports_out_of_range(line, col, encoding, why):
    """Strict conversions name what is wrong instead of clamping."""
    with pytest.raises(PositionError, match=why):
        LineIndex(MIXED).offset_of(line, col, encoding, strict=True)


def test_strict_accepts_line_ends_and_the_empty_last_line():
    index = LineIndex("ab\n")
    assert index.offset_of(0, 2, strict=True) == 2
    assert index.offset_of(1, 0, strict=True) == 3


def test_encoding_accepts_lsprotocol_kinds():
    store = DocumentStore(encoding=types.PositionEncodingKind.Utf8)
    assert store.open("file:///a", "plaintext", 1, "é").encoding == "utf-8"
    with pytest.raises(ValueError, match="unknown position encoding"):
        DocumentStore(encoding="utf-7")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=texts, insert=texts, data=st.data())
def test_line_index_splice_equals_rebuild(text, insert, data):
    """Updating line starts for one replacement gives the starts of a fresh scan, including
    CR/LF pairs that the replacement joins or splits."""
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    new = text[:a] + insert + text[b:]
    assert LineIndex(text).replaced(new, a, b, len(insert)).starts == LineIndex(new).starts


# --- incremental changes --------------------------------------------------------------------


@pytest.mark.parametrize("language", sorted(SEEDS))
@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_random_ranged_edits_match_a_plain_string(language, data):
    """A random sequence of ranged LSP changes (UTF-16 ranges from the brute-force oracle)
    gives the same text as applying them to a plain string, and the incrementally reparsed
    tree prints like a fresh parse of the final text."""
    text = SEEDS[language]
    doc = Document("file:///t", language, 0, text)
    for version in range(1, data.draw(st.integers(1, 12)) + 1):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, min(len(text), a + 12)))
        if inside_crlf(text, a) or inside_crlf(text, b):
            continue  # no LSP position lies there
        insert = data.draw(texts)
        doc.apply_change(oracle_range(text, a, b, "utf-16"), insert, version)
        text = text[:a] + insert + text[b:]
        assert doc.text == text
        assert doc.version == version
    if doc.tree is not None:
        assert str(doc.tree.root_node) == fresh_sexp(language, text)
        assert doc.source == text.encode("utf-8")
    else:
        assert language == "plaintext"


def test_edit_then_undo_gives_back_the_tree():
    """A seeded random edit followed by its undo restores text and tree (seed printed)."""
    seed = 20240611
    print("seed", seed)
    rng = random.Random(seed)
    doc = Document("file:///s", "python", 0, STDLIB_TEXT)
    before = str(doc.tree.root_node)
    for version in range(1, 41, 2):
        a = rng.randrange(len(doc.text))
        b = min(len(doc.text), a + rng.randint(0, 30))
        removed, piece = doc.text[a:b], rng.choice(PIECES)
        doc.replace_span(a, b, piece, version)
        doc.replace_span(a, a + len(piece), removed, version + 1)
        assert doc.text == STDLIB_TEXT
        assert str(doc.tree.root_node) == before


# --- edit sites -----------------------------------------------------------------------------


def test_sites_shift_collapse_and_merge():
    """Insertion before a site shifts it; deletion over it collapses it to the deletion
    point; typing next to a site grows it; newest first."""
    doc = Document("file:///e", "plaintext", 0, "0123456789")
    doc.replace_span(5, 5, "ab", 1)  # "01234ab56789"
    assert doc.edit_sites == (EditSite(5, 7),)
    doc.replace_span(1, 1, "XYZ", 2)  # "0XYZ1234ab56789"
    assert doc.edit_sites == (EditSite(1, 4), EditSite(8, 10))
    doc.replace_span(10, 10, "c", 3)  # typing on after "ab"
    assert doc.edit_sites == (EditSite(8, 11), EditSite(1, 4))
    doc.replace_span(7, 12, "", 4)  # deletes "4abc5"
    assert doc.edit_sites == (EditSite(7, 7), EditSite(1, 4))
    assert doc.text == "0XYZ123" + "6789"


def test_sites_keep_the_newest_distinct_ones():
    """Ten insertions, each before the previous ones (which move right by one each time):
    the four newest remain, newest first."""
    doc = Document("file:///e", "plaintext", 0, "x" * 100, max_sites=4)
    for i in range(10):
        doc.replace_span(90 - 10 * i, 90 - 10 * i, "!", i + 1)
    assert [s.start for s in doc.edit_sites] == [0, 11, 22, 33]
    assert all(doc.text[s.start] == "!" for s in doc.edit_sites)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=st.data())
def test_sites_follow_their_text(data):
    """Unique sentinels inserted one by one, with random edits that keep at least one character
    away from every sentinel in between: each sentinel still lies inside a site (its own, or
    one it merged with when inserted next to an earlier edit), and sites stay in the text."""
    text = "abcdefghij" * 4
    doc = Document("file:///e", "plaintext", 0, text, max_sites=1000)
    version = 0
    for k in range(data.draw(st.integers(1, 5))):
        pos = data.draw(st.integers(0, len(doc.text)))
        if _near_sentinel(doc.text, pos, pos, k):
            continue
        version += 1
        doc.replace_span(pos, pos, f"<{k}>", version)
        for _ in range(data.draw(st.integers(0, 4))):
            a = data.draw(st.integers(0, len(doc.text)))
            b = data.draw(st.integers(a, min(len(doc.text), a + 6)))
            if not _near_sentinel(doc.text, a, b, k + 1):
                version += 1
                doc.replace_span(a, b, data.draw(st.sampled_from(["", "x", "yy\n"])), version)
    assert all(0 <= s.start <= s.end <= len(doc.text) for s in doc.edit_sites)
    for k in range(5):
        at = doc.text.find(f"<{k}>")
        if at >= 0:
            assert any(s.start <= at and at + 3 <= s.end for s in doc.edit_sites)


def _near_sentinel(text: str, a: int, b: int, count: int) -> bool:
    for k in range(count):
        at = text.find(f"<{k}>")
        if at >= 0 and a <= at + len(f"<{k}>") and at <= b:
            return True
    return False


# --- whole-document changes -----------------------------------------------------------------


def deletions(text: str, spans: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        pos = b
    return "".join(out) + text[pos:]


def site_explains(old_without_others: str, new: str, site: int, length: int) -> bool:
    """A site explains a deletion of `length` characters if putting back `length` characters
    of the old text there gives the old text (repeated text makes the place ambiguous)."""
    return (old_without_others[:site] == new[:site]
            and old_without_others[site + length :] == new[site:])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_whole_document_change_finds_each_deletion(k):
    """textwrap.py with k separate spans deleted, sent as one whole-document change: the diff
    gives one empty site per deletion, at the deletion (or an equivalent place), and the tree
    equals a fresh parse."""
    rng = random.Random(f"whole:{k}")
    for _ in range(10):
        spans = random_spans(STDLIB_TEXT, k, rng, 1, 100)
        assert spans is not None
        if any(b + 5 > a for (_, b), (a, _) in zip(spans, spans[1:], strict=False)):
            continue  # deletions a few characters apart are one edit to a diff
        new = deletions(STDLIB_TEXT, spans)
        doc = Document("file:///w", "python", 0, STDLIB_TEXT)
        doc.apply_change(None, new, 1)
        assert doc.text == new
        assert str(doc.tree.root_node) == fresh_sexp("python", new)
        sites = [s.start for s in doc.edit_sites if s.start == s.end]
        for a, b in spans:
            others = deletions(STDLIB_TEXT, [s for s in spans if s != (a, b)])
            assert any(site_explains(others, new, s, b - a) for s in sites), (a, b)
        assert len(doc.edit_sites) <= k


def test_whole_document_change_sites_cover_inserted_text():
    old = "alpha\nbeta\ngamma\n"
    new = "alpha\nbeta = (1,\n        2)\ngamma\nextra\n"
    doc = Document("file:///w", "python", 0, old)
    doc.apply_change(None, new, 1)
    inserted = [new[s.start : s.end] for s in doc.edit_sites]
    assert sorted(inserted) == [" = (1,\n        2)", "extra\n"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(old=texts, new=texts)
def test_diff_replacements_rebuild_the_new_text(old, new):
    """Replacements are sorted, disjoint, and turn the old text into the new one."""
    out, pos = [], 0
    for rep in diff_replacements(old, new):
        assert pos <= rep.start <= rep.end
        out += [old[pos : rep.start], rep.text]
        pos = rep.end
    assert "".join(out) + old[pos:] == new


# --- the store ------------------------------------------------------------------------------


def test_store_open_change_close():
    """didOpen / didChange (ranged and whole) / didClose, and a clear error for unknown URIs."""
    store = DocumentStore()
    doc = store.open("file:///a.py", "python", 1, "x = 1\n")
    assert store.get("file:///a.py") is doc and "file:///a.py" in store and len(store) == 1
    store.change("file:///a.py", 2, [
        types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line=0, character=4),
                              types.Position(line=0, character=5)),
            text="(2 +",
        ),
        types.TextDocumentContentChangeWholeDocument(text="x = (2 + 3)\n"),
    ])
    assert doc.text == "x = (2 + 3)\n" and doc.version == 2
    assert not doc.tree.root_node.has_error
    store.close("file:///a.py")
    for call in (store.get, store.close):
        with pytest.raises(UnknownDocumentError, match="file:///a.py"):
            call("file:///a.py")
    with pytest.raises(UnknownDocumentError):
        store.change("file:///b.py", 1, [])


def test_documents_without_a_grammar_still_track_text_and_sites():
    doc = Document("file:///n.txt", "plaintext", 0, "hello\n")
    assert doc.tree is None
    doc.apply_change(types.Range(types.Position(line=0, character=5),
                                 types.Position(line=0, character=5)), " world", 1)
    assert doc.text == "hello world\n" and doc.edit_sites == (EditSite(5, 11),)
