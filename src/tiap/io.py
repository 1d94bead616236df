"""Small, strict readers and writers for the JSON Lines files tiap uses.

Readers validate each line with a pydantic model and turn any failure into an
:class:`~tiap.errors.InputError` naming the file, the line and the field.
Writers are deterministic: the same models give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from tiap.errors import InputError, TiapError

M = TypeVar("M", bound=BaseModel)


#: the UTF-8 byte order mark, accepted (and dropped) at the start of every text input.
BOM = b"\xef\xbb\xbf"


def open_input(path: str | Path, *, what: str = "file") -> BinaryIO:
    """Open an input file for binary reading; a missing or unreadable file, a
    directory or a device is an :class:`InputError` naming it (``what`` names the
    kind of file). Pipes are read like files."""
    p = Path(path)
    try:
        fh = p.open("rb")
    except FileNotFoundError:
        raise InputError(p, f"{what} not found") from None
    except IsADirectoryError:
        raise InputError(p, f"cannot read {what} (it is a directory)") from None
    except OSError as exc:
        raise InputError(p, f"cannot read {what} ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fh.fileno()).st_mode
    except OSError as exc:  # pragma: no cover - fstat of an open file does not fail in practice
        fh.close()
        raise InputError(p, f"cannot read {what} ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        fh.close()
        raise InputError(p, f"cannot read {what} (it is a directory)")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        fh.close()
        raise InputError(p, f"cannot read {what} (a device or socket, not a regular file)")
    return fh


def update_with_file(digest: Any, path: Path) -> None:
    """Feed ``path``'s bytes to a ``hashlib`` digest, a megabyte at a time."""
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (read in blocks: a model file is not held whole)."""
    digest = hashlib.sha256()
    update_with_file(digest, path)
    return digest.hexdigest()


def decode_utf8(data: bytes, path: str | Path, *, what: str = "file") -> str:
    """A whole input file's bytes as text, a leading byte order mark dropped; bytes
    that are not UTF-8 are an :class:`InputError` naming the file and their line
    (``FILE: file is not UTF-8 text at line 3 (invalid start byte)``)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = 1 + data.count(b"\n", 0, exc.start)
        raise InputError(
            Path(path), f"{what} is not UTF-8 text at line {line} ({exc.reason})"
        ) from None


