"""The ``tiap`` command line for tests: in this process, or in a process of its own.

:class:`TiapCli` (the ``tiap_cli`` fixture of ``tests/conftest.py``) runs
``tiap ARGS`` and returns a :class:`CliResult`: the exit status and what was printed
on stdout and stderr. It is the tuple ``(code, out, err)`` and also answers to
``returncode``/``stdout``/``stderr``, as a finished subprocess does.

- ``tiap_cli(*args)`` calls :func:`tiap.cli.main` in this process with stdout and
  stderr captured (no interpreter start-up, no import of the command's libraries
  again). The working directory and environment variables given are set for the
  call and restored after it; an exception that escapes the command is printed on
  stderr with status 1, as the interpreter does. What the command printed is also
  written through to this process's streams, so ``capsys`` reads it and pytest shows
  it with a failure.
- ``tiap_cli.subprocess(*args)`` runs the command in a fresh interpreter: for what
  only a process of its own shows (what is imported at start-up, the process's own
  state: its environment, signals, file-mode capabilities, exit at interpreter
  shutdown).
- ``tiap_cli.popen(*args)`` starts it in the background (its own session, so that a
  SIGINT to its process group reaches it as a terminal's Ctrl-C would): for signals,
  ``kill -9`` and output read while it runs.

An argument may also be a list or tuple of arguments (``tiap_cli(["cases", "list"])``);
paths are passed as strings. The subprocesses import this tree's ``tiap`` (its
``src`` first on ``PYTHONPATH``) and run offline (no model-cost-map download, no
Hugging Face hub).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess as _subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tiap

Arg = str | Path | int | float
Args = Arg | Sequence[Arg]

#: the environment every ``tiap`` process starts with (a value set already wins)
OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
#: this tree's ``src`` (the ``tiap`` the tests import), first on a subprocess's path
SRC = str(Path(tiap.__file__).resolve().parents[1])
#: how a subprocess starts the command: as the console script does
ENTRY = "import sys; from tiap.cli import main; main(sys.argv[1:])"


def argv(args: Sequence[Args]) -> list[str]:
    """The arguments as strings, lists and tuples spliced in."""
    out: list[str] = []
    for a in args:
        if isinstance(a, list | tuple):
            out.extend(str(x) for x in a)
        else:
            out.append(str(a))
    return out


@dataclass(frozen=True)
class CliResult:
    """What a ``tiap`` command did: its exit status and output."""

    code: int
    out: str
    err: str
    args: list[str] = field(default_factory=list)

    # a finished subprocess's names
    @property
    def returncode(self) -> int:
        return self.code

    @property
    def stdout(self) -> str:
        return self.out

    @property
    def stderr(self) -> str:
        return self.err

    # as the tuple ``(code, out, err)``
    def __iter__(self) -> Iterator[Any]:
        return iter((self.code, self.out, self.err))

    def __getitem__(self, index: int) -> Any:
        return (self.code, self.out, self.err)[index]

    def __len__(self) -> int:
        return 3

    def ok(self) -> CliResult:
        """This result, after checking that the command succeeded (exit status 0)."""
        assert self.code == 0, f"tiap {' '.join(self.args)} exited {self.code}:\n{self.err}"
        return self


def process_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """A ``tiap`` subprocess's environment: this one, offline, this tree's ``src``
    first on ``PYTHONPATH``, then ``env`` (a ``None`` value removes the variable)."""
    full = {**OFFLINE, **os.environ}
    path = [p for p in full.get("PYTHONPATH", "").split(os.pathsep) if p and p != SRC]
    full["PYTHONPATH"] = os.pathsep.join([SRC, *path])
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return full


@contextlib.contextmanager
def _environ(env: Mapping[str, str | None]) -> Iterator[None]:
    """``env`` set in ``os.environ`` for the block (``None``: unset), then restored."""
    saved = {name: os.environ.get(name) for name in env}
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _cwd(path: Path | str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _status(code: object) -> int:
    """The exit status of ``SystemExit(code)``, as the interpreter gives it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_in_process(
    args: Sequence[Args],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> CliResult:
    """``tiap ARGS`` through :func:`tiap.cli.main` in this process."""
    from tiap.cli import main

    words = argv(args)
    out, err = io.StringIO(), io.StringIO()
    with (
        _cwd(cwd),
        _environ(env or {}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            main(words)
            code = 0
        except SystemExit as exc:
            code = _status(exc.code)
        except Exception:  # what the interpreter does with an uncaught exception
            traceback.print_exc()
            code = 1
    result = CliResult(code, out.getvalue(), err.getvalue(), words)
    sys.stdout.write(result.out)
    sys.stderr.write(result.err)
    return result


def command(args: Sequence[Args], python: Sequence[str] = ()) -> list[str]:
    """The argv of ``tiap ARGS`` in a fresh interpreter (``python``: its options)."""
    return [sys.executable, *python, "-c", ENTRY, *argv(args)]


def run_subprocess(
    args: Sequence[Args],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 600,
    python: Sequence[str] = (),
    preexec_fn: Callable[[], Any] | None = None,
) -> CliResult:
    """``tiap ARGS`` in a fresh interpreter; waits for it to end."""
    cmd = command(args, python)
    proc = _subprocess.run(
        cmd,
        cwd=cwd,
        env=process_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=preexec_fn,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, cmd[3 + len(python) :])


def spawn(
    args: Sequence[Args],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
    stdout: int | None = _subprocess.PIPE,
    stderr: int | None = _subprocess.PIPE,
    new_session: bool = True,
) -> _subprocess.Popen[str]:
    """``tiap ARGS`` started in a fresh interpreter, in the background."""
    return _subprocess.Popen(
        command(args),
        cwd=cwd,
        env=process_env(env),
        stdout=stdout,
        stderr=stderr,
        text=True,
        start_new_session=new_session,
    )


@dataclass(frozen=True)
class TiapCli:
    """``tiap`` for tests (see the module doc); ``env``: variables every run sets."""

    env: Mapping[str, str | None] = field(default_factory=dict)

    def with_env(self, **env: str | None) -> TiapCli:
        """The same, with these variables set for every run (``None``: unset)."""
        return TiapCli({**self.env, **env})

    def __call__(
        self,
        *args: Args,
        cwd: Path | str | None = None,
        env: Mapping[str, str | None] | None = None,
    ) -> CliResult:
        """``tiap ARGS`` in this process."""
        return run_in_process(args, cwd=cwd, env={**self.env, **(env or {})})

    def ok(self, *args: Args, **options: Any) -> CliResult:
        """``tiap ARGS`` in this process, checked to succeed."""
        return self(*args, **options).ok()

    def subprocess(
        self,
        *args: Args,
        cwd: Path | str | None = None,
        env: Mapping[str, str | None] | None = None,
        timeout: float = 600,
        python: Sequence[str] = (),
        preexec_fn: Callable[[], Any] | None = None,
    ) -> CliResult:
        """``tiap ARGS`` in a fresh interpreter (``python``: its options, e.g.
        ``("-X", "importtime")``)."""
        return run_subprocess(
            args,
            cwd=cwd,
            env={**self.env, **(env or {})},
            timeout=timeout,
            python=python,
            preexec_fn=preexec_fn,
        )

    def popen(
        self,
        *args: Args,
        cwd: Path | str | None = None,
        env: Mapping[str, str | None] | None = None,
        stdout: int | None = _subprocess.PIPE,
        stderr: int | None = _subprocess.PIPE,
        new_session: bool = True,
    ) -> _subprocess.Popen[str]:
        """``tiap ARGS`` started in a fresh interpreter, in the background."""
        return spawn(
            args,
            cwd=cwd,
            env={**self.env, **(env or {})},
            stdout=stdout,
            stderr=stderr,
            new_session=new_session,
        )
