"""Which rubric a workspace report uses when none is named."""

from __future__ import annotations

from tiap.agreement.label_table import LabelTable
from tiap.errors import TiapError
from tiap.rubric import DEFAULT_RUBRIC, RUBRIC_FOR_KIND, Rubric, builtin_rubrics, load_rubric


def rubric_for_table(table: LabelTable) -> Rubric:
    """The rubric the labels name (``rubric_id`` on the label rows), or, when no label
    names one, the built-in rubric for the cases' kind (the default rubric when the
    table holds contested credits, or does not say)."""
    ids = sorted({i for r in table.raters for i in r.rubric_ids})
    if not ids:
        kinds = table.kinds()
        return load_rubric(RUBRIC_FOR_KIND[kinds[0]] if len(kinds) == 1 else DEFAULT_RUBRIC)
    if len(ids) > 1:
        raise TiapError(
            f"the labels were made under several rubrics ({', '.join(ids)}): choose one "
            "with --rubric (raters who labelled only under another are left out)"
        )
    if ids[0] not in builtin_rubrics():
        raise TiapError(
            f"the labels were made under rubric '{ids[0]}', which is not built in: pass "
            "its TOML file with --rubric"
        )
    return load_rubric(ids[0])