def read_text_input(path: str | Path, *, what: str = "file") -> str:
    """The whole of a UTF-8 input file (a leading byte order mark dropped); missing,
    unreadable or non-UTF-8 files are an :class:`InputError` naming it (and the
    line of the first byte that is not UTF-8)."""
    with open_input(path, what=what) as fh:
        data = fh.read()
    return decode_utf8(data, path, what=what)


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` of a text input, split at ``\\n`` only (a trailing
    ``\\r`` dropped), so line numbers are an editor's: other characters that
    :meth:`str.splitlines` breaks at (form feed, U+2028, ...) stay in the line."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        yield lineno, line.removesuffix("\r")


class RepeatedKey(ValueError):
    """A JSON object names one key twice (raised while decoding)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def problem(self) -> str:
        shown = self.key if len(self.key) <= 80 else self.key[:79] + "…"
        return f"key '{shown}' appears twice in one object (a repeated key would hide a value)"


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The ``object_pairs_hook`` of every JSON reader: an object as a dict, or
    :class:`RepeatedKey` when a key repeats (a dict would keep only its last value)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return obj


#: the JSON value's strings and the structural characters around them
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


def repeated_key_offset(text: str, start: int = 0) -> int | None:
    """Where, in the JSON value that starts at ``start`` of ``text``, an object first
    names a key again (the offset of that key), or None. Used to place a
    :class:`RepeatedKey` once the decoder has raised it (the text is valid JSON up to
    there)."""
    objects: list[set[str] | None] = []  # per open bracket: its keys (None: a list)
    last: tuple[str, int] | None = None  # the string token just before, and its offset
    for m in _JSON_TOKENS.finditer(text, start):
        token = m.group()
        if token == ":" and last is not None and objects and objects[-1] is not None:
            key, at = last
            if key in objects[-1]:
                return at
            objects[-1].add(key)
        elif token in "{[":
            objects.append(set() if token == "{" else None)
        elif token in "}]":
            if objects:
                objects.pop()
            if not objects:
                return None
        last = (json.loads(token), m.start()) if token[0] == '"' else None
    return None


def json_decoder(*, finite: bool = False) -> json.JSONDecoder:
    """A decoder that refuses repeated keys (:class:`RepeatedKey`); with ``finite``
    also NaN, Infinity (not JSON) and numbers beyond a float's range."""
    return _FINITE if finite else _PLAIN


def load_json(text: str, path: str | Path, *, line: int | None = None, finite: bool = False) -> Any:
    """One JSON value read from ``path``: a whole document, or (``line``) one line of
    a JSON Lines file. Malformed JSON, nesting deeper than the parser allows and an
    object that names a key twice are an :class:`InputError` naming the file and
    the line; with ``finite`` so are NaN, Infinity and numbers like ``1e999``."""
    try:
        return json_decoder(finite=finite).decode(text)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise InputError(Path(path), f"malformed JSON ({exc.msg})", at) from None
    except RecursionError:
        raise InputError(Path(path), "malformed JSON (nested too deeply)", line) from None
    except RepeatedKey as exc:
        raise InputError(Path(path), exc.problem(), line or line_at(text, exc)) from None
    except _NotJson as exc:
        raise InputError(Path(path), str(exc), line) from None


def line_at(text: str, exc: RepeatedKey, start: int = 0, first_line: int = 1) -> int | None:
    """The line of ``text`` (``first_line`` at ``start``) where ``exc``'s key repeats."""
    at = repeated_key_offset(text, start)
    return None if at is None else first_line + text.count("\n", start, at)


def parse_json_line(raw: str, path: str | Path, line: int | None) -> Any:
    """One JSON value read from ``path`` at ``line``: malformed JSON, nesting deeper
    than the parser allows, a repeated key, or NaN/Infinity (not JSON) are an
    :class:`InputError`."""
    return load_json(raw, path, line=line, finite=True)


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"malformed JSON ({name} is not a JSON value)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"number {text[:40]} is out of range (not a finite number)")
    return value


_PLAIN = json.JSONDecoder(object_pairs_hook=unique_object)
_FINITE = json.JSONDecoder(
    object_pairs_hook=unique_object, parse_constant=_no_constant, parse_float=_finite_float
)


def describe_validation_error(exc: ValidationError) -> str:
    """One short sentence for the first problem pydantic found."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "json_invalid":
        return f"malformed JSON ({err.get('ctx', {}).get('error', msg)})"
    if err.get("type") == "missing":
        return f"missing field '{loc}'"
    if err.get("type") == "extra_forbidden":
        return f"unknown field '{loc}'"
    return f"field '{loc}': {msg}" if loc else msg


_TOML_AT = re.compile(r"\s*\(at line (\d+), column \d+\)$")


def describe_toml_error(exc: ValueError) -> tuple[str, int | None]:
    """``(message, line)`` of a ``tomllib.TOMLDecodeError`` on every Python version.

    Before Python 3.14 the line is only in the message ("... (at line 2, column 5)").
    """
    line = getattr(exc, "lineno", None)
    msg = getattr(exc, "msg", None) or str(exc)
    found = _TOML_AT.search(msg)
    if found:
        line = line or int(found.group(1))
        msg = msg[: found.start()]
    return msg, line


def load_toml(text: str, origin: str | Path) -> dict[str, Any]:
    """TOML text as data; a malformed file is an error naming ``origin`` (and the
    TOML line when known)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg, line = describe_toml_error(exc)
        raise InputError(origin, f"malformed TOML ({msg})", line) from None
    except RecursionError:
        raise InputError(origin, "malformed TOML (nested too deeply)") from None


def parse_toml(text: str, origin: str | Path, model: type[M], *, what: str | None = None) -> M:
    """TOML text validated with ``model``; errors name ``origin`` (and the TOML line
    when known). ``what`` names the kind of file in validation errors ("invalid panel: ...")."""
    data = load_toml(text, origin)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problem = describe_validation_error(exc)
        raise InputError(origin, f"invalid {what}: {problem}" if what else problem) from None


def builtin_toml_names(package: str, folder: str) -> list[str]:
    """Names (without ``.toml``) of the TOML data files shipped in ``package/folder``."""
    root = resources.files(package) / folder
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_builtin_or_file(
    name_or_path: str | Path, model: type[M], *, package: str, folder: str, what: str
) -> M:
    """A TOML data file shipped with tiap (``package/folder/NAME.toml``) by name, or a
    user's TOML file by path, validated with ``model``. ``what`` ("rubric", "panel")
    names the kind of file in errors."""
    name = str(name_or_path)
    builtins = builtin_toml_names(package, folder)
    if name in builtins:
        res = resources.files(package) / folder / f"{name}.toml"
        text = res.read_text(encoding="utf-8")
        return parse_toml(text, f"<built-in {what} {name}>", model, what=what)
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        text = read_text_input(path, what=f"{what} file")
        return parse_toml(text, str(path), model, what=what)
    raise TiapError(
        f"unknown {what} '{name}' (built-in: {', '.join(builtins)}; "
        "or give the path of a .toml file)"
    )


def iter_jsonl(path: str | Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """Yield ``(line_number, record)`` for each non-blank line of ``path`` (a byte
    order mark at its start is dropped). A line that is not UTF-8, not JSON, not an
    object, names a key twice or does not fit ``model`` is an :class:`InputError`
    naming the file and the line."""
    p = Path(path)
    with open_input(p) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM) :]
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(p, f"not UTF-8 text ({err.reason})", lineno) from None
            data = load_json(text, p, line=lineno)
            if not isinstance(data, dict):
                raise InputError(p, "expected a JSON object on each line", lineno)
            try:
                yield lineno, model.model_validate(data)
            except ValidationError as exc:
                raise InputError(p, describe_validation_error(exc), lineno) from None


def read_jsonl(path: str | Path, model: type[M]) -> list[M]:
    """All records of a JSONL file, validated."""
    return [rec for _, rec in iter_jsonl(path, model)]


def dumps_record(record: BaseModel) -> str:
    """One record as a compact JSON line (no trailing newline), ``None`` fields left out."""
    return record.model_dump_json(exclude_none=True)


def write_jsonl(path: str | Path, records: Iterable[BaseModel]) -> int:
    """Write records one per line (UTF-8, ``\\n``); returns how many were written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(dumps_record(rec))
            fh.write("\n")
            n += 1
    return n


def write_json(path: str | Path, obj: object) -> None:
    """Write a JSON document deterministically (sorted keys, 2-space indent, UTF-8)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    p.write_text(text + "\n", encoding="utf-8", newline="\n")


def _resolved(path: str | Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError) as exc:  # a loop of symbolic links
        raise TiapError(f"{path}: cannot resolve the path ({exc})") from None


def check_apart(
    out: str | Path, inputs: Iterable[tuple[str, str | Path | None]], *, option: str = "--out"
) -> None:
    """Refuse an output path that is an input, holds one or lies inside one (paths
    resolved, symbolic links followed), with or without ``--force``: writing there
    would replace, delete or add to what is being read. ``inputs`` are ``(what,
    path)`` pairs (``("bundle", "b/")``); a ``None`` path is skipped, and so is one
    that does not exist (a built-in name such as a panel's)."""
    target = _resolved(out)
    for what, path in inputs:
        if path is None or not os.path.lexists(path):
            continue
        given = _resolved(path)
        if target == given:
            problem = f"is the {what} {path}"
        elif given in target.parents:
            problem = f"lies inside the {what} {path}"
        elif target in given.parents:
            problem = f"holds the {what} {path}"
        else:
            continue
        named = f"{option} {out}" if option else str(out)
        raise TiapError(
            f"{named}: {problem}; write somewhere apart from the inputs "
            "(--force does not change this)"
        )
