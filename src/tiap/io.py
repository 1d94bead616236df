"""Small, strict readers and writers for the JSON Lines files tiap uses.

Readers validate each line with a pydantic model and turn any failure into an
:class:`~tiap.errors.InputError` naming the file, the line and the field.
Writers are deterministic: the same models give the same bytes.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from tiap.errors import InputError, TiapError

M = TypeVar("M", bound=BaseModel)


def open_input(path: str | Path, *, what: str = "file") -> BinaryIO:
    """Open an input file for binary reading; a missing or unreadable file is an
    :class:`InputError` naming it (``what`` names the kind of file)."""
    p = Path(path)
    try:
        return p.open("rb")
    except FileNotFoundError:
        raise InputError(p, f"{what} not found") from None
    except OSError as exc:
        raise InputError(p, f"cannot read {what} ({exc.strerror})") from None


def read_text_input(path: str | Path, *, what: str = "file") -> str:
    """The whole of a UTF-8 input file; missing, unreadable or non-UTF-8 files are
    an :class:`InputError` naming it."""
    with open_input(path, what=what) as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(Path(path), f"{what} is not UTF-8 text ({exc.reason})") from None


def describe_validation_error(exc: ValidationError) -> str:
    """One short sentence for the first problem pydantic found."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    msg = err.get("msg", "invalid value")
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


def parse_toml(text: str, origin: str | Path, model: type[M], *, what: str | None = None) -> M:
    """TOML text validated with ``model``; errors name ``origin`` (and the TOML line
    when known). ``what`` names the kind of file in validation errors ("invalid panel: ...")."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg, line = describe_toml_error(exc)
        raise InputError(origin, f"malformed TOML ({msg})", line) from None
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
    """Yield ``(line_number, record)`` for each non-blank line of ``path``."""
    p = Path(path)
    with open_input(p) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, model.model_validate_json(raw)
            except ValidationError as exc:
                if raw.lstrip()[:1] != b"{" and exc.errors()[0].get("type") != "json_invalid":
                    raise InputError(p, "expected a JSON object on each line", lineno) from None
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
