"""The wait while litellm loads is announced at once ("loading the litellm route…") by
``judge run`` and ``audit`` (not with ``--quiet``), and a panel whose judges all take
the direct or offline route never imports litellm."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_support import KEY_ENV, SECRET

from support.cli import Args, CliResult, TiapCli
from tiap.cli.progress_display import ROUTE_LOADING

LOADING = ROUTE_LOADING.format(route="litellm")


def _run(tiap_cli: TiapCli, *args: Args, cwd: Path) -> tuple[CliResult, list[str], bool]:
    """The command in a fresh interpreter with its import log: (result, its stderr
    lines without the import log, whether litellm was imported)."""
    result = tiap_cli.subprocess(
        *args, cwd=cwd, env={KEY_ENV: SECRET}, python=("-X", "importtime"), timeout=300
    )
    log = [line for line in result.err.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in log}
    assert "tiap.cli" in imported  # the import log is really there
    lines = [line for line in result.err.splitlines() if not line.startswith("import time:")]
    return result, lines, "litellm" in imported


def test_judge_run_announces_loading_litellm(
    tiap_cli, make_workspace, loopback, write_panel
) -> None:
    db = make_workspace(3)
    panel = write_panel(loopback.url, route="litellm")
    run = ("judge", "run", "--db", db, "--panel", panel, "--subset", "val")
    result, err, imported = _run(tiap_cli, *run, cwd=db.parent)
    assert result.code == 0, result.err
    assert imported
    assert err.count(LOADING) == 1, err
    assert loopback.count == 3
    # --quiet: nothing of the kind on stderr, the summary on stdout as before
    db2 = make_workspace(3, name="ws2.db")
    result, err, imported = _run(tiap_cli, *run[:3], db2, *run[4:], "--quiet", cwd=db.parent)
    assert result.code == 0, result.err
    assert imported
    assert LOADING not in err
    assert "calls: 3" in result.out


def test_an_offline_panel_never_imports_litellm(tiap_cli, make_workspace) -> None:
    db = make_workspace(4)
    result, err, imported = _run(
        tiap_cli, "judge", "run", "--db", db, "--panel", "offline", "--subset", "val",
        cwd=db.parent,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert not imported
    assert LOADING not in err
    assert "calls: 20" in result.out  # four cases, five baseline judges


def test_a_direct_route_panel_never_imports_litellm(
    tiap_cli, make_workspace, loopback, write_panel
) -> None:
    db = make_workspace(3)
    panel = write_panel(loopback.url, route="openai")
    result, err, imported = _run(
        tiap_cli, "judge", "run", "--db", db, "--panel", panel, "--subset", "val",
        cwd=db.parent,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert not imported
    assert LOADING not in err
    assert loopback.count == 3


@pytest.mark.slow
def test_audit_announces_loading_litellm(
    tiap_cli, loopback, write_panel, sample_bundle_dir: Path, tmp_path: Path
) -> None:
    panel = write_panel(loopback.url, route="litellm")
    audit = ("audit", sample_bundle_dir, "--panel", panel, "--n", "6", "--overlap", "2")
    result, err, imported = _run(
        tiap_cli, *audit, "--out", tmp_path / "a", "--no-humans", "--force", cwd=tmp_path
    )
    assert result.code == 0, result.err
    assert imported
    assert err.count(LOADING) == 1, err
    assert result.out.index("[3] validation subset") < result.out.index("[4] judge subset")
    result, err, _ = _run(
        tiap_cli, *audit, "--out", tmp_path / "b", "--no-humans", "--force", "-q", cwd=tmp_path
    )
    assert result.code == 0, result.err
    assert LOADING not in err


def test_the_demo_never_imports_litellm(tiap_cli, tmp_path: Path) -> None:
    result, err, imported = _run(tiap_cli, "demo", "--out", tmp_path / "demo", cwd=tmp_path)
    assert result.code == 0, result.err
    assert not imported
    assert LOADING not in err
    assert "audit complete" in result.out
