"""Panels, the request hash, failure classification, Retry-After, scrubbing, prices."""

from __future__ import annotations

import email.utils
import hashlib
import json
import time

import pytest

from tiap.errors import TiapError
from tiap.judge import builtin_panels, load_panel
from tiap.judge.failures import (
    MalformedReply,
    ProviderStatusError,
    classify,
    retry_after_s,
    scrub,
)
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.pricing import judge_price, table_price
from tiap.judge.request import (
    canonical_json,
    full_request,
    judge_settings,
    litellm_kwargs,
    request_hash,
)
from tiap.rubric import Reason, load_rubric, render_messages


def test_builtin_panels() -> None:
    assert builtin_panels() == ["frontier", "offline", "offline-llm"]
    frontier = load_panel("frontier")
    assert frontier.temperature == 0
    assert len(frontier.judges) == 5
    assert {j.api_key_env for j in frontier.judges} == {"OPENROUTER_API_KEY"}
    assert all(j.model.startswith("openrouter/") for j in frontier.judges)
    assert all(j.kind == "llm" for j in frontier.judges)
    assert all(judge_price(j) is not None for j in frontier.judges)
    offline = load_panel("offline")
    assert [j.kind for j in offline.judges] == ["baseline"] * 5
    assert all(j.api_key_env is None for j in offline.judges)
    llm = load_panel("offline-llm")
    assert sorted(j.kind for j in llm.judges) == ["baseline"] * 4 + ["local_llm"]


def test_request_hash_is_sha256_of_the_two_canonical_halves() -> None:
    rubric = load_rubric()
    panel = load_panel("frontier")
    judge = panel.judges[0]
    fields = {
        "question": "Q?",
        "answer": "A",
        "category": "c",
        "evidence": "E",
        "memory": "M",
        "rank": "1",
    }
    msgs = render_messages(rubric, fields)
    settings = judge_settings(panel, judge, rubric)
    h = request_hash(canonical_json(settings), canonical_json(msgs))
    by_hand = hashlib.sha256(
        (
            json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            + "\n"
            + json.dumps(msgs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        ).encode()
    ).hexdigest()
    assert h == by_hand
    # what changes the output changes the key ...
    for change in (
        {"temperature": 0.5},
        {"max_tokens": 7},
        {"seed": 3},
    ):
        other = judge_settings(panel.model_copy(update=change), judge, rubric)
        assert request_hash(canonical_json(other), canonical_json(msgs)) != h
    for change in ({"model": "x/y"}, {"api_base": "http://b"}, {"response_format": "none"}):
        other = judge_settings(panel, judge.model_copy(update=change), rubric)
        assert request_hash(canonical_json(other), canonical_json(msgs)) != h
    # ... what does not (the key's variable, timeout, concurrency, name) does not
    for change in ({"api_key_env": "OTHER"}, {"concurrency": 99}, {"name": "z"}):
        other = judge_settings(panel, judge.model_copy(update=change), rubric)
        assert request_hash(canonical_json(other), canonical_json(msgs)) == h
    other = judge_settings(panel.model_copy(update={"timeout_s": 1}), judge, rubric)
    assert request_hash(canonical_json(other), canonical_json(msgs)) == h
    assert "api_key" not in full_request(settings, msgs)


def test_litellm_kwargs_disable_litellm_retries() -> None:
    rubric = load_rubric()
    panel = load_panel("frontier")
    settings = judge_settings(panel, panel.judges[0], rubric)
    kwargs = litellm_kwargs(settings, [{"role": "user", "content": "x"}], 12.0)
    assert kwargs["max_retries"] == 0
    assert "num_retries" not in kwargs
    assert kwargs["timeout"] == 12.0
    assert kwargs["temperature"] == 0
    assert kwargs["response_format"]["json_schema"]["strict"] is True
    assert "api_base" not in kwargs  # not set for OpenRouter
    assert "seed" not in kwargs


class FakeError(Exception):
    def __init__(self, status: int | None, headers: dict | None = None, text: str = "") -> None:
        super().__init__(text or f"status {status}")
        self.status_code = status
        self.litellm_response_headers = headers


class Timeout(Exception):
    """Named like litellm's timeout, but not one: names are never read."""


def _raised_while_handling(outer_factory, inner: BaseException) -> BaseException:
    """``outer`` raised while ``inner`` was being handled (as litellm wraps errors)."""
    try:
        try:
            raise inner
        except BaseException:
            raise outer_factory() from None
    except BaseException as exc:
        exc.__context__ = inner
        return exc


def _library_errors() -> list[tuple[BaseException, str, bool, bool]]:
    """Real exceptions of litellm, the openai SDK, httpx and aiohttp, as a call raises them."""
    import aiohttp
    import httpx
    import litellm
    import openai

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, request=request)
    return [
        (litellm.Timeout("timed out", model="m", llm_provider="openai"), "timeout", True, False),
        (openai.APITimeoutError(request=request), "timeout", True, False),
        (httpx.ReadTimeout("slow", request=request), "timeout", True, False),
        (aiohttp.ServerTimeoutError("slow"), "timeout", True, False),
        (
            litellm.RateLimitError("slow down", llm_provider="openai", model="m"),
            "rate_limited",
            True,
            False,
        ),
        (
            openai.RateLimitError("slow down", response=response, body=None),
            "rate_limited",
            True,
            False,
        ),
        (
            litellm.APIConnectionError("refused", llm_provider="openai", model="m"),
            "connection_error",
            True,
            False,
        ),
        # the openai route reports a reset as a 500 raised while handling the SDK's
        # connection error: its type decides, not its status or its message
        (
            _raised_while_handling(
                lambda: litellm.InternalServerError(
                    "Connection error.", llm_provider="openai", model="m"
                ),
                openai.APIConnectionError(request=request),
            ),
            "connection_error",
            True,
            False,
        ),
        (aiohttp.ServerDisconnectedError(), "connection_error", True, False),
        (ConnectionResetError(), "connection_error", True, False),
        (
            litellm.ContentPolicyViolationError("no", model="m", llm_provider="openai"),
            "content_filter",
            False,
            False,
        ),
        (
            _raised_while_handling(
                lambda: litellm.APIError(200, "bad body", llm_provider="x", model="m"),
                json.JSONDecodeError("Expecting value", "{x", 1),
            ),
            "server_error",
            True,
            False,
        ),
        (MalformedReply("no choices"), "server_error", True, False),
        (ProviderStatusError(429, "HTTP 429", {}), "rate_limited", True, False),
        (ProviderStatusError(404, "HTTP 404", {}), "not_found", False, True),
    ]


