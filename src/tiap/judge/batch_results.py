"""What a finished provider batch answered, line by line: sorted before anything
is stored.

A batch's output and error files (:func:`~tiap.judge.batch_api.read_lines`) are
read into the results of each of its lines (by ``custom_id``), and every line still
pending is given one fate:

- **stored**: its result, exactly as a direct call's would be stored (a reply, or a
  failure a direct call would not retry, a 400 say). Several lines for one custom
  id that say the same (the same reply text, or the same failure) are one result;
  lines that disagree are an invalid judgment, ``duplicate_reply``, never the
  first of them (their tokens added up: the provider may have charged each);
- **again**: called again directly (expired, cancelled, a retryable failure, a
  body that is not a chat completion, a line in neither file);
- **missing**: a line in neither file while the provider counted more lines
  completed than its output file holds (no output file, or one that cannot be
  read): it may have been charged, so it is called again only on purpose.

Lines naming a custom id that is not the batch's are counted (``unknown``), as
are lines repeating one (``duplicates``) and lines that cannot be read
(``malformed``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from tiap.cases.run_models import BatchRequest
from tiap.judge.batch_api import LineResult, line_failure, read_lines
from tiap.judge.call import CallOutcome, take_record
from tiap.judge.failures import Failure
from tiap.judge.routes import BatchApi
from tiap.rubric import Reason


@dataclass(frozen=True)
class BatchFiles:
    """The lines of a finished batch's output and error files."""

    lines: list[LineResult] = field(default_factory=list)
    #: lines of the output file that could not be read
    malformed_output: int = 0
    #: lines of the error file that could not be read
    malformed_errors: int = 0

    @classmethod
    def read(cls, output: bytes | None, errors: bytes | None) -> BatchFiles:
        out, bad_out = read_lines(output or b"")
        err, bad_err = read_lines(errors or b"")
        return cls([*out, *err], bad_out, bad_err)

    @property
    def malformed(self) -> int:
        return self.malformed_output + self.malformed_errors


@dataclass
class SortedLines:
    """Each pending line's fate (see the module docstring) and the counts."""

    stored: list[tuple[BatchRequest, CallOutcome]] = field(default_factory=list)
    again: list[BatchRequest] = field(default_factory=list)
    missing: list[BatchRequest] = field(default_factory=list)
    #: lines beyond the first for one custom id, and how many custom ids disagreed
    duplicates: int = 0
    disagreeing: int = 0
    #: lines naming a custom id that is not one of the batch's
    unknown: int = 0
    malformed: int = 0
    #: lines the provider counted completed that neither file holds
    uncounted: int = 0


def _signature(result: LineResult, outcome: CallOutcome | None) -> tuple[object, ...]:
    """What a line says, to compare lines for one custom id (ids, times and usage
    of two replies may differ; their answers may not)."""
    if outcome is not None and outcome.failure is None:
        refusal = (outcome.response or {}).get("refusal")
        return ("reply", outcome.content, refusal, outcome.truncated)
    if result.status is not None:
        return ("status", result.status)
    if result.code is not None:
        return ("code", result.code)
    return ("unreadable",)


def _tokens(outcomes: Sequence[CallOutcome | None]) -> tuple[int | None, int | None]:
    """Tokens of several lines added up; None when a reply does not state them."""
    replies = [o for o in outcomes if o is not None and o.failure is None]
    if any(o.input_tokens is None or o.output_tokens is None for o in replies):
        return None, None
    return sum(o.input_tokens or 0 for o in replies), sum(o.output_tokens or 0 for o in replies)


@dataclass(frozen=True)
class LineReader:
    """Turns lines into outcomes the way a direct call's reply is read."""

    max_reply_bytes: int
    api: BatchApi
    secrets: tuple[str, ...] = ()

    def outcome(self, result: LineResult) -> CallOutcome | None:
        """The outcome a line stands for, or None when it is to be called again."""
        if result.body is not None:
            record = self.api.reply(result.body, result.custom_id, self.max_reply_bytes)
            return None if record is None else take_record(CallOutcome(attempts=1), record)
        if result.status is not None:
            failure = line_failure(result, self.secrets)
            return None if failure.retryable else CallOutcome(failure=failure, attempts=1)
        return None  # not run: expired, cancelled

    def one(self, results: Sequence[LineResult]) -> tuple[CallOutcome | None, bool]:
        """The outcome of a custom id's lines, and whether they disagreed."""
        outcomes = [self.outcome(r) for r in results]
        if len({_signature(r, o) for r, o in zip(results, outcomes, strict=True)}) == 1:
            return outcomes[0], False
        tokens_in, tokens_out = _tokens(outcomes)
        failure = Failure(
            reason=Reason.DUPLICATE_REPLY,
            retryable=False,
            fatal=False,
            status=None,
            message=f"{len(results)} lines of the batch's output for this request disagree",
        )
        return (
            CallOutcome(
                failure=failure,
                attempts=len(results),
                input_tokens=tokens_in,
                output_tokens=tokens_out,
            ),
            True,
        )


def sort_lines(
    files: BatchFiles,
    requests: Sequence[BatchRequest],
    *,
    provider_completed: int,
    reader: LineReader,
) -> SortedLines:
    """Each pending line of ``requests`` (a submission's lines) with its fate."""
    known = {r.custom_id for r in requests}
    by_id: dict[str, list[LineResult]] = defaultdict(list)
    out = SortedLines(malformed=files.malformed)
    for line in files.lines:
        if line.custom_id in known:
            by_id[line.custom_id].append(line)
        else:
            out.unknown += 1
    out.duplicates = sum(len(lines) - 1 for lines in by_id.values())
    answered = sum(1 for lines in by_id.values() if any(r.body is not None for r in lines))
    out.uncounted = max(0, provider_completed - answered - files.malformed_output)
    absent: list[BatchRequest] = []
    for request in requests:
        if request.state != "pending":
            continue
        lines = by_id.get(request.custom_id)
        if not lines:
            absent.append(request)
            continue
        outcome, disagreed = reader.one(lines)
        out.disagreeing += disagreed
        if outcome is None:
            out.again.append(request)
        else:
            out.stored.append((request, outcome))
    if out.uncounted:
        out.missing = absent
    else:
        out.again.extend(absent)
    return out
