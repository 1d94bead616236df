"""Routes are registered by name and picked by the panel: a registered route runs a
judge through the same path as the built-in ones; the direct and offline routes
never import litellm (the direct route builds litellm's plain requests itself,
byte for byte); the litellm route announces its import first."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from judge_support import KEY_ENV, SECRET, rows

import tiap
from support.cli import process_env
from support.loopback import LoopbackServer
from tiap.cases import Workspace
from tiap.errors import TiapError
from tiap.judge import load_panel, parse_panel, run_panel
from tiap.judge import route_registry as registry
from tiap.judge.panel import JudgeSpec
from tiap.judge.routes import Attempt, BatchOffer, get_route, register_route, route_names
from tiap.judge.routes.openai_request import litellm_endpoint, plain_endpoint
from tiap.judge.routes.reply import Reply
from tiap.rubric import load_rubric


class Echo:
    """A route that answers every request with one label, and counts its calls."""

    name = "echo"

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []
        self.prepared: list[str] = []

    def prepare(self, judge: JudgeSpec, kwargs: Mapping[str, Any]) -> None:
        self.prepared.append(judge.name)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[object]:
        yield self

    async def call(self, attempt: Attempt) -> Reply:
        self.calls.append(attempt.kwargs)
        record = {
            "id": None,
            "model": attempt.kwargs["model"],
            "content": json.dumps({"rationale": "echo", "label": "partial"}),
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
        return Reply(record, 0.5)

    def batches(self, judge: JudgeSpec, api_key: str | None) -> BatchOffer:
        return BatchOffer(None, "no batches here")


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Echo:
    route = Echo()
    monkeypatch.setattr(registry, "_factories", dict(registry._factories))
    monkeypatch.setattr(registry, "_made", dict(registry._made))
    register_route("echo")(lambda: route)
    return route


def test_the_built_in_routes_are_registered_by_name() -> None:
    assert {"litellm", "offline", "openai"} <= set(route_names())
    for name in ("litellm", "offline", "openai"):
        assert get_route(name).name == name
        assert get_route(name) is get_route(name)  # made once
    with pytest.raises(TiapError, match="no judge route named 'nope'"):
        get_route("nope")
    judges = {
        "openai/gpt-4o-mini": "openai",
        "openrouter/x/y": "openai",
        "anthropic/claude-sonnet-4": "litellm",
        "tiap-offline/answer-containment": "offline",
    }
    for model, route in judges.items():
        assert JudgeSpec(name="a", model=model).resolved_route == route
    assert JudgeSpec(name="a", model="openai/m", route="litellm").resolved_route == "litellm"


def test_a_registered_route_judges_through_the_same_path(echo: Echo, make_workspace) -> None:
    with pytest.raises(TiapError, match=r"unknown route 'nowhere'.*registered route.*echo"):
        parse_panel('name = "p"\n[[judges]]\nname = "e"\nmodel = "m"\nroute = "nowhere"\n', "p")
    with pytest.raises(ValueError, match="registered already"):
        register_route("echo")(Echo)
    db = make_workspace(3)
    panel = parse_panel(
        'name = "p"\n[[judges]]\nname = "e"\nmodel = "custom/m"\nroute = "echo"\n', "<test>"
    )
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
        again = run_panel(ws, panel, load_rubric(), subset="val")
    assert echo.prepared == ["e"]
    assert len(echo.calls) == 3
    assert (summary.calls, summary.valid, summary.cost_usd) == (3, 3, 1.5)
    assert again.calls == 0  # labelled: not asked again
    assert rows(db, "SELECT DISTINCT label, model FROM labels") == [("partial", "custom/m")]
    assert rows(db, "SELECT COUNT(*) FROM model_calls WHERE status = 'ok'") == [(3,)]


@pytest.mark.parametrize(
    ("model", "route", "message"),
    [
        ("tiap-offline/answer-containment", "litellm", "runs in process"),
        ("openai/m", "offline", "route 'offline' is for tiap-offline/ models"),
        ("anthropic/m", "openai", "needs a model litellm reaches over the OpenAI protocol"),
    ],
)
def test_a_route_that_does_not_fit_the_model_is_a_panel_error(
    model: str, route: str, message: str
) -> None:
    text = f'name = "p"\n[[judges]]\nname = "e"\nmodel = "{model}"\nroute = "{route}"\n'
    with pytest.raises(TiapError, match=message):
        parse_panel(text, "<test>")


#: what the subprocess reports: whether litellm was imported, and the hook's calls
PROBE = """
import json, os, sys
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric
seen = []
def hook(route):
    seen.append([route, "litellm" in sys.modules])
with Workspace(sys.argv[1]) as ws:
    summary = run_panel(ws, load_panel(sys.argv[2]), load_rubric(), subset="val",
                        on_route_load=hook)
print(json.dumps({"litellm": "litellm" in sys.modules, "hook": seen,
                  "valid": summary.valid}))
