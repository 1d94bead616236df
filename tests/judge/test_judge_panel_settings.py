"""Panel settings are checked where they enter (a panel file, the Python API): errors
name the file, the key and its line, and exit 2 on the command line; the routes a
judge takes; new settings leave the cache keys of existing panels as they were."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from tiap.cli import main
from tiap.errors import InputError
from tiap.judge import load_panel, parse_panel
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.request import canonical_json, judge_settings, settings_hash
from tiap.rubric import load_rubric

HEAD = 'name = "p"\ndescription = "settings"\n'
JUDGES = '[[judges]]\nname = "a"\nmodel = "openai/x"\n[[judges]]\nname = "b"\nmodel = "openai/y"\n'


@pytest.mark.parametrize(
    ("setting", "line", "key"),
    [
        ("timeout_s = 0", 3, "timeout_s"),
        ("timeout_s = -1.5", 3, "timeout_s"),
        ("timeout_s = inf", 3, "timeout_s"),
        ("timeout_s = nan", 3, "timeout_s"),
        ("timeout_s = 1e9", 3, "timeout_s"),
        ('timeout_s = "5"', 3, "timeout_s"),
        ("backoff_initial_s = 0", 3, "backoff_initial_s"),
        ("backoff_initial_s = inf", 3, "backoff_initial_s"),
        ("backoff_max_s = -inf", 3, "backoff_max_s"),
        ("retry_after_max_s = 0", 3, "retry_after_max_s"),
        ("retry_after_max_s = nan", 3, "retry_after_max_s"),
        ("max_attempts = 0", 3, "max_attempts"),
        ("max_attempts = 51", 3, "max_attempts"),
        ("max_attempts = 2.5", 3, "max_attempts"),
        ("max_attempts = true", 3, "max_attempts"),
        ("max_reply_bytes = 0", 3, "max_reply_bytes"),
        ("max_reply_bytes = 99999999999", 3, "max_reply_bytes"),
        ("max_tokens = 0", 3, "max_tokens"),
        ('max_tokens = "400"', 3, "max_tokens"),
        ("temperature = -0.1", 3, "temperature"),
        ("temperature = 2.5", 3, "temperature"),
        ("temperature = nan", 3, "temperature"),
    ],
)
def test_a_bad_panel_setting_names_the_file_the_key_and_its_line(
    tmp_path: Path, setting: str, line: int, key: str
) -> None:
    path = tmp_path / "panel.toml"
    path.write_text(HEAD + setting + "\n" + JUDGES, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_panel(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert f"invalid panel: {key}: " in str(info.value)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("concurrency = 0", "greater than or equal to 1"),
        ("concurrency = 1025", "less than or equal to 1024"),
        ("concurrency = 4.0", "valid integer"),
        ("input_cost_per_mtok = inf\noutput_cost_per_mtok = 1", "finite"),
        ('route = "teleport"', "'auto', 'openai' or 'litellm'"),
    ],
)
def test_a_bad_judge_setting_names_the_judge_and_its_line(
    tmp_path: Path, setting: str, message: str
) -> None:
    path = tmp_path / "panel.toml"
    path.write_text(HEAD + JUDGES + setting + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_panel(path)
    key = setting.split(" ", 1)[0]
    assert f"invalid panel: judges[1].{key} (judge 'b'): " in str(info.value)
    assert message in str(info.value)
    assert info.value.line == 9


def test_backoff_max_below_backoff_initial_is_refused(tmp_path: Path) -> None:
    text = HEAD + "backoff_initial_s = 5\nbackoff_max_s = 2\n" + JUDGES
    with pytest.raises(InputError, match=r"p\.toml:4: invalid panel: backoff_max_s: must be at"):
        parse_panel(text, "p.toml")
    # the default maximum (60 s) below a larger initial backoff is refused too
    with pytest.raises(InputError, match="backoff_max_s: must be at least backoff_initial_s"):
        parse_panel(HEAD + "backoff_initial_s = 100\n" + JUDGES, "p.toml")
    assert parse_panel(HEAD + "backoff_initial_s = 5\n" + JUDGES, "p.toml").backoff_max_s == 60


def test_the_python_api_checks_the_same_settings() -> None:
    judge = JudgeSpec(name="a", model="openai/x")
    for bad in (
        {"timeout_s": float("inf")},
        {"timeout_s": 0},
        {"backoff_initial_s": float("nan")},
        {"backoff_initial_s": 2.0, "backoff_max_s": 1.0},
        {"retry_after_max_s": -1},
        {"max_attempts": 0},
        {"max_reply_bytes": 0},
        {"max_tokens": 0},
        {"temperature": 3},
    ):
        with pytest.raises(ValidationError):
            Panel(name="p", judges=[judge], **bad)
    with pytest.raises(ValidationError):
        JudgeSpec(name="a", model="openai/x", concurrency=0)
    with pytest.raises(ValidationError, match="route 'openai' needs"):
        JudgeSpec(name="a", model="gemini/x", route="openai")


def test_a_bad_setting_exits_2_with_one_line(capsys, tmp_path: Path) -> None:
    path = tmp_path / "panel.toml"
    path.write_text(HEAD + "timeout_s = inf\n" + JUDGES, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["judge", "run", "--db", str(tmp_path / "w.db"), "--panel", str(path)])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"tiap: error: {path}:3: invalid panel: timeout_s: Input should be a finite number"
    ]


def test_routes_by_provider_and_setting() -> None:
    panel = parse_panel(
        'name = "p"\n'
        '[[judges]]\nname = "o"\nmodel = "openai/gpt-4o-mini"\n'
        '[[judges]]\nname = "r"\nmodel = "openrouter/anthropic/claude-sonnet-4"\n'
        '[[judges]]\nname = "v"\nmodel = "hosted_vllm/m"\napi_base = "http://h/v1"\n'
        '[[judges]]\nname = "l"\nmodel = "openai/gpt-4o"\nroute = "litellm"\n'
        '[[judges]]\nname = "g"\nmodel = "gemini/gemini-2.0-flash"\n'
        '[[judges]]\nname = "f"\nmodel = "tiap-offline/qa-overlap"\n',
        "p.toml",
    )
    assert {j.name: j.resolved_route for j in panel.judges} == {
        "o": "openai",
        "r": "openai",
        "v": "openai",
        "l": "litellm",
        "g": "litellm",
        "f": "offline",  # tiap's in-process judges: a route of their own
    }
    assert {j.resolved_route for j in load_panel("frontier").judges} == {"openai"}
    assert {j.resolved_route for j in load_panel("offline").judges} == {"offline"}
    # one model at one api_base takes one route (a call finds its judge by them)
    with pytest.raises(InputError, match="take one route"):
        parse_panel(
            'name = "p"\n[[judges]]\nname = "a"\nmodel = "openai/x"\n'
            '[[judges]]\nname = "b"\nmodel = "openai/x"\nroute = "litellm"\n',
            "p.toml",
        )


def test_new_settings_leave_existing_cache_keys_alone() -> None:
    rubric = load_rubric()
    panel = load_panel("frontier")
    judge = panel.judges[0]
    settings = judge_settings(panel, judge, rubric)
    assert set(settings) == {
        "model",
        "api_base",
        "temperature",
        "max_tokens",
        "response_format",
        "seed",
        "params",
    }
    same = [
        judge_settings(panel, judge.model_copy(update={"route": "litellm"}), rubric),
        judge_settings(panel.model_copy(update={"max_reply_bytes": 64 * 1024}), judge, rubric),
    ]
    assert all(settings_hash(s) == settings_hash(settings) for s in same)
    # a reply cap other than the default is part of the key (a cut reply is what is kept)
    bigger = judge_settings(panel.model_copy(update={"max_reply_bytes": 1 << 20}), judge, rubric)
    assert bigger["max_reply_bytes"] == 1 << 20
    assert canonical_json(bigger) != canonical_json(settings)
