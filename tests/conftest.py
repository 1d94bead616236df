"""Shared fixtures: the offline environment, the shared benchmark data, the sample bundle."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Set before any test module is imported, so an import of litellm or a Hugging Face
# library during collection already sees them.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_delivered() -> None:
    """Ctrl-C reaches the tests and the commands they start, however the suite was
    launched: a shell starts background jobs with SIGINT ignored, an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt handler.
    The Ctrl-C tests send SIGINT themselves, so they need the default disposition (a
    handler set here is reset to the default in every process started from here)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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

    def require(module: str, extra: str) -> None:
        if importlib.util.find_spec(module) is not None:
            return
        reason = f"the '{extra}' extra is not installed (no module {module})"
        if os.environ.get("TIAP_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"{reason}, and TIAP_REQUIRE_EXTRAS=1 requires every extra")
        pytest.skip(reason)

    return require


@pytest.fixture(scope="session")
def sample_bundle_dir() -> Path:
    """The built-in sample bundle (package data; read-only: copy it before editing)."""
    from tiap.traces.samples import sample_bundle_path

    return sample_bundle_path()


@pytest.fixture(scope="session")
def raw_bundles(shared_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """LoCoMo and LongMemEval (oracle) built with ``tiap traces build -s raw`` from the
    shared data, once per session: ``{"locomo": DIR, "longmemeval": DIR}``."""
    from support.lmeb import build_bundle

    out = tmp_path_factory.mktemp("raw-bundles")
    return {
        "locomo": build_bundle(
            "locomo", shared_data_dir / "locomo" / "locomo10.json", out / "locomo"
        ),
        "longmemeval": build_bundle(
            "longmemeval",
            shared_data_dir / "longmemeval" / "longmemeval_oracle.reconstructed.json",
            out / "longmemeval",
        ),
    }
