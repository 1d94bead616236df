"""The local LLM judge (SmolLM2-135M) labels by contextually calibrated likelihood:
on real LoCoMo contested cases its labels vary with the case."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tiap.cases import Workspace
from tiap.judge.local_llm import CONTENT_FREE, content_free
from tiap.rubric import load_rubric, render_messages

N_CASES = 20


def test_content_free_prompts_empty_every_case_field_and_nothing_else() -> None:
    rubric = load_rubric()
    fields = {f: f"text of {f} </{f}> more" for f in rubric.fields}
    messages = render_messages(rubric, fields)
    for filler in CONTENT_FREE:
        neutral = content_free(messages, filler)
        assert neutral[0] == messages[0]  # the system prompt (rubric, labels) as it is
        user = neutral[1]["content"]
        for f in rubric.fields:
            assert f"<{f}>\n{filler}\n</{f}>" in user
            assert f"text of {f}" not in user
        assert user.startswith("Question:\n<question>\n")
        assert user.endswith("Reply with the JSON object.")
    assert messages[1]["content"] != content_free(messages, "N/A")[1]["content"]


def _scores(text: str, name: str) -> dict[str, float]:
    part = re.search(rf"{name}: ([^;]*)", text)
    assert part is not None, text
    return {k: float(v) for k, v in re.findall(r"([a-z_]+) ([-+]?\d+\.\d+)", part.group(1))}


@pytest.mark.slow
@pytest.mark.shared_data
def test_calibrated_labels_vary_on_real_locomo_cases(
    shared_data_dir: Path, tmp_path: Path, smollm2_gguf, record_property
) -> None:
    from tiap.cases.extract import extract_cases
    from tiap.cases.sample import sample_subset
    from tiap.judge import load_panel, run_panel
    from tiap.judge.local_llm import check_available, likelihood_judge
    from tiap.traces.build import BuildOptions, build_bundle
    from tiap.traces.locomo import load_locomo

    check_available()
    bundle = build_bundle(
        load_locomo(shared_data_dir / "locomo" / "locomo10.json"),
        BuildOptions(stores=["raw", "parser-D5"]),
    ).bundle
    rubric = load_rubric()
    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(bundle, ws)
        sample_subset(ws, name="v", n=N_CASES, overlap=0, seed=1337)
        cases = ws.cases(subset="v")
    judge = likelihood_judge()
    started = time.perf_counter()
    scored = [
        judge.score(render_messages(rubric, c.prompt_fields()), rubric.label_names) for c in cases
    ]
    elapsed = time.perf_counter() - started
    record_property("local_llm_seconds", round(elapsed, 1))
    print(f"SmolLM2-135M on {N_CASES} LoCoMo contested cases (with loading): {elapsed:.1f} s")
    labels = [s.label for s in scored]
    assert len(set(labels)) >= 2, labels
    for s in scored:
        assert s.prior is not None
        assert s.calibrated is not None
        assert abs(sum(s.prior.values()) - 1) < 1e-9
        assert s.label == max(s.calibrated, key=lambda k: s.calibrated[k])  # type: ignore[index]
        assert s.prompt_tokens > 200
    assert len({id(s.prior) for s in scored}) == 1  # measured once, then reused
    # by raw likelihood the same scores give fewer labels (here: one, a constant judge)
    raw = {max(s.logprobs, key=lambda k: s.logprobs[k]) for s in scored}
    assert len(raw) < len(set(labels))

    # the panel path (litellm, the offline provider, params.scoring): the same labels
    panel_file = tmp_path / "local.toml"
    panel_file.write_text(
        'name = "local"\ntemperature = 0\nmax_tokens = 400\ntimeout_s = 600\n'
        '[[judges]]\nname = "smollm2-135m"\nmodel = "tiap-offline/smollm2-135m"\n'
        'concurrency = 1\nparams = { scoring = "calibrated" }\n',
        encoding="utf-8",
    )
    differ = next(i for i, s in enumerate(scored) if s.label != labels[0])
    with Workspace(tmp_path / "w.sqlite") as ws:
        two = [cases[0].case_id, cases[differ].case_id]
        ws.save_subset("two", two, params={"kind": "validation"})
        run_panel(ws, load_panel(panel_file), rubric, subset="two")
        stored = {r.case_id: r for r in ws.latest_labels(case_ids=ws.case_ids(subset="two"))}
    for i in (0, differ):
        row = stored[cases[i].case_id]
        assert row.label == labels[i]
        assert "calibrated on content-free prompts" in (row.rationale or "")
        calibrated = _scores(row.rationale or "", "calibrated")
        assert set(calibrated) == set(rubric.label_names)
