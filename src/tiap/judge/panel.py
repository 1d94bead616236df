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
``none``), the ``route`` its calls take (below), prices for budgets and estimates
(``input_cost_per_mtok``, ``output_cost_per_mtok``, US dollars per million tokens;
``batch_input_cost_per_mtok``, ``batch_output_cost_per_mtok`` for ``--batch``),
``batch = false`` (always call it directly), extra litellm parameters (``params``)
and a ``description``. Optional per panel: ``seed``, ``max_attempts`` and the
backoff settings of the retry policy, ``max_reply_bytes`` (the longest reply kept).

Routes (:mod:`tiap.judge.routes`, registered by name). litellm names every model
and provider. tiap's offline judges (``tiap-offline/NAME``) run in process
(``offline``). A judge whose provider speaks the OpenAI chat-completions protocol
(a model ``openai/NAME`` — OpenAI, or any OpenAI-compatible server such as vLLM or
a llama.cpp server given as ``api_base`` —, ``openrouter/NAME`` or
``hosted_vllm/NAME``) is called directly over HTTP by default (``route = "auto"``
or ``"openai"``): the same request bytes litellm would send, without litellm's
per-call work. ``route = "litellm"`` sends its calls through litellm instead;
every other provider always goes through litellm. Another registered route is
named the same way. The route is that of direct calls; ``--batch`` sends a
judge's requests through its provider's batch API where its route offers one.

Every setting is checked where it enters (a TOML file or the Python API): numbers
finite, positive and within the maxima of :mod:`tiap.limits`; an error names the
panel file, the key and its line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tiap.errors import InputError, TiapError
from tiap.io import builtin_toml_names, load_toml, read_text_input
from tiap.limits import (
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_REPLY_BYTES,
    MAX_SECONDS,
    MAX_TOKENS,
)

#: The model prefix of tiap's in-process offline judges (``tiap-offline/NAME``).
OFFLINE_PROVIDER = "tiap-offline"
#: offline judges that are a (weak, local) LLM; the others are deterministic baselines.
LOCAL_LLM_MODELS = frozenset({"smollm2-135m"})

JudgeKind = Literal["llm", "local_llm", "baseline"]
ResponseFormat = Literal["json_schema", "json_object", "none"]
#: the route that fits a judge's model, and the built-in routes by name.
AUTO_ROUTE = "auto"
OFFLINE_ROUTE = "offline"
OPENAI_ROUTE = "openai"
LITELLM_ROUTE = "litellm"

#: litellm providers (the model's prefix) reached over the OpenAI chat-completions
#: protocol on the direct route.
OPENAI_PROTOCOL_PROVIDERS = ("openai", "openrouter", "hosted_vllm")

