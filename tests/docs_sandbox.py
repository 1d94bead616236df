"""The directory the documentation's commands run in (``tests/test_docs_commands.py``).

The documentation's commands read the benchmark files from ``../shared/data`` as a
clone beside ``shared/`` does. Here that folder holds *slices* of the real files —
LoCoMo's first conversation cut to its first sessions, a few LongMemEval questions,
one BEAM conversation's first batch of turns — so the same commands run in seconds;
the real files' builds are tested in ``tests/traces``. Nothing is copied into the
repository: the slices are written under pytest's temporary directory.

Beside the data, :func:`write_inputs` writes the files the documentation's examples
take from elsewhere (a memory system's exports, run files), each derived from the
sliced data so that its ids resolve.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

#: LoCoMo: the first conversation, its first sessions
LOCOMO_SESSIONS = 4
#: LongMemEval: the first questions of each file
LONGMEMEVAL_QUESTIONS = {"longmemeval_oracle.reconstructed.json": 12}
LONGMEMEVAL_S = {"longmemeval_s_cleaned.sample7.json": 2}
#: BEAM: this conversation of the 100K scale, its first batches of turns
BEAM_CHAT = "1"
BEAM_BATCHES = 1

_SESSION = re.compile(r"D\s*:?\s*(\d+)")


def _locomo_slice(sample: dict[str, Any]) -> dict[str, Any]:
    keep = range(1, LOCOMO_SESSIONS + 1)
    conv = sample["conversation"]
    conversation = {k: conv[k] for k in ("speaker_a", "speaker_b")}
    for n in keep:
        for key in (f"session_{n}_date_time", f"session_{n}"):
            if key in conv:
                conversation[key] = conv[key]

    def in_slice(qa: dict[str, Any]) -> bool:
        sessions = [int(s) for e in qa.get("evidence", []) for s in _SESSION.findall(e)]
        return bool(sessions) and all(s in keep for s in sessions)

    return {
        "sample_id": sample["sample_id"],
        "conversation": conversation,
        "observation": {
            k: v for k, v in sample["observation"].items() if int(k.split("_")[1]) in keep
        },
        "session_summary": {
            k: v for k, v in sample["session_summary"].items() if int(k.split("_")[1]) in keep
        },
        "event_summary": {
            k: v for k, v in sample["event_summary"].items() if int(k.rsplit("_", 1)[1]) in keep
        },
        "qa": [qa for qa in sample["qa"] if in_slice(qa)],
    }


def write_data(real: Path, out: Path) -> Path:
    """``out/data``: slices of the real ``real`` (``shared/data``) files, in its layout."""
    data = out / "data"
    (data / "locomo").mkdir(parents=True)
    locomo = json.loads((real / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    (data / "locomo" / "locomo10.json").write_text(
        json.dumps([_locomo_slice(locomo[0])]), encoding="utf-8"
    )
    (data / "longmemeval").mkdir()
    for name, n in {**LONGMEMEVAL_QUESTIONS, **LONGMEMEVAL_S}.items():
        items = json.loads((real / "longmemeval" / name).read_text(encoding="utf-8"))
        (data / "longmemeval" / name).write_text(json.dumps(items[:n]), encoding="utf-8")
    beam = data / "beam" / "100K" / BEAM_CHAT
    beam.mkdir(parents=True)
    chat = json.loads((real / "beam" / "100K" / BEAM_CHAT / "chat.json").read_text("utf-8"))
    (beam / "chat.json").write_text(json.dumps(chat[:BEAM_BATCHES]), encoding="utf-8")
    # every question: those citing messages beyond the slice are excluded by rule
    shutil.copy(real / "beam" / "100K" / BEAM_CHAT / "probing_questions.json", beam)
    return data


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_inputs(bundle: Path, out: Path) -> None:
    """The exports and run files the documentation's examples read, in ``out``, made
    from a built LoCoMo ``bundle`` (its parser-D5 facts play a memory system's
    memories, and its BM25 rankings that system's search results)."""
    memories = [m for m in _lines(bundle / "stores" / "parser-D5.jsonl") if not m["raw"]]
    run = _lines(bundle / "runs" / "bm25-parser-D5.jsonl")
    known = {m["memory_id"] for m in memories}
    top = {r["query_id"]: [m for m in r["ranking"] if m in known][:60] for r in run}

    # mem0: get_all() and a search export keyed by query id
    (out / "mem0_get_all.json").write_text(
        json.dumps(
            {
                "results": [
                    {
                        "id": m["memory_id"],
                        "memory": m["text"],
                        "hash": str(i),
                        "metadata": {"source_ids": m["source_ids"]},
                    }
                    for i, m in enumerate(memories)
                ]
            }
        ),
        encoding="utf-8",
    )
    (out / "mem0_search.json").write_text(
        json.dumps(
            {
                q: {"results": [{"id": m, "score": 1.0 / (r + 1)} for r, m in enumerate(ids)]}
                for q, ids in top.items()
            }
        ),
        encoding="utf-8",
    )
    # tiap's own line formats
    (out / "memories.jsonl").write_text(
        "".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8"
    )
    (out / "top60.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "ranking": ids}) + "\n" for q, ids in top.items()),
        encoding="utf-8",
    )
    (out / "rerank.jsonl").write_text(
        "".join(
            json.dumps({"query_id": q, "ranking": list(reversed(ids))}) + "\n"
            for q, ids in top.items()
        ),
        encoding="utf-8",
    )
    # the mapping file's example system: facts under data.facts, links "D1:3,D1:4"
    # within a session named by the conversation
    facts = [
        {
            "uuid": m["memory_id"],
            "fact": m["text"],
            "provenance": {
                "turns": ",".join(s.split(":", 1)[1] for s in m["source_ids"]),
                "session": m["source_ids"][0].split(":", 1)[0],
                "is_fact": True,
            },
        }
        for m in memories
    ]
    (out / "facts.json").write_text(json.dumps({"data": {"facts": facts}}), encoding="utf-8")
    (out / "hits.json").write_text(
        json.dumps(
            {
                q: {
                    "hits": [
                        {"fact": {"uuid": m, "relevance": round(1.0 / (r + 1), 6)}}
                        for r, m in enumerate(ids)
                    ]
                }
                for q, ids in top.items()
            }
        ),
        encoding="utf-8",
    )
