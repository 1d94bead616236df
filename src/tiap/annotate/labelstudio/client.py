"""Connect to a Label Studio server (label-studio-sdk 2.x, imported lazily) and turn
its failures into one-line errors.

The API token comes from ``LABEL_STUDIO_API_KEY``: a legacy token or a personal
access token (a JWT refresh token; the SDK exchanges it for access tokens). It
is only ever handed to the SDK: never stored, logged or put in a message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from tiap.errors import TiapError

if TYPE_CHECKING:
    from label_studio_sdk import LabelStudio

TOKEN_ENV = "LABEL_STUDIO_API_KEY"
TIMEOUT_S = 60.0


@dataclass
class Connection:
    """An authenticated client, the server's URL and who the token belongs to."""

    client: LabelStudio
    url: str
    user_email: str
    _secret: str = field(repr=False)

    def scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


def _detail(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("detail", "validation_errors", "message", "error"):
            if key in body:
                value = body[key]
                return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return json.dumps(body, sort_keys=True)
    text = str(body) if body is not None else ""
    return text if len(text) < 200 else "(an HTML page: is this the Label Studio URL?)"


@contextmanager
def api_errors(url: str, secret: str = "") -> Iterator[None]:
    """Turn transport errors and HTTP error answers into one-line :class:`TiapError`."""
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    def clean(text: str) -> str:
        return " ".join((text.replace(secret, "***") if secret else text).split())

    try:
        yield
    except ApiError as exc:
        code = exc.status_code
        detail = clean(_detail(exc.body))[:300]
        if code in (401, 403):
            raise TiapError(
                f"Label Studio at {url} rejected the API token in {TOKEN_ENV} "
                f"(HTTP {code}: {detail})"
            ) from None
        raise TiapError(f"Label Studio at {url} answered HTTP {code}: {detail}") from None
    except httpx.TimeoutException:
        raise TiapError(f"Label Studio at {url} did not answer within {TIMEOUT_S:.0f} s") from None
    except httpx.InvalidURL as exc:  # e.g. a control character in --url
        raise TiapError(f"--url '{url}': not a valid URL ({clean(str(exc))})") from None
    except httpx.TransportError as exc:
        reason = clean(str(exc)) or type(exc).__name__
        raise TiapError(f"cannot reach Label Studio at {url} ({reason})") from None
    except ValueError as exc:  # a non-JSON or unexpected answer (pydantic, json)
        raise TiapError(
            f"unexpected answer from {url}; is it a Label Studio server? "
            f"({clean(str(exc)).splitlines()[0][:200] if str(exc) else type(exc).__name__})"
        ) from None


def connect(url: str, api_key: str | None = None) -> Connection:
    """A client for ``url`` with the token from ``api_key`` or ``LABEL_STUDIO_API_KEY``;
    checks the token at once (``/api/current-user/whoami``)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise TiapError(f"--url '{url}': expected http(s)://HOST[:PORT]")
    token = api_key if api_key is not None else os.environ.get(TOKEN_ENV, "")
    token = token.strip()
    if not token:
        raise TiapError(
            f"set {TOKEN_ENV} to your Label Studio API token (Account & Settings: a legacy "
            "token or a personal access token)"
        )
    base = url.rstrip("/")
    from label_studio_sdk import LabelStudio

    with api_errors(base, token):
        client = LabelStudio(base_url=base, api_key=token, timeout=TIMEOUT_S)
        me = client.users.whoami()
    return Connection(client=client, url=base, user_email=me.email or "", _secret=token)


def find_project(conn: Connection, title: str) -> Any | None:
    """The project with exactly this title (None if absent; error if several)."""
    with api_errors(conn.url, conn._secret):
        listed: Iterable[Any] = conn.client.projects.list(title=title)
        hits = [p for p in listed if p.title == title]
        if len(hits) > 1:
            ids = ", ".join(str(p.id) for p in hits)
            raise TiapError(
                f"several Label Studio projects at {conn.url} are titled '{title}' "
                f"(ids {ids}); rename all but one or pass another --project"
            )
        return conn.client.projects.get(hits[0].id) if hits else None


def export_tasks(conn: Connection, project_id: int) -> list[dict[str, Any]]:
    """Every task of a project with its annotations (the JSON export)."""
    with api_errors(conn.url, conn._secret):
        raw = b"".join(
            conn.client.projects.exports.download_sync(
                project_id, export_type="JSON", download_all_tasks=True
            )
        )
        data = json.loads(raw)
    if not isinstance(data, list):
        raise TiapError(f"Label Studio at {conn.url}: the JSON export is not a list of tasks")
    return data
