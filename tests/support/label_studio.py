"""The Label Studio server the tests use (started by ``.ci/labelstudio``).

Two ways to name it: ``TIAP_TEST_LABEL_STUDIO_URL`` and ``TIAP_TEST_LABEL_STUDIO_TOKEN``
for a server already up, or ``TIAP_TEST_LABEL_STUDIO_ENV``, the environment file
``.ci/labelstudio start DIR`` writes when its server answers (``DIR/labelstudio.env``):
CI starts the server beside the tests instead of before them, and the first test that
needs it waits for that file (or for ``DIR/labelstudio.failed``, written when the start
failed). Without either, the Label Studio tests skip with the reason.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ENV_FILE = "TIAP_TEST_LABEL_STUDIO_ENV"
WAIT_S = float(os.environ.get("TIAP_LABEL_STUDIO_TIMEOUT", "300"))
SKIP_REASON = (
    "no Label Studio server: set TIAP_TEST_LABEL_STUDIO_URL and TIAP_TEST_LABEL_STUDIO_TOKEN, "
    f"or {ENV_FILE} (.ci/labelstudio start DIR writes DIR/labelstudio.env)"
)


@dataclass(frozen=True)
class LabelStudio:
    url: str
    token: str
    user: str
    password: str


def _read_env_file(path: Path) -> dict[str, str]:
    """The ``export NAME=value`` lines of the start script's environment file."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            values[name] = value
    return values


def _wait_for(path: Path) -> dict[str, str]:
    failed = path.with_name("labelstudio.failed")
    deadline = time.monotonic() + WAIT_S
    while not path.is_file():
        if failed.is_file():
            pytest.fail(f"the Label Studio server did not start: {failed.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no Label Studio server after {WAIT_S:.0f} s: {path} not written")
        time.sleep(0.5)
    return _read_env_file(path)


def label_studio() -> LabelStudio:
    """The server (waiting for it when CI is still starting it), or a skip."""
    env = dict(os.environ)
    if not env.get("TIAP_TEST_LABEL_STUDIO_URL") and env.get(ENV_FILE):
        env.update(_wait_for(Path(env[ENV_FILE])))
    url = env.get("TIAP_TEST_LABEL_STUDIO_URL", "").rstrip("/")
    token = env.get("TIAP_TEST_LABEL_STUDIO_TOKEN", "")
    if not url or not token:
        pytest.skip(SKIP_REASON)
    return LabelStudio(
        url=url,
        token=token,
        user=env.get("TIAP_TEST_LABEL_STUDIO_USER", ""),
        password=env.get("TIAP_TEST_LABEL_STUDIO_PASSWORD", ""),
    )
