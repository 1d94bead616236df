"""The judge routes' names and factories: which routes exist, and how each is made.

A leaf of :mod:`tiap.judge`: it imports no route and no panel, so a panel can check
the route it names (:func:`route_names`) without loading any route, and the routes
(which read panels' judge settings) do not import it back. The built-in routes are
named by the import path of the function that makes each (``module:function``),
imported only when a run first needs that route, as the dataset registry of
:mod:`tiap.traces.dataset_registry` names its loaders. :mod:`tiap.judge.routes`
gives the typed view (``get_route`` returns a ``JudgeRoute``).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["BUILTIN_ROUTES", "make_route", "register_route", "route_names"]

RouteFactory = Callable[[], object]
F = TypeVar("F", bound=RouteFactory)

#: the built-in routes: name -> ``module:function`` of the function that makes it
BUILTIN_ROUTES: dict[str, str] = {
    "litellm": "tiap.judge.routes.litellm_route:make_route",
    "openai": "tiap.judge.routes.openai_http:make_route",
    "offline": "tiap.judge.routes.offline:make_route",
}


def _builtin(path: str) -> RouteFactory:
    def make() -> object:
        module, _, name = path.partition(":")
        factory: RouteFactory = getattr(importlib.import_module(module), name)
        return factory()

    return make


_factories: dict[str, RouteFactory] = {name: _builtin(p) for name, p in BUILTIN_ROUTES.items()}
_made: dict[str, object] = {}
_lock = threading.Lock()


def register_route(name: str, *, replace: bool = False) -> Callable[[F], F]:
    """Register a route factory under ``name`` (a decorator). A name is taken once
    unless ``replace``, which also drops the route made from the earlier factory."""

    def register(factory: F) -> F:
        with _lock:
            if name in _factories and not replace:
                raise ValueError(f"a judge route named '{name}' is registered already")
            _factories[name] = factory
            _made.pop(name, None)
        return factory

    return register


def route_names() -> list[str]:
    """The registered routes' names, sorted."""
    with _lock:
        return sorted(_factories)


def make_route(name: str) -> object | None:
    """The route registered as ``name`` (made on first use, then kept), or ``None``
    when no route has that name."""
    with _lock:
        made = _made.get(name)
        factory = _factories.get(name)
    if made is not None:
        return made
    if factory is None:
        return None
    route = factory()
    with _lock:
        return _made.setdefault(name, route)
