"""Why a judgment carries no label: one closed set of codes (``labels.reason``).

The rubric's reply parser gives the first group (what the reply says), the judge
the second (what became of the call). The code is all that ``labels.reason``
holds; what it is about (the label that is not the rubric's, the provider's error
text, the size of a reply that was cut) goes in its own field (``labels.note``).
A :class:`Reason` is a ``str``: it compares equal to, and is stored as, its value.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """A code for a judgment without a label."""

    # the reply
    EMPTY = "empty"
    """no text at all"""
    REFUSAL = "refusal"
    """text that declines to judge (or the provider's refusal field), no JSON"""
    NOT_JSON = "not_json"
    """no JSON object in the text"""
    NO_LABEL = "no_label"
    """a JSON object without a string ``label``"""
    LABEL_OUTSIDE_RUBRIC = "label_outside_rubric"
    """a label that is not one of the rubric's (the label given is the detail)"""
    REPLY_TOO_LARGE = "reply_too_large"
    """a reply past the panel's ``max_reply_bytes``, no label in the part kept"""
    AMBIGUOUS_REPLY = "ambiguous_reply"
    """more than one label in the reply, or its answer is not the reply's end (or,
    under a structured response format, not the whole reply)"""

    # the call
    TIMEOUT = "timeout"
    """no complete reply within ``timeout_s``, on every attempt"""
    RATE_LIMITED = "rate_limited"
    """HTTP 429 on every attempt"""
    SERVER_ERROR = "server_error"
    """HTTP 5xx or a reply that is not a chat completion, on every attempt"""
    CONNECTION_ERROR = "connection_error"
    """the connection failed (refused, reset, closed early), on every attempt"""
    BAD_REQUEST = "bad_request"
    """HTTP 400, 413 or 422 (not retried)"""
    CONTENT_FILTER = "content_filter"
    """the provider's content policy refused the request (not retried)"""
    AUTH_ERROR = "auth_error"
    """HTTP 401 or 403: the judge stops, no label is stored"""
    NOT_FOUND = "not_found"
    """HTTP 404: the judge stops, no label is stored"""
    ERROR = "error"
    """any other failure of the call"""

    # a provider batch's output
    DUPLICATE_REPLY = "duplicate_reply"
    """more than one line of a provider batch's output for one request, and they disagree"""
