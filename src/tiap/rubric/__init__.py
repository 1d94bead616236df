"""Rubrics: label definitions, binary collapse, prompt rendering and reply parsing."""

from tiap.rubric.loader import DEFAULT_RUBRIC, builtin_rubrics, load_rubric, parse_rubric
from tiap.rubric.models import RUBRIC_FOR_KIND, Rubric, RubricLabel
from tiap.rubric.parse import ParsedJudgment, parse_judgment
from tiap.rubric.prompt import fence, render_messages
from tiap.rubric.reasons import Reason

__all__ = [
    "DEFAULT_RUBRIC",
    "RUBRIC_FOR_KIND",
    "ParsedJudgment",
    "Reason",
    "Rubric",
    "RubricLabel",
    "builtin_rubrics",
    "fence",
    "load_rubric",
    "parse_judgment",
    "parse_rubric",
    "render_messages",
]