#: the default ``max_reply_bytes`` (64 KiB).
DEFAULT_REPLY_BYTES = 64 * 1024

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
    concurrency: int = Field(default=4, ge=1, le=MAX_CONCURRENCY, strict=True)
    response_format: ResponseFormat = "json_schema"
    #: the route of its calls (:mod:`tiap.judge.routes`): ``auto`` (the default: the
    #: first that fits the model of ``offline``, ``openai``, ``litellm``) or a
    #: registered route's name.
    route: str = Field(default=AUTO_ROUTE, pattern=r"^[a-z][a-z0-9_-]*$", max_length=40)
    input_cost_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    output_cost_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    params: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    #: ``--batch`` sends this judge's requests through its provider's batch API
    #: when it has one; ``false`` calls it directly.
    batch: bool = True
    #: optional batch prices (US dollars per million tokens); else the price table's.
    batch_input_cost_per_mtok: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, strict=True
    )
    batch_output_cost_per_mtok: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, strict=True
    )

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
        self._check_route()
        return self

    @field_validator("route")
    @classmethod
    def _known_route(cls, value: str) -> str:
        from tiap.judge.route_registry import route_names  # (names only, no routes made)

        names = route_names()
        if value != AUTO_ROUTE and value not in names:
            others = [n for n in names if n not in (OPENAI_ROUTE, LITELLM_ROUTE)]
            more = f", or a registered route ({', '.join(others)})" if others else ""
            raise ValueError(f"unknown route '{value}': use 'auto', 'openai' or 'litellm'{more}")
        return value

    def _check_route(self) -> None:
        """The built-in routes' rules for the judge's model."""
        if self.offline and self.route not in (AUTO_ROUTE, OFFLINE_ROUTE):
            raise ValueError(f"'{self.model}' runs in process: its route is 'offline'")
        if self.route == OFFLINE_ROUTE and not self.offline:
            raise ValueError(
                f"route 'offline' is for {OFFLINE_PROVIDER}/ models, not '{self.model}'"
            )
        if self.route == OPENAI_ROUTE and self.provider not in OPENAI_PROTOCOL_PROVIDERS:
            prefixes = ", ".join(f"{p}/" for p in OPENAI_PROTOCOL_PROVIDERS)
            raise ValueError(
                f"route 'openai' needs a model litellm reaches over the OpenAI protocol "
                f"({prefixes}; an OpenAI-compatible server is 'openai/NAME' with its "
                f"api_base), not '{self.model}'"
            )

    @property
    def provider(self) -> str:
        """The litellm provider prefix of the model (``openai`` in ``openai/gpt-4o``)."""
        return self.model.split("/", 1)[0] if "/" in self.model else ""

    @property
    def resolved_route(self) -> str:
        """The name of the route this judge's calls take (see the module doc)."""
        if self.route != AUTO_ROUTE:
            return self.route
        if self.offline:
            return OFFLINE_ROUTE
        if self.provider in OPENAI_PROTOCOL_PROVIDERS:
            return OPENAI_ROUTE
        return LITELLM_ROUTE

    @property
    def offline(self) -> bool:
        """True for tiap's in-process judges (no network, no key)."""
        return self.model.startswith(OFFLINE_PROVIDER + "/")

    @property
    def kind(self) -> JudgeKind:
        """``baseline`` (deterministic, not an LLM), ``local_llm`` or ``llm``."""
        if not self.offline:
            return "llm"
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


def offline_name(model: str) -> str:
    """The offline judge's name in a ``tiap-offline/NAME`` model string."""
    return model.split("/", 1)[1] if model.startswith(OFFLINE_PROVIDER + "/") else model


def is_local_llm(model: str) -> bool:
    return offline_name(model) in LOCAL_LLM_MODELS


