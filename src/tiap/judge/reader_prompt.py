"""What a reader model is asked, and with which settings (``tiap answers extract --reader``).

A *reader* answers each query of a run from the run's ranking, as the paper's
Appendix E does: an LLM given the ranking's first ``top`` memories. The prompt is
LoCoMo's own QA prompt (``QA_PROMPT`` of its evaluation code; version
:data:`PROMPT_VERSION`), one user message:

    CONTEXT

    Based on the above context, write an answer in the form of a short phrase for the
    following question. Answer with exact words from the context whenever possible.

    Question: QUESTION Short answer:

where CONTEXT holds the first ``top`` distinct memories of the ranking, best first, one
line each (:func:`memory_line`), in the form of LoCoMo's RAG context:

- a raw memory whose source has a speaker: ``TIME: SPEAKER said, "TEXT"`` (``TIME: ``
  only when the source has a time);
- any other memory: ``TIME: TEXT`` when its sources carry one time between them, else
  ``TEXT``.

Line breaks inside a memory's text are kept. An empty ranking gives an empty context
(the prompt is still sent: the reader may say it does not know). The exact text of the
message is part of the request, hence of its cache key: a changed memory, question,
``top`` or prompt version is a new request.

The reader's call settings are a one-judge panel (:func:`reader_panel`): its model is a
litellm model string, as a panel judge's, called on the judge routes with their retry
policy, reply bounding and pricing; the request asks for no response format (the answer
is free text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.errors import TiapError
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.request import judge_settings
from tiap.limits import MAX_CONCURRENCY, MAX_SECONDS, MAX_TOKENS
from tiap.traces.models import Memory, Source

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "PROMPT_VERSION",
    "QA_PROMPT",
    "READER_NAME",
    "ReaderSettings",
    "memory_line",
    "reader_messages",
    "reader_panel",
    "reader_request_settings",
]

#: the version of the prompt below and of the context's form; named in the method
PROMPT_VERSION = "locomo-qa/1"
#: LoCoMo's QA prompt (its evaluation code's ``QA_PROMPT``, without the surrounding
#: newlines of its triple-quoted string)
QA_PROMPT = (
    "Based on the above context, write an answer in the form of a short phrase for the "
    "following question. Answer with exact words from the context whenever possible.\n\n"
    "Question: {} Short answer:"
)
#: the rater-like name the reader's calls are made under (its one-judge panel's)
READER_NAME = "reader"
DEFAULT_MAX_TOKENS = 100
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_CONCURRENCY = 4
#: how the answers were made, in one sentence (recorded with them)
METHOD = (
    "reader: {model} answering LoCoMo's QA prompt ({version}) from the top {top} memories "
    "of the ranking (best first, with speaker and time where the bundle has them); "
    "temperature {temperature:g}, max_tokens {max_tokens}{seed}; the reply, stripped of "
    "surrounding white space, is the answer"
)


class ReaderSettings(BaseModel):
    """A reader's model and call settings (each number checked where it enters: the
    command line, or :func:`reader_panel` for the Python API)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    route: str = "auto"
    concurrency: int = DEFAULT_CONCURRENCY
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    seed: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None

    def method(self, top: int) -> str:
        """How the answers were made, in one sentence."""
        seed = "" if self.seed is None else f", seed {self.seed}"
        return METHOD.format(
            model=self.model,
            version=PROMPT_VERSION,
            top=top,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=seed,
        )


def _check_model(model: str) -> None:
    if not model.strip():
        raise TiapError("--reader: give a litellm model string (e.g. openai/gpt-4o-mini)")
    if model.startswith("tiap-offline/"):
        raise TiapError(
            f"--reader: '{model}' is one of tiap's offline judges, which answer rubrics, not "
            "questions; give a model that writes answers"
        )


def reader_panel(settings: ReaderSettings) -> Panel:
    """The one-judge panel the reader's calls go through (TiapError naming the setting
    when one is out of range or does not fit the model)."""
    _check_model(settings.model)
    judge: dict[str, Any] = {
        "name": READER_NAME,
        "model": settings.model,
        "api_base": settings.api_base,
        "api_key_env": settings.api_key_env,
        "route": settings.route,
        "concurrency": settings.concurrency,
        "response_format": "none",
        "input_cost_per_mtok": settings.input_cost_per_mtok,
        "output_cost_per_mtok": settings.output_cost_per_mtok,
        "batch": False,
    }
    try:
        spec = JudgeSpec.model_validate(judge)
        return Panel(
            name=READER_NAME,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            timeout_s=settings.timeout_s,
            seed=settings.seed,
            judges=[spec],
        )
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int))
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        option = _OPTIONS.get(where.rsplit(".", 1)[-1], where)
        raise TiapError(f"--reader: {option}: {msg}") from None


#: the command-line option of each reader setting, for errors
_OPTIONS = {
    "model": "--reader",
    "api_base": "--api-base",
    "api_key_env": "--api-key-env",
    "route": "--route",
    "concurrency": f"--concurrency (1 to {MAX_CONCURRENCY:,})",
    "max_tokens": f"--max-tokens (1 to {MAX_TOKENS:,})",
    "temperature": "--temperature (0 to 2)",
    "timeout_s": f"--timeout (above 0, at most {MAX_SECONDS:g} s)",
    "input_cost_per_mtok": "--input-cost-per-mtok",
    "output_cost_per_mtok": "--output-cost-per-mtok",
}


def reader_request_settings(panel: Panel) -> dict[str, Any]:
    """The request fields other than the messages: the judges' own
    (:func:`tiap.judge.request.judge_settings`: the same keys, the same cache key
    rule), with no rubric and no response format (the reader's judge asks for
    ``none``)."""
    return judge_settings(panel, panel.judges[0], None)


def memory_line(memory: Memory, sources: Mapping[str, Source]) -> str:
    """One memory as the context shows it (see the module docstring)."""
    linked = [sources[s] for s in memory.source_ids if s in sources]
    times = {s.time for s in linked if s.time}
    when = f"{next(iter(times))}: " if len(times) == 1 else ""
    if memory.raw and len(linked) == 1 and linked[0].speaker:
        return f'{when}{linked[0].speaker} said, "{memory.text}"'
    return f"{when}{memory.text}"


def reader_messages(question: str, context: Sequence[str]) -> list[dict[str, str]]:
    """The one user message a reader is sent."""
    body = "\n".join(context)
    return [{"role": "user", "content": f"{body}\n\n{QA_PROMPT.format(question)}"}]
