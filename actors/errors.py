"""mnemo's errors: one root and a few leaves, each with the stable code clients see."""

from __future__ import annotations

__all__ = [
    "ArchiveUnavailable",
    "Conflict",
    "LlmError",
    "LlmFailure",
    "LlmInvalidOutput",
    "LlmTimeout",
    "LlmUnavailable",
    "MnemoError",
    "ModelBusy",
    "Overloaded",
    "Rejected",
    "SessionClosed",
    "TooManySessions",
]


class MnemoError(Exception):
    """Root of mnemo's errors; ``code`` is what an error frame or REST body carries."""

    code = "internal"


class Rejected(MnemoError):
    """A request breaks a rule of the domain (e.g. too many pinned facts): a 400, not a fault."""

    code = "bad_request"


class Conflict(MnemoError):
    """A request would break a uniqueness rule (a name already taken): a 409."""

    code = "conflict"


class SessionClosed(MnemoError):
    """The session's actor has stopped; the message was not handled."""

    code = "session_closed"


class Overloaded(MnemoError):
    """A bounded queue is full; the message was refused, not queued."""

    code = "overloaded"


class TooManySessions(MnemoError):
    """The user already has as many live sessions as a user may (``max_sessions_per_user``)."""

    code = "too_many_sessions"


class NotHome(MnemoError):
    """A cluster node does not serve this user now (another node is their home, or this
    node is handing them over); ``retry_after`` seconds, the proxy will have sent them
    to their home, or this node will have become it."""

    code = "not_home"

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ArchiveUnavailable(MnemoError):
    """The store did not make the write durable in time (it is retried in the background)."""

    code = "archive_unavailable"


class LlmFailure(MnemoError):
    """The language model could not answer."""

    code = "llm_error"


class LlmUnavailable(LlmFailure):
    """Ollama cannot be reached."""

    code = "llm_unavailable"


class ModelBusy(LlmUnavailable):
    """This user already has as many model calls waiting as a user may
    (``actors.model_queue``): treated as a model out of reach, for this user only."""

    code = "model_busy"


class LlmTimeout(LlmFailure):
    """Ollama did not answer within the configured timeout."""

    code = "llm_timeout"


class LlmError(LlmFailure):
    """Ollama answered with an error status or with output that is not its protocol."""

    code = "llm_error"


class LlmInvalidOutput(LlmError):
    """The model's answer is not what was asked for (bad JSON, wrong types, truncated)."""

    code = "llm_invalid_output"