@pytest.mark.parametrize(
    ("exc", "reason", "retryable", "fatal"),
    [
        (FakeError(429), "rate_limited", True, False),
        (FakeError(500), "server_error", True, False),
        (FakeError(502), "server_error", True, False),
        (FakeError(503), "server_error", True, False),
        (FakeError(408), "timeout", True, False),
        (TimeoutError(), "timeout", True, False),
        (FakeError(400), "bad_request", False, False),
        (FakeError(422), "bad_request", False, False),
        (FakeError(401), "auth_error", False, True),
        (FakeError(403), "auth_error", False, True),
        (FakeError(404), "not_found", False, True),
        (ValueError("odd"), "error", False, False),
        # neither a class name nor a message text decides
        (Timeout("read timed out"), "error", False, False),
        (FakeError(500, text="Connection error."), "server_error", True, False),
    ],
)
def test_classify(exc: BaseException, reason: str, retryable: bool, fatal: bool) -> None:
    f = classify(exc)
    assert (f.reason, f.retryable, f.fatal) == (reason, retryable, fatal)
    assert isinstance(f.reason, Reason)


def test_classify_by_the_libraries_exception_types() -> None:
    for exc, reason, retryable, fatal in _library_errors():
        f = classify(exc)
        assert (f.reason, f.retryable, f.fatal) == (reason, retryable, fatal), repr(exc)


def test_retry_after_seconds_ms_and_http_date() -> None:
    assert retry_after_s(FakeError(429, {"retry-after": "7"})) == 7.0
    assert retry_after_s(FakeError(429, {"Retry-After": "1.5"})) == 1.5
    assert retry_after_s(FakeError(429, {"retry-after-ms": "250"})) == 0.25
    assert retry_after_s(FakeError(429, {})) is None
    assert retry_after_s(FakeError(429, None)) is None
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_s(FakeError(429, {"retry-after": when})) <= 31
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_s(FakeError(429, {"retry-after": past})) == 0.0


def test_scrub_and_classify_never_leak_the_key() -> None:
    key = "sk-live-abcdef123456"
    assert scrub(f"bad key {key}!", [key]) == "bad key [redacted]!"
    assert scrub("short", ["abc"]) == "short"  # too short to be a key: left alone
    assert scrub(None, [key]) is None
    f = classify(FakeError(401, text=f"Incorrect API key provided: {key}"), [key])
    assert key not in f.message
    assert "[redacted]" in f.message


def test_panel_validation_and_missing_key(monkeypatch) -> None:
    with pytest.raises(ValueError, match="both"):
        JudgeSpec(name="a", model="m", input_cost_per_mtok=1.0)
    with pytest.raises(ValueError, match="unique"):
        Panel(name="p", judges=[JudgeSpec(name="a", model="m"), JudgeSpec(name="a", model="n")])
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(TiapError, match="NO_SUCH_KEY_VAR"):
        JudgeSpec(name="a", model="m", api_key_env="NO_SUCH_KEY_VAR").api_key()
    monkeypatch.setenv("NO_SUCH_KEY_VAR", "sekret")
    assert JudgeSpec(name="a", model="m", api_key_env="NO_SUCH_KEY_VAR").api_key() == "sekret"


def test_prices_panel_then_table_then_unknown() -> None:
    priced = JudgeSpec(name="a", model="x", input_cost_per_mtok=2.0, output_cost_per_mtok=8.0)
    p = judge_price(priced)
    assert p is not None
    assert p.cost(1_000_000, 500_000) == pytest.approx(6.0)
    # litellm's table, without importing litellm: gpt-4o-mini is $0.15 / $0.60 per Mtok
    p = table_price("openai/gpt-4o-mini")
    assert p is not None
    assert (p.input, p.output) == pytest.approx((0.15e-6, 0.6e-6))
    assert table_price("openai/no-such-model-zz") is None
    assert judge_price(JudgeSpec(name="o", model="tiap-offline/qa-overlap")).input == 0.0
