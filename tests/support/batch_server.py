"""The loopback server with the OpenAI files and batches endpoints, for tests.

Beside ``POST /v1/chat/completions`` (see :mod:`support.loopback`) it answers:

- ``POST /v1/files`` (multipart, ``purpose=batch``): stores the file;
- ``GET /v1/files/{id}`` and ``GET /v1/files/{id}/content``;
- ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``,
  ``metadata``), ``GET /v1/batches`` (list), ``GET /v1/batches/{id}``,
  ``POST /v1/batches/{id}/cancel``.

A batch moves one status per retrieve: ``validating -> in_progress ->
finalizing -> completed`` (``steps_per_poll`` sets how many retrieves a step
takes). Its lines are executed through the same :class:`~support.loopback.Script`
as direct calls when it reaches ``finalizing``: a ``reply`` behaviour becomes an
output line, a ``status`` behaviour an error-file line with that status code, a
``garbage`` behaviour a malformed output line, a ``reset`` a line missing from
both files. Every executed line is recorded in ``requests`` like a direct call,
so a test counts what the provider answered, however it was asked.

``fates`` lists what happens to each created batch in order (default
``completed``): ``expired`` (the first ``expire_after`` lines are answered, the
rest come back in the error file as ``batch_expired``), ``cancelled`` (cancelled
at the provider while in progress, with the first ``expire_after`` lines
answered), ``failed`` (the batch fails validation: no line executed) or
``cancel`` (it waits in ``in_progress`` until cancelled through the API; then
``cancelled`` with no line executed).

Faults a provider may have, scriptable per server:

- the list of batches is paged as OpenAI pages it (newest first, ``limit`` at most
  ``page_max``, ``after`` a batch id, ``has_more``); :meth:`BatchServer.add_batches`
  adds batches of other input files, newer than every batch so far;
- ``hold_creations``: while set, a created batch's reply waits (the batch exists;
  its creator never hears of it);
- ``no_output``: a finished batch has no output file (its counts still say how
  many lines completed); ``output_gone``: its output file's content answers 404;
- ``second_lines``: a case key's line comes twice in the output, the second with
  this behaviour (a reply like the first agrees, another disagrees);
- ``unknown_lines``: output lines whose custom ids are not in the batch.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from support.loopback import LoopbackServer, Script, SeenRequest, completion, label_reply


@dataclass
class StoredFile:
    id: str
    purpose: str
    filename: str
    data: bytes


@dataclass
class ServerBatch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    fate: str
    created_at: int
    status: str = "validating"
    polls: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    models: list[str] = field(default_factory=list)
    times: dict[str, int] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": None,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + 86400,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
            **{f"{k}_at": v for k, v in self.times.items()},
        }


#: the input file of the batches :meth:`BatchServer.add_batches` adds.
_OTHERS = "someone-else.jsonl"

_FORWARD = {"validating": "in_progress", "in_progress": "finalizing", "finalizing": "completed"}


class BatchServer(LoopbackServer):
    """A :class:`LoopbackServer` that also runs OpenAI-protocol batches."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        fates: list[str] | None = None,
        steps_per_poll: int = 1,
        expire_after: int = 1,
        page_max: int = 100,
        no_output: bool = False,
        output_gone: bool = False,
        second_lines: dict[str, Any] | None = None,
        unknown_lines: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(script, **kwargs)
        self.fates = list(fates or [])
        self.steps_per_poll = steps_per_poll
        self.expire_after = expire_after
        self.page_max = page_max
        self.no_output = no_output
        self.output_gone = output_gone
        self.second_lines = dict(second_lines or {})
        self.unknown_lines = unknown_lines
        self.hold_creations = False
        #: files whose content answers 404
        self.gone: set[str] = set()
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, ServerBatch] = {}
        #: every admin request: (method, path)
        self.admin: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ figures

    @property
    def batch_creations(self) -> Counter[str]:
        """Batches created per model named in their lines."""
        with self._lock:
            return Counter(m for b in self.batches.values() for m in set(b.models))

    def uploads(self) -> list[StoredFile]:
        """The batch input files uploaded to the server (not those of :meth:`add_batches`)."""
        with self._lock:
            return [
                f for f in self.files.values() if f.purpose == "batch" and f.filename != _OTHERS
            ]

    def add_batches(self, n: int) -> None:
        """``n`` batches of other input files (someone else's work on the account),
        newer than every batch so far; they never run."""
        f = self._add_file("batch", _OTHERS, b"")
        with self._lock:
            for _ in range(n):
                batch_id = f"batch_{len(self.batches) + 1}"
                self.batches[batch_id] = ServerBatch(
                    id=batch_id,
                    input_file_id=f.id,
                    endpoint="/v1/chat/completions",
                    completion_window="24h",
                    metadata={"owner": "someone else"},
                    fate="cancel",
                    created_at=int(time.time()),
                )

    # ------------------------------------------------------------------- routes

    def add_routes(self, app: Any) -> None:
        r = app.router
        r.add_post("/v1/files", self._create_file)
        r.add_get("/v1/files/{id}", self._file)
        r.add_get("/v1/files/{id}/content", self._file_content)
        r.add_post("/v1/batches", self._create_batch)
        r.add_get("/v1/batches", self._list_batches)
        r.add_get("/v1/batches/{id}", self._retrieve_batch)
        r.add_post("/v1/batches/{id}/cancel", self._cancel_batch)

    def _log(self, request: Any) -> None:
        with self._lock:
            self.admin.append((request.method, request.path))

    @staticmethod
    def _not_found(what: str) -> Any:
        from aiohttp import web

        return web.json_response({"error": {"message": f"no such {what}"}}, status=404)

    def _file_json(self, f: StoredFile) -> dict[str, Any]:
        return {
            "id": f.id,
            "object": "file",
            "bytes": len(f.data),
            "created_at": int(time.time()),
            "filename": f.filename,
            "purpose": f.purpose,
            "status": "processed",
        }

    def _add_file(self, purpose: str, filename: str, data: bytes) -> StoredFile:
        with self._lock:
            f = StoredFile(f"file-{len(self.files) + 1}", purpose, filename, data)
            self.files[f.id] = f
        return f

    async def _create_file(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        form = await request.post()
        upload = form.get("file")
        purpose = str(form.get("purpose", ""))
        if upload is None or not hasattr(upload, "file"):
            return web.json_response({"error": {"message": "no file"}}, status=400)
        data = upload.file.read()
        f = self._add_file(purpose, getattr(upload, "filename", "upload.jsonl"), data)
        return web.json_response(self._file_json(f))

    async def _file(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        f = self.files.get(request.match_info["id"])
        return self._not_found("file") if f is None else web.json_response(self._file_json(f))

    async def _file_content(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        f = self.files.get(request.match_info["id"])
        if f is None or f.id in self.gone:
            return self._not_found("file")
        return web.Response(body=f.data, content_type="application/octet-stream")

    async def _create_batch(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        body = await request.json()
        f = self.files.get(body.get("input_file_id", ""))
        if f is None:
            return self._not_found("file")
        lines = [json.loads(line) for line in f.data.decode("utf-8").splitlines() if line]
        with self._lock:
            fate = self.fates.pop(0) if self.fates else "completed"
            batch = ServerBatch(
                id=f"batch_{len(self.batches) + 1}",
                input_file_id=f.id,
                endpoint=body.get("endpoint", ""),
                completion_window=body.get("completion_window", ""),
                metadata=body.get("metadata"),
                fate=fate,
                created_at=int(time.time()),
                total=len(lines),
                models=[str(line.get("body", {}).get("model")) for line in lines],
            )
            self.batches[batch.id] = batch
        while self.hold_creations:
            await asyncio.sleep(0.01)
        return web.json_response(batch.json())

    async def _list_batches(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        limit = min(int(request.query.get("limit", "20")), self.page_max)
        after = request.query.get("after")
        with self._lock:
            newest_first = [b.json() for b in reversed(list(self.batches.values()))]
        ids = [b["id"] for b in newest_first]
        start = ids.index(after) + 1 if after in ids else 0
        data = newest_first[start : start + limit]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": start + limit < len(newest_first),
            }
        )

    async def _retrieve_batch(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self._not_found("batch")
        batch.polls += 1
        if batch.polls % self.steps_per_poll == 0:
            self._advance(batch)
        return web.json_response(batch.json())

    async def _cancel_batch(self, request: Any) -> Any:
        from aiohttp import web

        self._log(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self._not_found("batch")
        if batch.status in ("validating", "in_progress", "finalizing"):
            batch.status = "cancelling"
            batch.times["cancelling"] = int(time.time())
        return web.json_response(batch.json())

    # ---------------------------------------------------------------- execution

    def _advance(self, batch: ServerBatch) -> None:
        now = int(time.time())
        if batch.status == "cancelling":
            batch.status = "cancelled"
            batch.times["cancelled"] = now
            self._finish(batch, answer=self.expire_after if batch.fate == "cancelled" else 0)
            return
        if batch.status not in _FORWARD:
            return
        if batch.status == "validating" and batch.fate == "failed":
            batch.status = "failed"
            batch.times["failed"] = now
            return
        if batch.status == "in_progress" and batch.fate == "cancel":
            return  # waits for a cancel
        if batch.status == "in_progress" and batch.fate == "cancelled":
            batch.status = "cancelling"  # cancelled at the provider (by its owner, say)
            batch.times["cancelling"] = now
            return
        if batch.status == "in_progress" and batch.fate == "expired":
            batch.status = "expired"
            batch.times["expired"] = now
            self._finish(batch, answer=self.expire_after)
            return
        batch.status = _FORWARD[batch.status]
        batch.times[batch.status] = now
        if batch.status == "in_progress":
            batch.completed = batch.total // 2
        elif batch.status == "finalizing":
            self._finish(batch, answer=batch.total)

    def _finish(self, batch: ServerBatch, answer: int) -> None:
        """Execute the first ``answer`` lines; write the output and error files."""
        lines = [
            json.loads(line)
            for line in self.files[batch.input_file_id].data.decode("utf-8").splitlines()
            if line
        ]
        output: list[str] = []
        errors: list[str] = []
        completed = failed = 0
        for n, line in enumerate(lines):
            custom_id = line["custom_id"]
            if n >= answer:
                code = "batch_expired" if batch.status == "expired" else "batch_cancelled"
                error = {"code": code, "message": "not answered in time"}
                errors.append(self._line(batch, n, custom_id, None, error))
                failed += 1
                continue
            body = line["body"]
            key = self.key(body)
            with self._lock:
                seen = SeenRequest(len(self.requests), key, body, None, time.monotonic())
                self.requests.append(seen)
            behaviour = self.script.next(key, body)
            if behaviour.kind == "reply":
                response = {"status_code": 200, "request_id": f"req_{n}"}
                response["body"] = completion(seen, behaviour)
                output.append(self._line(batch, n, custom_id, response, None))
                completed += 1
            elif behaviour.kind == "status":
                err = {"message": behaviour.message, "type": "scripted", "code": behaviour.status}
                response = {"status_code": behaviour.status, "body": {"error": err}}
                errors.append(self._line(batch, n, custom_id, response, None))
                failed += 1
            elif behaviour.kind == "garbage":
                output.append('{"id": "batch_req_broken", "custom_id": ')
                completed += 1
            # reset: the line is in neither file
            second = self.second_lines.get(key)
            if second is not None and behaviour.kind == "reply":
                response = {"status_code": 200, "request_id": f"req_{n}_again"}
                response["body"] = completion(seen, second)
                output.append(self._line(batch, n, custom_id, response, None))
        for n in range(self.unknown_lines):
            other = SeenRequest(-1, f"unknown-{n}", {"model": "unknown"}, None, time.monotonic())
            response = {"status_code": 200, "body": completion(other, label_reply("supports"))}
            output.append(self._line(batch, 10_000 + n, f"unknown-{n}", response, None))
        output.reverse()  # a provider's output is not in input order
        if output and not self.no_output:
            batch.output_file_id = self._add_file("batch_output", "out.jsonl", _jsonl(output)).id
            if self.output_gone:
                self.gone.add(batch.output_file_id)
        if errors:
            batch.error_file_id = self._add_file("batch_output", "err.jsonl", _jsonl(errors)).id
        batch.completed, batch.failed = completed, failed

    @staticmethod
    def _line(
        batch: ServerBatch,
        n: int,
        custom_id: str,
        response: dict[str, Any] | None,
        error: dict[str, Any] | None,
    ) -> str:
        return json.dumps(
            {
                "id": f"{batch.id}_req_{n}",
                "custom_id": custom_id,
                "response": response,
                "error": error,
            }
        )


def _jsonl(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")
