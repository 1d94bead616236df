"""The routes a judge's calls take, registered by name.

Built in:

- ``openai``: the OpenAI chat-completions protocol over pooled HTTP/1.1 clients
  (:mod:`tiap.judge.routes.openai_http`: tiap's own, aiohttp behind a proxy), for
  ``openai/``, ``openrouter/`` and ``hosted_vllm/`` models; litellm is not imported
  for it unless a judge's request is one only litellm knows how to build;
- ``litellm``: any litellm model (:mod:`tiap.judge.routes.litellm_route`), and
  the provider batch APIs litellm speaks (:mod:`tiap.judge.routes.litellm_batch`);
- ``offline``: tiap's in-process judges, ``tiap-offline/NAME``
  (:mod:`tiap.judge.routes.offline`).

A judge takes the route its panel entry names (``route``), by default the first
that fits its model (``auto``: ``offline``, then ``openai``, then ``litellm``).
Another route is registered with :func:`register_route` (a name and a factory that
makes it, called once, when a run first needs it; the names live in
:mod:`tiap.judge.route_registry`)::

    from tiap.judge.routes import register_route

    @register_route("my-gateway")
    def my_gateway() -> JudgeRoute:
        from my_package.route import GatewayRoute
        return GatewayRoute()

and chosen with ``route = "my-gateway"`` in a panel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tiap.errors import TiapError
from tiap.judge.route_registry import make_route, register_route, route_names
from tiap.judge.routes.base import (
    Attempt,
    BatchApi,
    BatchLimits,
    BatchOffer,
    JudgeRoute,
    OnRouteLoad,
    announcing,
)

if TYPE_CHECKING:
    from tiap.judge.panel import JudgeSpec

__all__ = [
    "Attempt",
    "BatchApi",
    "BatchLimits",
    "BatchOffer",
    "JudgeRoute",
    "OnRouteLoad",
    "announcing",
    "batch_route",
    "get_route",
    "register_route",
    "route_for",
    "route_names",
]


def get_route(name: str) -> JudgeRoute:
    """The route registered as ``name`` (made on first use, then kept)."""
    route = make_route(name)
    if route is None:
        known = ", ".join(route_names())
        raise TiapError(f"no judge route named '{name}' (registered: {known})")
    return cast("JudgeRoute", route)


def route_for(judge: JudgeSpec) -> JudgeRoute:
    """The route ``judge``'s calls take (:attr:`~tiap.judge.panel.JudgeSpec.resolved_route`)."""
    return get_route(judge.resolved_route)


def batch_route(judge: JudgeSpec, api_key: str | None = None) -> tuple[str | None, str]:
    """``(provider, why)``: the batch provider of a judge's route, or ``None`` and
    why it is called directly under ``--batch``."""
    offer = route_for(judge).batches(judge, api_key)
    return offer.provider, offer.why
