"""A source file read and written back changes nothing outside the holes.

Data: byte strings written to tmp_path: CRLF, mixed and old-Mac line breaks, PEP 263 coding
lines, a UTF-8 byte-order mark, files without a final line break, undecodable bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from holefill.errors import HolefillError
from holefill.sourcefile import read_source


def roundtrip(tmp_path: Path, raw: bytes, language: str = "python",
              fill: str = "a\nb") -> tuple[bytes, str]:
    f = tmp_path / "f"
    f.write_bytes(raw)
    src = read_source(f, language)
    chunks = src.text.split("<|hole|>")
    assert src.plain.split("<|hole|>") == [c.replace("\r\n", "\n").replace("\r", "\n")
                                           for c in chunks]
    return src.encode(src.filled(chunks, [fill] * (len(chunks) - 1))), src.encoding


@pytest.mark.parametrize(("raw", "newline"), [
    (b"x = 1\r\ny = <|hole|>\r\nz = 2", b"\r\n"),  # CRLF, no final line break
    (b"x = 1\ny = <|hole|>\r\nz\n", b"\n"),  # mixed: fills take the first break
    (b"x = 1\ry = <|hole|>\r", b"\r"),
    (b"<|hole|>", b"\n"),
])
def test_bytes_outside_the_holes_come_back_and_fills_take_the_files_line_break(
        tmp_path: Path, raw: bytes, newline: bytes) -> None:
    out, _ = roundtrip(tmp_path, raw)
    assert out == raw.replace(b"<|hole|>", b"a" + newline + b"b")


@pytest.mark.parametrize(("raw", "encoding"), [
    (b"# -*- coding: latin-1 -*-\ns = '\xe9<|hole|>'\n", "iso-8859-1"),
    (b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '\x80<|hole|>'\n", "cp1252"),
    (b"\xef\xbb\xbfs = '\xc3\xa9<|hole|>'\n", "utf-8-sig"),
    (b"s = '\xc3\xa9<|hole|>'\n", "utf-8"),
])
def test_python_files_are_read_in_their_declared_encoding(tmp_path: Path, raw: bytes,
                                                          encoding: str) -> None:
    out, got = roundtrip(tmp_path, raw, fill="\u00e9")
    assert got == encoding
    assert out == raw.replace(b"<|hole|>", "\u00e9".encode(encoding.replace("-sig", "")))


def test_other_languages_are_utf8_with_an_optional_bom(tmp_path: Path) -> None:
    out, got = roundtrip(tmp_path, b"\xef\xbb\xbf[<|hole|>]\r\n", "json", fill="1")
    assert (out, got) == (b"\xef\xbb\xbf[1]\r\n", "utf-8-sig")
    # a coding line means nothing outside Python
    out, got = roundtrip(tmp_path, b"// coding: latin-1\nint x = <|hole|>;\n", "cpp", fill="1")
    assert got == "utf-8"


def test_a_fill_the_encoding_cannot_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HolefillError, match="iso-8859-1 cannot store"):
        roundtrip(tmp_path, b"# coding: latin-1\nx = '<|hole|>'\n", fill="\u2603")


@pytest.mark.parametrize("raw", [b"x = '\xff'\n", b"# coding: no-such-codec\nx = 1\n"])
def test_undecodable_files_are_refused_not_guessed(tmp_path: Path, raw: bytes) -> None:
    with pytest.raises(HolefillError, match="cannot read"):
        roundtrip(tmp_path, raw)
