"""Stream the elements of a top-level JSON list without loading the whole file.

LongMemEval's S and M files are one JSON list of hundreds of megabytes to
gigabytes. :func:`iter_json_list` reads the file in chunks and decodes one
element at a time with :meth:`json.JSONDecoder.raw_decode`, so only the current
element (and one read buffer) is held in memory. It also computes the file's
SHA-256 on the way, so the build can record which input it read.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.errors import InputError
from tiap.io import RepeatedKey, json_decoder, line_at, open_input

_WS = " \t\n\r"
_CHUNK = 1 << 20


@dataclass
class StreamInfo:
    """Filled while streaming: how many bytes were read and their SHA-256 (at the end)."""

    bytes_read: int = 0
    sha256: str = ""
    _hash: Any = field(default_factory=hashlib.sha256, repr=False)


class _Reader:
    def __init__(self, fh: Any, info: StreamInfo) -> None:
        self.fh = fh
        self.info = info
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.line = 1  # line number at self.pos
        self.chunk = _CHUNK

    def more(self, path: Path) -> bool:
        """Append the next chunk to the buffer; False at end of file."""
        if self.eof:
            return False
        raw = self.fh.read(self.chunk)
        self.chunk = min(self.chunk * 2, 64 * _CHUNK)
        try:
            if not raw:
                self.eof = True
                text = self.decoder.decode(b"", final=True)
            else:
                self.info._hash.update(raw)
                self.info.bytes_read += len(raw)
                text = self.decoder.decode(raw)
        except UnicodeDecodeError as exc:
            raise InputError(path, f"not UTF-8 text ({exc.reason})", self.line) from None
        # Drop what was consumed so the buffer holds at most one element plus a chunk.
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(raw) or bool(text)

    def advance(self, new_pos: int) -> None:
        self.line += self.buf.count("\n", self.pos, new_pos)
        self.pos = new_pos

    def skip_ws(self, path: Path) -> str:
        """Skip whitespace; return the next character ('' at end of file)."""
        while True:
            n = len(self.buf)
            p = self.pos
            while p < n and self.buf[p] in _WS:
                p += 1
            self.advance(p)
            if p < n:
                return self.buf[p]
            if not self.more(path):
                return ""


def iter_json_list(path: str | Path, info: StreamInfo | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, element)`` for each element of the JSON list in ``path``.

    ``line`` is the 1-based line where the element starts. Malformed JSON, or a
    top level that is not a list, raises :class:`InputError` with file and line.
    """
    p = Path(path)
    info = info if info is not None else StreamInfo()
    fh = open_input(p)
    decoder = json_decoder()  # an object naming a key twice is an error, not its last value
    with fh:
        r = _Reader(fh, info)
        r.more(p)
        if r.buf.startswith("\ufeff"):
            r.pos = 1
        first = r.skip_ws(p)
        if first != "[":
            what = "an empty file" if first == "" else f"'{first}'"
            raise InputError(p, f"expected a JSON list at the top level, found {what}", r.line)
        r.advance(r.pos + 1)
        expect_value = False
        while True:
            c = r.skip_ws(p)
            if c == "":
                raise InputError(
                    p, "malformed JSON (unexpected end of file inside the list)", r.line
                )
            if c == "]" and not expect_value:
                r.advance(r.pos + 1)
                break
            start_line = r.line
            while True:
                try:
                    value, end = decoder.raw_decode(r.buf, r.pos)
                except json.JSONDecodeError as exc:
                    line = start_line + r.buf.count("\n", r.pos, exc.pos)
                    if r.more(p):
                        continue
                    raise InputError(p, f"malformed JSON ({exc.msg})", line) from None
                except RecursionError:
                    raise InputError(p, "malformed JSON (nested too deeply)", start_line) from None
                except RepeatedKey as exc:
                    line = line_at(r.buf, exc, r.pos, start_line) or start_line
                    raise InputError(p, exc.problem(), line) from None
                if end == len(r.buf) and r.more(p):
                    continue  # a number may continue in the next chunk: decode again
                break
            r.advance(end)
            yield start_line, value
            c = r.skip_ws(p)
            if c == ",":
                r.advance(r.pos + 1)
                expect_value = True
            elif c == "]":
                r.advance(r.pos + 1)
                break
            else:
                found = "end of file" if c == "" else f"'{c}'"
                raise InputError(p, f"malformed JSON (expected ',' or ']', found {found})", r.line)
        if r.skip_ws(p) != "":
            raise InputError(p, "malformed JSON (extra data after the top-level list)", r.line)
        while r.more(p):  # hash any trailing bytes (only whitespace is allowed there)
            pass
    info.sha256 = info._hash.hexdigest()
