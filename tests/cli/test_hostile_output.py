"""Every command prints data inert: with hostile names and text in every input, no
control character, escape sequence or bidi override reaches stdout or stderr.

``labels import`` and ``labels export`` printed rater names raw (an OSC sequence
retitled the window, a U+202E reordered the line), and so did file names in
``rescore``'s "wrote ..." lines: a fix per command misses the next one. Printing
now goes through :mod:`tiap.cli.output` (and the progress reporters), which make
every line inert, and this test runs *every* command of the ``tiap`` tree — the
list is checked against the command tree, so a new command must be added here —
on inputs whose ids, names, texts and file names carry an OSC title sequence, a
screen clear, a C1 control and a bidi override, and a judge whose replies carry
them too. Each command must end as expected and print only inert text.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fuzz_support import write_lmeb
from support.loopback import LoopbackServer, Script, label_reply
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.cli.root import command
from tiap.traces.samples import sample_bundle_path

#: in ids, names and file names: a window-title OSC, a bidi override, a C1 CSI
H = "\x1b]0;PWNED\x07\u202e\x9b"
#: in texts: a screen clear, cursor home, markup, an isolate pair, BEL
T = " \x1b[2J\x1b[H [red]x[/red] \u2066evil\u2069 \x07"
#: how H's start is shown
SHOWN = "␛]0;PWNED␇"
#: every C0/C1 control but newline and tab, DEL, bidi overrides and isolates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
KEY_ENV = "TIAP_TEST_HOSTILE_KEY"


def _toml(text: str) -> str:
    """A TOML basic string holding ``text`` (controls as \\u escapes)."""
    return json.dumps(text)


def _hostile_record(rec: dict[str, Any]) -> dict[str, Any]:
    ids = ("query_id", "source_id", "memory_id", "id")
    lists = ("evidence", "source_ids", "ranking", "candidate_doc_ids")
    texts = ("question", "answer", "text", "speaker", "title")
    out = dict(rec)
    for key in ids:
        if isinstance(out.get(key), str):
            out[key] = out[key] + H
    for key in lists:
        if isinstance(out.get(key), list):
            out[key] = [v + H for v in out[key]]
    for key in texts:
        if isinstance(out.get(key), str):
            out[key] = out[key] + T
    return out


def _rewrite_jsonl(path: Path) -> None:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    path.write_text("".join(json.dumps(_hostile_record(r)) + "\n" for r in lines), "utf-8")


def _bundle(root: Path) -> Path:
    """The sample bundle with every id, text and the dataset name made hostile."""
    shutil.copytree(sample_bundle_path(), root)
    for path in root.rglob("*.jsonl"):
        _rewrite_jsonl(path)
    toml = root / "bundle.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace(
            'dataset = "tiap-sample"', f"dataset = {_toml('sample' + H)}"
        ),
        encoding="utf-8",
    )
    return root


def _task(root: Path) -> Path:
    write_lmeb(root)
    for name in ("queries.jsonl", "corpus.jsonl"):
        _rewrite_jsonl(root / name)
    qrels = root / "qrels.tsv"
    rows = [line.split("\t") for line in qrels.read_text(encoding="utf-8").splitlines()]
    qrels.write_text("".join(f"{q}{H}\t{d}{H}\t{g}\n" for q, d, g in rows), encoding="utf-8")
    return root


def _locomo(path: Path) -> Path:
    turns = [
        {"speaker": "Ann" + H, "dia_id": "D1:1", "text": "I adopted a puppy named Rex." + T},
        {"speaker": "Bob" + H, "dia_id": "D1:2", "text": "I play the violin." + T},
    ]
    sample = {
        "sample_id": "conv" + H,
        "conversation": {
            "speaker_a": "Ann" + H,
            "speaker_b": "Bob" + H,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns,
        },
        "qa": [
            {"question": "What pet?" + T, "answer": "a puppy" + T, "evidence": ["D1:1"],
             "category": 4},
        ],
    }  # fmt: skip
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def _longmemeval(path: Path) -> Path:
    session = [
        {"role": "user", "content": "I bought a red bike." + T, "has_answer": True},
        {"role": "assistant", "content": "Nice bike!" + T},
    ]
    record = {
        "question_id": "q1" + H,
        "question_type": "single-session-user" + H,
        "question": "What colour is my bike?" + T,
        "answer": "red" + T,
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_dates": ["2023/05/20 (Sat) 10:00"],
        "haystack_session_ids": ["answer_aa" + H],
        "haystack_sessions": [session],
        "answer_session_ids": ["answer_aa" + H],
    }
    path.write_text(json.dumps([record]), encoding="utf-8")
    return path


def _beam(root: Path) -> Path:
    folder = root / "1"
    folder.mkdir(parents=True)
    chat = [
        {
            "batch_number": 1,
            "time_anchor": "May-01-2024",
            "turns": [
                [
                    {
                        "role": "user",
                        "id": 0,
                        "content": "Help me learn chess." + T,
                        "question_type": "main_question",
                    },
                    {"role": "assistant", "id": 1, "content": "Start with e4." + T},
                ]
            ],
        }
    ]
    questions = {
        "information_extraction": [
            {"question": "Which move?" + T, "answer": "e4" + T, "source_chat_ids": [1]}
        ]
    }
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / "probing_questions.json").write_text(json.dumps(questions), encoding="utf-8")
    return root


@dataclass
class World:
    """The hostile inputs (under a directory whose name is hostile too)."""

    root: Path
    bundle: Path
    task: Path
    locomo: Path
    lme: Path
    beam: Path
    memories: Path
    labels: Path
    panel: Path
    workspace: Path
    url: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("hostile") / f"in{H}"
    root.mkdir()
    bundle = _bundle(root / f"bundle{H}")
    memories = root / f"memories{H}.jsonl"
    memories.write_text(
        json.dumps({"memory_id": "m" + H, "text": "a memory" + T, "source_ids": ["d1" + H]}) + "\n",
        encoding="utf-8",
    )
    # a judge whose replies carry a label outside the rubric, full of controls
    reply = label_reply("maybe" + H + T, rationale="because" + T)
    server = LoopbackServer(Script(default=reply))
    server.__enter__()
    panel = root / f"panel{H}.toml"
    panel.write_text(
        "\n".join(
            [
                f"name = {_toml('loop')}",
                "temperature = 0",
                "max_tokens = 50",
                "timeout_s = 5",
                "max_attempts = 1",
                "[[judges]]",
                'name = "judge-a"',
                'model = "openai/hostile"',
                f'api_base = "{server.url}"',
                f'api_key_env = "{KEY_ENV}"',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    workspace = root / f"w{H}.sqlite"
    from tiap.cases.extract import extract_cases
    from tiap.cases.sample import sample_subset
    from tiap.traces.bundle import read_bundle

    with Workspace(workspace) as ws:
        extract_cases(read_bundle(bundle), ws)
        sample_subset(ws, name="val" + H, n=4, overlap=2, seed=1)
        cases = ws.case_ids(subset="val" + H)
        for i, case_id in enumerate(cases):
            ws.add_label(
                LabelRecord(
                    case_id=case_id,
                    rater="ann" + H,
                    rater_kind="human",
                    label=("supports", "partial")[i % 2],
                    note="note" + T,
                )
            )
            ws.add_label(
                LabelRecord(
                    case_id=case_id,
                    rater="judge-b",
                    rater_kind="judge",
                    label=None,
                    reason="provider said" + T,
                )
            )
    labels = root / f"labels{H}.csv"
    labels.write_text(
        "case_id,rater,label,note\n" + "".join(f'{c},bob{H},supports,"{T}"\n' for c in cases),
        encoding="utf-8",
    )
    yield World(
        root=root,
        bundle=bundle,
        task=_task(root / f"task{H}"),
        locomo=_locomo(root / f"locomo{H}.json"),
        lme=_longmemeval(root / f"lme{H}.json"),
        beam=_beam(root / f"beam{H}" / "100K"),
        memories=memories,
        labels=labels,
        panel=panel,
        workspace=workspace,
        url=server.url,
    )
    server.__exit__(None, None, None)


@dataclass(frozen=True)
class Run:
    """A command's arguments (from the world and a fresh work directory), the exit
    statuses it may end with, and whether its output must show the hostile text."""

    args: Callable[[World, Path], list[str]]
    exits: tuple[int, ...] = (0,)
    shows: bool = True


def _import(dataset: str, source: Callable[[World], Path]) -> Run:
    return Run(
        lambda w, t: [
            "traces",
            "import",
            dataset,
            str(source(w)),
            "--out",
            str(t / f"o{H}"),
            "--memories",
            f"st={w.memories}",
            "--mapping",
            "jsonl",
        ]
    )


def _build(dataset: str, source: Callable[[World], Path]) -> Run:
    return Run(
        lambda w, t: [
            "traces",
            "build",
            dataset,
            str(source(w)),
            "--out",
            str(t / f"o{H}"),
            "-r",
            "none",
        ]
    )


def _db(w: World, t: Path) -> str:
    return str(t / w.workspace.name)


def _bundle_copy(w: World, t: Path) -> str:
    """A copy of the world's bundle in the work directory (for a command that writes
    into its bundle)."""
    copy = t / f"bundle-copy{H}"
    if not copy.exists():
        shutil.copytree(w.bundle, copy)
    return str(copy)


def _bundle_with_answers(w: World, t: Path) -> str:
    """A copy of the world's bundle whose run ``lexical-raw`` carries extractive answers
    (sentences of its hostile memories)."""
    from tiap.traces.bundle import read_bundle
    from tiap.traces.extractive import extract_answers, write_answers

    copy = _bundle_copy(w, t)
    write_answers(read_bundle(copy), extract_answers(read_bundle(copy), "lexical-raw"))
    return copy


COMMANDS: dict[str, Run] = {
    "answers extract": Run(
        lambda w, t: ["answers", "extract", _bundle_copy(w, t), "--run", "lexical-raw"]
    ),
    "rescore": Run(
        lambda w, t: ["rescore", str(w.bundle), "--out", str(t / f"r{H}"), "--resamples", "10"]
    ),
    "audit": Run(
        lambda w, t: [
            "audit",
            str(w.bundle),
            "--out",
            str(t / f"a{H}"),
            "--panel",
            str(w.panel),
            "--n",
            "4",
            "--overlap",
            "1",
            "--no-progress",
        ],
        exits=(2, 3),  # the judge's replies are invalid: it stops, or waits for people
    ),
    "demo": Run(lambda w, t: ["demo", "--out", str(t / f"demo{H}"), "--no-progress"], (0, 3)),
    "traces build locomo": _build("locomo", lambda w: w.locomo),
    "traces build longmemeval": _build("longmemeval", lambda w: w.lme),
    "traces build beam": _build("beam", lambda w: w.beam),
    "traces build lmeb": _build("lmeb", lambda w: w.task),
    "traces import locomo": _import("locomo", lambda w: w.locomo),
    "traces import longmemeval": _import("longmemeval", lambda w: w.lme),
    "traces import beam": _import("beam", lambda w: w.beam),
    "traces import lmeb": _import("lmeb", lambda w: w.task),
    "traces export lmeb": Run(
        lambda w, t: ["traces", "export", "lmeb", str(w.bundle), str(t / f"task{H}")]
    ),
    "cases extract": Run(
        lambda w, t: ["cases", "extract", str(w.bundle), "--db", str(t / f"new{H}.sqlite")]
    ),
    "cases from-qrels": Run(
        lambda w, t: [
            "cases",
            "from-qrels",
            str(w.task),
            "--db",
            str(t / f"q{H}.sqlite"),
            "--name",
            "pairs" + H,
        ]
    ),
    "cases from-answers": Run(
        lambda w, t: [
            "cases",
            "from-answers",
            _bundle_with_answers(w, t),
            "--run",
            "lexical-raw",
            "--db",
            str(t / f"a{H}.sqlite"),
            "--subset",
            "answers" + H,
            "--size",
            "3",
        ]
    ),
    "cases sample": Run(
        lambda w, t: ["cases", "sample", "--db", _db(w, t), "--name", "s" + H, "--n", "3"]
    ),
    "cases list": Run(lambda w, t: ["cases", "list", "--db", _db(w, t), "--subset", "val" + H]),
    "cases show": Run(lambda w, t: ["cases", "show", _first_case(w), "--db", _db(w, t)]),
    "cases subsets": Run(lambda w, t: ["cases", "subsets", "--db", _db(w, t)]),
    "cases versions": Run(lambda w, t: ["cases", "versions", "--db", _db(w, t)]),
    "cases rename-rater": Run(
        lambda w, t: [
            "cases",
            "rename-rater",
            "ann" + H,
            "anna" + H,
            "--kind",
            "human",
            "--db",
            _db(w, t),
        ]
    ),
    "judge run": Run(
        lambda w, t: [
            "judge",
            "run",
            "--db",
            _db(w, t),
            "--panel",
            str(w.panel),
            "--subset",
            "val" + H,
            "--no-progress",
        ],
        exits=(0, 2, 3),
        shows=False,  # the replies' text is stored, counted as label_outside_rubric
    ),
    "judge batches": Run(lambda w, t: ["judge", "batches", "--db", _db(w, t)], shows=False),
    "judge probe": Run(
        lambda w, t: [
            "judge",
            "probe",
            "--db",
            _db(w, t),
            "--panel",
            str(w.panel),
            "--subset",
            "val" + H,
            "--kind",
            "order,injection",
            "--out",
            str(t / f"probe{H}"),
            "--no-progress",
        ],
        exits=(0, 2, 3),  # the judge's replies are invalid: nothing to compare
        shows=False,
    ),
    "judge anchor freeze": Run(
        lambda w, t: [
            "judge",
            "anchor",
            "freeze",
            "anchor" + H,
            "--db",
            _db(w, t),
            "--subset",
            "val" + H,
            "--panel",
            str(w.panel),
        ],
        exits=(0, 2),
        shows=False,
    ),
    "judge drift": Run(
        lambda w, t: [
            "judge",
            "drift",
            "anchor" + H,
            "--db",
            _db(w, t),
            "--panel",
            str(w.panel),
            "--out",
            str(t / f"drift{H}"),
        ],
        exits=(2,),  # no anchor set of that name in the workspace
        shows=False,
    ),
    "judge panels": Run(lambda w, t: ["judge", "panels"], shows=False),
    "annotate tui": Run(
        lambda w, t: [
            "annotate",
            "tui",
            "--db",
            _db(w, t),
            "--rater",
            "ann" + H,
            "--subset",
            "val" + H,
        ],
        exits=(2,),  # not a terminal
        shows=False,
    ),
    "annotate labelstudio push": Run(
        lambda w, t: [
            "annotate",
            "labelstudio",
            "push",
            "--db",
            _db(w, t),
            "--url",
            f"http://127.0.0.1:9/x{H}",
            "--project",
            "p" + H,
        ],
        exits=(2,),  # no server there
    ),
    "annotate labelstudio pull": Run(
        lambda w, t: [
            "annotate",
            "labelstudio",
            "pull",
            "--db",
            _db(w, t),
            "--url",
            f"http://127.0.0.1:9/x{H}",
            "--project",
            "p" + H,
        ],
        exits=(2,),
    ),
    # numbers given by hand only: no text from data to show
    "agreement plan": Run(
        lambda w, t: ["agreement", "plan", "--kappa", "0.7", "--prevalence", "0.4"], shows=False
    ),
    "agreement report": Run(
        lambda w, t: [
            "agreement",
            "report",
            "--db",
            _db(w, t),
            "--out",
            str(t / f"ag{H}"),
            "--resamples",
            "0",
        ]
    ),
    "labels export": Run(
        lambda w, t: ["labels", "export", "--db", _db(w, t), "--out", str(t / f"l{H}.csv")]
    ),
    "labels import": Run(
        lambda w, t: [
            "labels",
            "import",
            str(w.labels),
            "--db",
            _db(w, t),
            "--rater-kind",
            "human",
        ]
    ),
}


def _first_case(w: World) -> str:
    with Workspace.open_readonly(w.workspace) as ws:
        return ws.case_ids(subset="val" + H)[0]


def _leaf_commands() -> list[str]:
    root = command()
    ctx = root.make_context("tiap", ["--help"], resilient_parsing=True)
    out: list[str] = []

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "list_commands"):  # a group (typer vendors its own click)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), [*path, name])
        else:
            out.append(" ".join(path))

    walk(root, [])
    return out


def test_every_command_is_run_here() -> None:
    assert sorted(COMMANDS) == sorted(_leaf_commands())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_prints_only_inert_text(
    tiap_cli,
    name: str,
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "ls-test")
    monkeypatch.setenv("TIAP_PROGRESS_INTERVAL", "0.001")  # progress lines too
    shutil.copy(world.workspace, tmp_path / world.workspace.name)
    run = COMMANDS[name]
    code, out, err = tiap_cli(run.args(world, tmp_path))
    assert code in run.exits, f"{name}: exit {code}\n{out}\n{err}"
    assert "Traceback" not in err
    for stream, text in (("stdout", out), ("stderr", err)):
        found = UNSAFE.search(text)
        assert found is None, f"{name}: {found.group()!r} on {stream}: {text[:2000]!r}"
    if run.shows:  # the hostile text was there to be printed, and it was, inert
        assert SHOWN in out + err, f"{name} printed none of the hostile text:\n{out}\n{err}"


#: what each module of the command line may call to print, beside tiap.cli.output
_PRINTS = re.compile(r"(?<![.\w])print\(|typer\.echo\(|Console\(|sys\.std(?:out|err)\.write\(")
_ALLOWED = {"output.py": 99, "progress_display.py": 1}  # its one line writer (inert)


def test_the_commands_print_only_through_the_output_functions() -> None:
    import tiap.cli

    folder = Path(tiap.cli.__file__).parent
    for path in sorted(folder.glob("*.py")):
        found = _PRINTS.findall(path.read_text(encoding="utf-8"))
        assert len(found) <= _ALLOWED.get(path.name, 0), (path.name, found)