class Panel(BaseModel):
    """A panel of judges and the call settings they share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)
    description: str = ""
    temperature: float = Field(default=0.0, ge=0, le=2, allow_inf_nan=False, strict=True)
    max_tokens: int = Field(default=400, ge=1, le=MAX_TOKENS, strict=True)
    #: the deadline of one attempt: connecting, sending, the reply's headers and body.
    timeout_s: float = Field(default=60.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False, strict=True)
    seed: int | None = Field(default=None, strict=True)
    #: attempts per call, the first included (retries = max_attempts - 1).
    max_attempts: int = Field(default=6, ge=1, le=MAX_ATTEMPTS, strict=True)
    backoff_initial_s: float = Field(
        default=1.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False, strict=True
    )
    backoff_max_s: float = Field(
        default=60.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False, strict=True, validate_default=True
    )
    #: the longest Retry-After honoured; a longer one is cut to this.
    retry_after_max_s: float = Field(
        default=120.0, gt=0, le=MAX_SECONDS, allow_inf_nan=False, strict=True
    )
    #: the longest reply kept (UTF-8 bytes of the judge's text); a longer one is cut.
    max_reply_bytes: int = Field(default=DEFAULT_REPLY_BYTES, ge=1, le=MAX_REPLY_BYTES, strict=True)
    judges: list[JudgeSpec] = Field(min_length=1)

    @field_validator("backoff_max_s")
    @classmethod
    def _backoff_order(cls, value: float, info: ValidationInfo) -> float:
        initial = info.data.get("backoff_initial_s")
        if isinstance(initial, float) and value < initial:
            raise ValueError(f"must be at least backoff_initial_s ({initial:g}), not {value:g}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> Panel:
        names = [j.name for j in self.judges]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"judge names must be unique (repeated: {', '.join(dupes)})")
        routes: dict[tuple[str, str | None], set[str]] = {}
        for j in self.judges:
            routes.setdefault((j.model, j.api_base), set()).add(j.resolved_route)
        mixed = sorted(model for (model, _), taken in routes.items() if len(taken) > 1)
        if mixed:
            raise ValueError(
                f"judges with the same model and api_base take one route ({', '.join(mixed)})"
            )
        return self

    @property
    def judge_models(self) -> dict[str, str]:
        """``judge name -> model string``: what a scale gate is recorded for."""
        return {j.name: j.model for j in self.judges}

    def require_extras(self) -> None:
        """TiapError now, before any work, if a judge needs an optional extra that is
        not installed (the local LLM: ``local-llm``); nothing heavy is imported."""
        if any(j.kind == "local_llm" for j in self.judges):
            from tiap.judge.local_llm import check_available

            check_available()

    def judge(self, name: str) -> JudgeSpec:
        for j in self.judges:
            if j.name == name:
                return j
        raise TiapError(f"panel '{self.name}' has no judge '{name}'")


def builtin_panels() -> list[str]:
    """Names of the panels shipped with tiap."""
    return builtin_toml_names("tiap.judge", "panels")


def judge_for(panel: Panel, model: str, api_base: str | None) -> JudgeSpec | None:
    """The (first) judge of ``panel`` calling ``model`` at ``api_base``, if any."""
    for j in panel.judges:
        if j.model == model and j.api_base == api_base:
            return j
    return None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?")


def _key_line(text: str, loc: Sequence[str | int]) -> int | None:
    """The TOML line of a panel key (``("timeout_s",)``, ``("judges", 2,
    "concurrency")``, or a whole judge ``("judges", 2)``), when it is written there
    as a plain ``key = ...`` (or ``[[judges]]``)."""
    if not loc or not isinstance(loc[0], str):
        return None
    index: int | None = None
    key: str | None = loc[0]
    if loc[0] == "judges" and len(loc) >= 2 and isinstance(loc[1], int):
        index = loc[1]
        key = loc[2] if len(loc) > 2 and isinstance(loc[2], str) else None
    judge, table, judge_line = -1, "", None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = header.group(2)
            if header.group(1) == "[[" and table == "judges":
                judge += 1
                if judge == index:
                    judge_line = number
                    if key is None:
                        return number
            continue
        if key is None:
            continue
        here = table == "" if index is None else (table == "judges" and judge == index)
        if here and re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return judge_line


def _where(loc: Sequence[str | int], data: Any) -> str:
    """``judges[1].concurrency (judge 'x')`` for a pydantic error location."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + item)
    where = "".join(parts)
    if len(loc) > 1 and loc[0] == "judges" and isinstance(loc[1], int):
        judges = data.get("judges") if isinstance(data, dict) else None
        if isinstance(judges, list) and loc[1] < len(judges) and isinstance(judges[loc[1]], dict):
            name = judges[loc[1]].get("name")
            if isinstance(name, str):
                where += f" (judge '{name[:80]}')"
    return where


def parse_panel(text: str, origin: str) -> Panel:
    """Parse panel TOML; errors name ``origin``, the key and its TOML line."""
    data = load_toml(text, origin)
    try:
        return Panel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = tuple(err.get("loc", ()))
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if err.get("type") == "missing":
            msg = "missing"
        elif err.get("type") == "extra_forbidden":
            msg = "unknown setting"
        where = _where(loc, data)
        problem = f"invalid panel: {where}: {msg}" if where else f"invalid panel: {msg}"
        raise InputError(origin, problem, _key_line(text, loc)) from None


def load_panel(name_or_path: str | Path) -> Panel:
    """A built-in panel by name, or a panel TOML file by path."""
    name = str(name_or_path)
    builtins = builtin_panels()
    if name in builtins:
        text = (resources.files("tiap.judge") / "panels" / f"{name}.toml").read_text("utf-8")
        return parse_panel(text, f"<built-in panel {name}>")
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        return parse_panel(read_text_input(path, what="panel file"), str(path))
    raise TiapError(
        f"unknown panel '{name}' (built-in: {', '.join(builtins)}; "
        "or give the path of a .toml file)"
    )
