"""The local LLM judge's converted-model cache.

Loading SmolLM2-135M from its GGUF file takes transformers about 20 s (it parses
the file three times — configuration, tokenizer, weights — and de-quantises every
tensor). The first load therefore saves the model and tokenizer as transformers'
own format (``save_pretrained``: safetensors, float32) into
``<cache>/local-llm/<key>/``, and later loads read that folder in well under a
second.

- ``<cache>``: ``$TIAP_CACHE_DIR``, else ``$XDG_CACHE_HOME/tiap``, else
  ``~/.cache/tiap`` (:func:`cache_root`).
- ``<key>``: a hash of what changes the converted model: the GGUF file's sha256,
  the transformers version, the torch dtype and this cache's format
  (:func:`cache_key`). A new model file or transformers gets a new folder.
- An entry is written into a temporary folder beside it and renamed into place
  when complete, with a manifest (``tiap-local-llm.json``) naming every file and
  its size: a killed or concurrent writer never leaves a half entry that is read.
  An entry whose manifest or files do not match, or that fails to load, is removed
  and the model loaded from the GGUF file again (and the entry rebuilt).
- A cache that cannot be written (read-only home, no home) is not an error: the
  model is loaded from the GGUF file as without a cache, silently.

Deleting the ``local-llm`` folder (or the whole cache) clears it; the next load
rebuilds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.io import file_sha256

#: bump when what an entry holds, or how it is made, changes
FORMAT = 1
#: the file an entry's writer puts last: the entry's key and every file's size
MANIFEST = "tiap-local-llm.json"
#: a writer's temporary folder older than this is a killed writer's: removed
STALE_SECONDS = 3600.0
_PARTIAL = ".partial"

T = TypeVar("T")


class Manifest(BaseModel):
    """What a complete entry holds (written last, into the temporary folder)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: int
    key: str
    parts: dict[str, Any]
    #: every other file of the entry (path relative to it) and its size in bytes
    files: dict[str, int]


