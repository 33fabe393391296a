"""A source file read so that writing it back changes nothing but the holes.

The command line reads a file, hands the engine text with "\\n" line breaks, and writes the
filled file back. Everything outside the holes must come back byte for byte: the encoding
(a PEP 263 coding line such as latin-1 in Python files, a UTF-8 byte-order mark), the line
breaks ("\\r\\n" files stay "\\r\\n"; a mixed file keeps each of its own breaks), and a final
line break or its absence. So the file's own chunks are kept, the engine works on a
normalized copy (line breaks are the only difference, so lines and columns agree), and only
the fillings are converted: to the file's first line-break style, and to its encoding.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from holefill.errors import HolefillError

_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class SourceFile:
    path: Path
    text: str  # the decoded file, its line breaks as they are
    encoding: str  # a codec that gives the file's bytes back ("utf-8-sig" keeps a BOM)
    newline: str  # the line break that fillings are written with

    @property
    def plain(self) -> str:
        """The text as the engine sees it: every line break is "\\n"."""
        return normalize(self.text)

    def filled(self, chunks: Sequence[str], fills: Sequence[str]) -> str:
        """The file's own `chunks` (split from `text`) with the engine's `fills` between."""
        return "".join(c + f for c, f in zip(chunks, [*map(self.own, fills), ""], strict=True))

    def own(self, inserted: str) -> str:
        """Inserted text with the file's line break."""
        return normalize(inserted).replace("\n", self.newline)

    def encode(self, text: str) -> bytes:
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = text[exc.start:exc.end]
            raise HolefillError(f"{self.path}: the filling holds {bad!r}, which the file's "
                                f"encoding {self.encoding} cannot store") from exc


def normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_source(path: Path, language: str) -> SourceFile:
    """Read `path`, decoded as its language says: a PEP 263 coding line or a BOM for Python,
    UTF-8 (with or without a BOM) otherwise. Refuses a file whose bytes would not come back."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HolefillError(f"cannot read {path}: {exc}") from exc
    encoding = _encoding(path, raw, language)
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise HolefillError(f"cannot read {path} as {encoding}: {exc}") from exc
    if text.encode(encoding) != raw:
        raise HolefillError(f"{path}: {encoding} does not give this file's bytes back; "
                            "holefill will not rewrite it")
    first = _BREAK.search(text)
    return SourceFile(path, text, encoding, first.group() if first else "\n")


def _encoding(path: Path, raw: bytes, language: str) -> str:
    if language == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:  # an unknown codec, or a coding line that contradicts a BOM
            raise HolefillError(f"cannot read {path}: {exc}") from exc
        return encoding
    return "utf-8-sig" if raw.startswith(_BOM) else "utf-8"
