"""A LoCoMo conversation of three turns and two questions, small enough to read: the
shape of the real file (``locomo10.json``) for tests of what reads it."""

from __future__ import annotations

import copy
from typing import Any

_SAMPLE: dict[str, Any] = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "I started the violin last month."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister plays the cello."},
        ],
    },
    "qa": [
        {"question": "What pet did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1"],
         "category": 4},
        {"question": "What does Bob play?", "answer": "violin", "evidence": ["D1:2"],
         "category": 4},
    ],
}  # fmt: skip


def locomo_sample(*extra_qa: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of the sample conversation, with ``extra_qa`` after its questions."""
    sample = copy.deepcopy(_SAMPLE)
    sample["qa"].extend(copy.deepcopy(list(extra_qa)))
    return sample