def cache_root() -> Path | None:
    """``$TIAP_CACHE_DIR``, else ``$XDG_CACHE_HOME/tiap``, else ``~/.cache/tiap``;
    None when there is no home to put it in."""
    explicit = os.environ.get("TIAP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec ignores a relative path
        return Path(xdg) / "tiap"
    try:
        return Path.home() / ".cache" / "tiap"
    except RuntimeError:  # no HOME and no password entry
        return None


def cache_parts(gguf: Path, dtype: str) -> dict[str, Any]:
    """What the converted model depends on (hashed into its key)."""
    import transformers

    return {
        "format": FORMAT,
        "gguf_file": gguf.name,
        "gguf_sha256": file_sha256(gguf),
        "transformers": transformers.__version__,
        "dtype": dtype,
    }


def cache_key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _files(folder: Path) -> dict[str, int]:
    return {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def _complete(entry: Path, key: str) -> bool:
    """The entry's manifest names this key and exactly the files there, at their sizes."""
    try:
        manifest = Manifest.model_validate_json((entry / MANIFEST).read_bytes())
        return manifest.format == FORMAT and manifest.key == key and manifest.files == _files(entry)
    except (OSError, ValidationError):
        return False


def _remove(folder: Path) -> None:
    """Remove a folder, first renaming it out of the way (a writer may put a new entry
    at its name meanwhile); errors ignored (a read-only cache keeps its entry)."""
    # named as a writer's temporary folder: cleared as stale if this rmtree is killed
    aside = folder.with_name(f".{folder.name}.{os.getpid()}-{time.time_ns()}.removed{_PARTIAL}")
    try:
        folder.rename(aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def read_entry(entry: Path, key: str, load: Callable[[Path], T]) -> T | None:
    """``load(entry)`` when the entry is complete; None when it is absent, and None
    (the entry removed, to be rebuilt) when it is incomplete or fails to load."""
    if not entry.is_dir():
        return None
    if _complete(entry, key):
        try:
            return load(entry)
        # a damaged entry fails in whatever way its reader does (safetensors, json,
        # the tokenizer library): any of them means "rebuild", none is the caller's
        except Exception:
            pass
    _remove(entry)
    return None


def _clear_stale(parent: Path) -> None:
    """Remove the temporary folders of writers that were killed (old enough)."""
    now = time.time()
    for folder in parent.glob(f".*{_PARTIAL}"):
        with contextlib.suppress(OSError):
            if now - folder.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(folder, ignore_errors=True)


def write_entry(entry: Path, key: str, parts: dict[str, Any], save: Callable[[Path], None]) -> bool:
    """``save(folder)`` into a temporary folder beside ``entry``, then the manifest,
    then the folder renamed to ``entry``. False (nothing left behind) when the cache
    cannot be written or another writer's entry got there first."""
    parent = entry.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _clear_stale(parent)
        work = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=_PARTIAL, dir=parent))
    except OSError:
        return False
    try:
        save(work)
        manifest = Manifest(format=FORMAT, key=key, parts=parts, files=_files(work))
        (work / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.rename(work, entry)  # fails when an entry is there already: it stays
        return True
    # the model is loaded already: a cache that cannot be written (disk full, a
    # transformers that refuses to save) costs the next load time, never this one
    except Exception:
        return False
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def load_converted(folder: Path, dtype: Any) -> tuple[Any, Any]:
    """The tokenizer and model of a cache entry; raises when a weight is missing or
    left over (a model with a weight missing would load with random values)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model, info = AutoModelForCausalLM.from_pretrained(
        folder, dtype=dtype, local_files_only=True, output_loading_info=True
    )
    if any(info.get(k) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")):
        raise ValueError(f"{folder}: weights do not match the model: {info}")
    _own_memory(model)
    return tokenizer, model


def _own_memory(model: Any) -> None:
    """Copy the weights out of the memory-mapped file into memory of their own.

    Tensors mapped at the file's offsets are aligned differently from the ones the
    GGUF load allocates, and torch's kernels then round differently: log-probabilities
    came out ~1e-6 apart. Copied, they are bitwise those of the GGUF load; and the
    process no longer reads the cache file (which another process may replace)."""
    import torch

    with torch.no_grad():
        for param in model.parameters():  # a tied weight is one parameter: stays tied
            param.data = param.data.clone()


def save_converted(folder: Path, tokenizer: Any, model: Any) -> None:
    """Save a model loaded from GGUF as a plain transformers model: transformers
    refuses to save a model it loaded through its GGUF quantizer, although the
    weights are de-quantised (plain float tensors). The model is left as it was."""
    quantizer = getattr(model, "hf_quantizer", None)
    config = getattr(model.config, "quantization_config", None)
    model.hf_quantizer = None
    if config is not None:
        del model.config.quantization_config
    try:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    finally:
        model.hf_quantizer = quantizer
        if config is not None:
            model.config.quantization_config = config


def load_gguf(directory: Path, gguf_file: str, dtype: Any) -> tuple[Any, Any]:
    """The tokenizer and model read from the GGUF file (slow: see the module doc)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=gguf_file, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        directory, gguf_file=gguf_file, dtype=dtype, local_files_only=True
    )
    return tokenizer, model


@dataclass(frozen=True)
class Loaded:
    """A loaded tokenizer and model, where they came from (``"cache"`` or ``"gguf"``)
    and the cache entry read or written (None: none)."""

    tokenizer: Any
    model: Any
    source: str
    entry: Path | None = None


def load_model(directory: Path, gguf_file: str, dtype: Any, *, cache: bool = True) -> Loaded:
    """The tokenizer and model: from the cache entry when there is a good one, else
    from the GGUF file (and then saved to the cache, when it can be written)."""
    root = cache_root() if cache else None
    if root is None:
        return Loaded(*load_gguf(directory, gguf_file, dtype), source="gguf")
    parts = cache_parts(directory / gguf_file, str(dtype).removeprefix("torch."))
    key = cache_key(parts)
    entry = root / "local-llm" / key
    cached = read_entry(entry, key, lambda folder: load_converted(folder, dtype))
    if cached is not None:
        return Loaded(*cached, source="cache", entry=entry)
    tokenizer, model = load_gguf(directory, gguf_file, dtype)
    saved = write_entry(entry, key, parts, lambda f: save_converted(f, tokenizer, model))
    return Loaded(tokenizer, model, source="gguf", entry=entry if saved else None)
