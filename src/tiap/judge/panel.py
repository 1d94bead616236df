"""Judge panels: who judges, through which model, with which call settings.

A panel is a TOML file (or a built-in name: ``frontier``, ``offline``,
``offline-llm``)::

    name = "frontier"
    temperature = 0
    max_tokens = 400
    timeout_s = 60
    [[judges]]
    name = "claude-sonnet-4"
    model = "openrouter/anthropic/claude-sonnet-4"   # any litellm model string
    api_base = "..."        # optional
    api_key_env = "..."     # optional: name of the env var holding the key
    concurrency = 8         # optional, per judge

Optional per judge: ``response_format`` (``json_schema``, the default; ``json_object``;
``none``), prices for budgets and estimates (``input_cost_per_mtok``,
``output_cost_per_mtok``, US dollars per million tokens; ``batch_input_cost_per_mtok``,
``batch_output_cost_per_mtok`` for ``--batch``), ``batch = false`` (always call it
directly), extra litellm parameters (``params``) and a ``description``. Optional per
panel: ``seed``, ``max_attempts`` and the backoff settings of the retry policy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tiap.errors import TiapError
from tiap.io import builtin_toml_names, load_builtin_or_file, parse_toml

#: The in-process litellm provider of tiap's offline judges (``tiap-offline/NAME``).
OFFLINE_PROVIDER = "tiap-offline"

JudgeKind = Literal["llm", "local_llm", "baseline"]
ResponseFormat = Literal["json_schema", "json_object", "none"]

#: litellm arguments tiap sets itself; a judge's ``params`` may not override them.
_RESERVED_PARAMS = frozenset(
    {
        "model",
        "messages",
        "api_key",
        "api_base",
        "temperature",
        "max_tokens",
        "seed",
        "response_format",
        "timeout",
        "max_retries",
        "num_retries",
        "stream",
        "caching",
    }
)


class JudgeSpec(BaseModel):
    """One judge of a panel. ``name`` is the rater name its labels carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=80)
    model: str = Field(min_length=1)
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    concurrency: int = Field(default=4, ge=1, le=1024)
    response_format: ResponseFormat = "json_schema"
    input_cost_per_mtok: float | None = Field(default=None, ge=0)
    output_cost_per_mtok: float | None = Field(default=None, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    #: ``--batch`` sends this judge's requests through its provider's batch API
    #: when it has one; ``false`` calls it directly.
    batch: bool = True
    #: optional batch prices (US dollars per million tokens); else the price table's.
    batch_input_cost_per_mtok: float | None = Field(default=None, ge=0)
    batch_output_cost_per_mtok: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _check(self) -> JudgeSpec:
        if (self.input_cost_per_mtok is None) != (self.output_cost_per_mtok is None):
            raise ValueError("give both input_cost_per_mtok and output_cost_per_mtok, or neither")
        if (self.batch_input_cost_per_mtok is None) != (self.batch_output_cost_per_mtok is None):
            raise ValueError(
                "give both batch_input_cost_per_mtok and batch_output_cost_per_mtok, or neither"
            )
        clash = sorted(_RESERVED_PARAMS.intersection(self.params))
        if clash:
            raise ValueError(f"params may not set {clash} (they are panel or judge settings)")
        return self

    @property
    def offline(self) -> bool:
        """True for tiap's in-process judges (no network, no key)."""
        return self.model.startswith(OFFLINE_PROVIDER + "/")

    @property
    def kind(self) -> JudgeKind:
        """``baseline`` (deterministic, not an LLM), ``local_llm`` or ``llm``."""
        if not self.offline:
            return "llm"
        from tiap.judge.offline import is_local_llm

        return "local_llm" if is_local_llm(self.model) else "baseline"

    def api_key(self) -> str | None:
        """The key from ``api_key_env`` (read now, never stored)."""
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise TiapError(
                f"judge '{self.name}' needs an API key in the environment variable "
                f"{self.api_key_env}, which is not set"
            )
        return value


class Panel(BaseModel):
    """A panel of judges and the call settings they share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)
    description: str = ""
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=400, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    seed: int | None = None
    #: attempts per call, the first included (retries = max_attempts - 1).
    max_attempts: int = Field(default=6, ge=1, le=50)
    backoff_initial_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    #: the longest Retry-After honoured; a longer one is cut to this.
    retry_after_max_s: float = Field(default=120.0, ge=0)
    judges: list[JudgeSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Panel:
        names = [j.name for j in self.judges]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"judge names must be unique (repeated: {', '.join(dupes)})")
        return self

    @property
    def judge_models(self) -> dict[str, str]:
        """``judge name -> model string``: what a scale gate is recorded for."""
        return {j.name: j.model for j in self.judges}

    def judge(self, name: str) -> JudgeSpec:
        for j in self.judges:
            if j.name == name:
                return j
        raise TiapError(f"panel '{self.name}' has no judge '{name}'")


def builtin_panels() -> list[str]:
    """Names of the panels shipped with tiap."""
    return builtin_toml_names("tiap.judge", "panels")


def parse_panel(text: str, origin: str) -> Panel:
    """Parse panel TOML; errors name ``origin`` (and the TOML line when known)."""
    return parse_toml(text, origin, Panel, what="panel")


def load_panel(name_or_path: str | Path) -> Panel:
    """A built-in panel by name, or a panel TOML file by path."""
    return load_builtin_or_file(
        name_or_path, Panel, package="tiap.judge", folder="panels", what="panel"
    )
