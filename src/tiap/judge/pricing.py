"""Token prices per judge, for cost estimates and the ``--max-cost`` budget.

A judge's prices come from its panel entry (``input_cost_per_mtok``,
``output_cost_per_mtok``), else from litellm's bundled price table (read as a
file, without importing litellm), else they are unknown. tiap's offline judges
cost nothing.

The cost *recorded* for a call is litellm's figure on the litellm route: for
OpenRouter models the cost OpenRouter reports, for models in litellm's table its
own price, for panel-priced and offline judges the panel's price (passed to
litellm as custom pricing). A judge with no known price records its cost as
unknown (NULL); it is passed a zero custom price only to spare litellm a failing
price lookup on every call (a measurable part of its per-call CPU). The direct
route (:mod:`tiap.judge.routes.openai_http`) figures it the same way without
litellm: the charge the provider states (``usage.cost``) unless tiap sets the
judge's price, else the panel's price or litellm's table (looked up once per
judge) times the tokens.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tiap.judge.panel import JudgeSpec

_TABLE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True)
class Price:
    """US dollars per token."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return input_tokens * self.input + output_tokens * self.output


@cache
def _litellm_table() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / _TABLE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _candidates(model: str) -> list[str]:
    parts = model.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def table_price(model: str) -> Price | None:
    """The price litellm's table lists for ``model`` (trying it without its
    provider prefixes too), or None."""
    table = _litellm_table()
    for key in _candidates(model):
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        cin, cout = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(cin, int | float) and isinstance(cout, int | float):
            return Price(float(cin), float(cout))
    return None


def judge_price(judge: JudgeSpec) -> Price | None:
    """The judge's price: panel entry, else offline (free), else litellm's table."""
    if judge.input_cost_per_mtok is not None and judge.output_cost_per_mtok is not None:
        return Price(judge.input_cost_per_mtok / 1e6, judge.output_cost_per_mtok / 1e6)
    if judge.offline:
        return Price(0.0, 0.0)
    return table_price(judge.model)


def reports_cost(judge: JudgeSpec) -> bool:
    """True when the provider itself reports each call's cost (OpenRouter)."""
    return judge.model.startswith("openrouter/")


@dataclass(frozen=True)
class CostPolicy:
    """How litellm prices a judge's calls, and whether its figure is recorded."""

    litellm_kwargs: dict[str, float]
    known: bool


def cost_policy(judge: JudgeSpec) -> CostPolicy:
    if reports_cost(judge):
        return CostPolicy({}, True)
    panel_priced = judge.input_cost_per_mtok is not None or judge.offline
    if not panel_priced and table_price(judge.model) is not None:
        return CostPolicy({}, True)
    price = judge_price(judge) if panel_priced else None
    custom = {
        "input_cost_per_token": price.input if price else 0.0,
        "output_cost_per_token": price.output if price else 0.0,
    }
    return CostPolicy(custom, price is not None)


def table_batch_price(model: str) -> Price | None:
    """The batch-API price litellm's table lists for ``model``
    (``*_cost_per_token_batches``), or None."""
    table = _litellm_table()
    for key in _candidates(model):
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        cin = entry.get("input_cost_per_token_batches")
        cout = entry.get("output_cost_per_token_batches")
        if isinstance(cin, int | float) and isinstance(cout, int | float):
            return Price(float(cin), float(cout))
    return None


def batch_price(judge: JudgeSpec) -> Price | None:
    """What a judge's requests cost through its provider's batch API: the panel's
    batch prices, else litellm's batch prices, else its direct price
    (:func:`judge_price`)."""
    if judge.batch_input_cost_per_mtok is not None and judge.batch_output_cost_per_mtok is not None:
        return Price(judge.batch_input_cost_per_mtok / 1e6, judge.batch_output_cost_per_mtok / 1e6)
    if judge.input_cost_per_mtok is None:
        table = table_batch_price(judge.model)
        if table is not None:
            return table
    return judge_price(judge)
