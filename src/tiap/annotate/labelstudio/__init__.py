"""The Label Studio round-trip: push cases as tasks, pull annotations as human labels.

label-studio-sdk is imported only when a connection is made (:func:`connect`).
"""

from tiap.annotate.labelstudio.client import TOKEN_ENV, Connection, connect, find_project
from tiap.annotate.labelstudio.config import check_config, instructions_html, label_config
from tiap.annotate.labelstudio.models import PullResult, PushResult
from tiap.annotate.labelstudio.pull import pull
from tiap.annotate.labelstudio.push import default_title, push

__all__ = [
    "TOKEN_ENV",
    "Connection",
    "PullResult",
    "PushResult",
    "check_config",
    "connect",
    "default_title",
    "find_project",
    "instructions_html",
    "label_config",
    "pull",
    "push",
]