"""


def probe(db: Path, panel: str | Path) -> dict[str, Any]:
    env = process_env()
    env["PYTHONPATH"] = str(Path(tiap.__file__).resolve().parents[1])
    env[KEY_ENV] = SECRET
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(db), str(panel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_direct_and_offline_judges_never_import_litellm(
    make_workspace, loopback: LoopbackServer, tmp_path: Path
) -> None:
    offline = probe(make_workspace(3, name="offline.db"), "offline")
    assert offline == {"litellm": False, "hook": [], "valid": 15}
    panel = tmp_path / "direct.toml"
    lines = ['name = "direct"', "timeout_s = 5", "max_tokens = 50"]
    for name, model in (("a", "openai/gpt-4o-mini"), ("b", "hosted_vllm/judge-x")):
        lines += [
            "[[judges]]",
            f'name = "{name}"',
            f'model = "{model}"',
            f'api_base = "{loopback.url}"',
            f'api_key_env = "{KEY_ENV}"',
        ]
    lines += ["[[judges]]", 'name = "c"', 'model = "tiap-offline/answer-containment"']
    panel.write_text("\n".join(lines) + "\n", encoding="utf-8")
    direct = probe(make_workspace(2, name="direct.db"), panel)
    assert direct == {"litellm": False, "hook": [], "valid": 6}
    assert loopback.count == 4


def test_the_litellm_route_is_announced_before_litellm_is_imported(
    make_workspace, loopback: LoopbackServer, tmp_path: Path
) -> None:
    panel = tmp_path / "lite.toml"
    panel.write_text(
        "\n".join(
            [
                'name = "lite"',
                "[[judges]]",
                'name = "a"',
                'model = "openai/gpt-4o-mini"',
                'route = "litellm"',
                f'api_base = "{loopback.url}"',
                f'api_key_env = "{KEY_ENV}"',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    got = probe(make_workspace(2), panel)
    assert got == {"litellm": True, "hook": [["litellm", False]], "valid": 2}


MATRIX_MODELS = (
    "openai/gpt-4o-mini",
    "openai/gpt-4o",
    "openai/gpt-4.1-nano",
    "openai/gpt-3.5-turbo",
    "openai/my-local-model",
    "openrouter/anthropic/claude-sonnet-4",
    "openrouter/openai/o3",
    "openrouter/google/gemini-2.5-pro",
    "hosted_vllm/judge-x",
    "hosted_vllm/o3",
)


@pytest.mark.parametrize("model", MATRIX_MODELS)
def test_the_direct_route_builds_litellm_s_plain_requests_byte_for_byte(model: str) -> None:
    rubric = load_rubric()
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "é <q>"}]
    for fmt in ("json_schema", "json_object", "none"):
        for temperature, seed in ((0.0, None), (0.7, 7), (1, None)):
            panel = load_panel("frontier").model_copy(update={"temperature": temperature})
            judge = JudgeSpec(
                name="a",
                model=model,
                api_base=None if model.startswith("openrouter/") else "http://127.0.0.1:9/v1/",
                response_format=fmt,
            )
            from tiap.judge.request import judge_settings, litellm_kwargs

            settings = {**judge_settings(panel, judge, rubric), "seed": seed}
            kwargs = litellm_kwargs(settings, messages, 5.0)
            ours = plain_endpoint(kwargs, judge.provider)
            theirs = litellm_endpoint(kwargs, judge.provider)
            assert ours is not None, (model, fmt)
            assert theirs is not None
            assert (ours.url, ours.body(messages)) == (theirs.url, theirs.body(messages))


@pytest.mark.parametrize(
    ("model", "params"),
    [
        ("openai/o3-mini", {}),
        ("openai/gpt-5-mini", {}),
        ("openai/gpt-5-chat-latest", {}),  # (litellm's plain mapping: left to it all the same)
        ("openai/gpt-4o-audio-preview", {}),
        ("openai/gpt-4o-mini", {"top_p": 0.5}),
        ("openrouter/anthropic/claude-sonnet-4", {"transforms": ["middle-out"]}),
    ],
)
def test_requests_litellm_maps_its_own_way_are_left_to_litellm(
    model: str, params: dict[str, Any]
) -> None:
    from tiap.judge.request import litellm_kwargs

    settings = {
        "model": model,
        "api_base": "http://127.0.0.1:9/v1",
        "temperature": 0.0,
        "max_tokens": 50,
        "response_format": None,
        "seed": None,
        "params": params,
    }
    kwargs = litellm_kwargs(settings, [{"role": "user", "content": "x"}], 5.0)
    assert plain_endpoint(kwargs, model.split("/", 1)[0]) is None


def test_finish_reasons_are_mapped_as_litellm_maps_them() -> None:
    from litellm.litellm_core_utils.core_helpers import _FINISH_REASON_MAP

    from tiap.judge.routes.openai_http import FINISH_REASONS

    assert dict(_FINISH_REASON_MAP) == FINISH_REASONS
