"""Structured logging for every process: one format for structlog and stdlib loggers.

JSON lines in production (or whenever stderr is not a terminal), key=value in a terminal.
Records from stdlib loggers (uvicorn, nats, faststream when given a propagating logger) pass
through the same processors, so every line has the same shape and the same redaction.

In the console format every control character of a value (C0, DEL, C1: ESC above all) is
written as a ``\\x1b``-style escape: a request path is the caller's text, and an escape sequence
in it would otherwise reach the operator's terminal. JSON escapes them already.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from services.runtime.settings import LogFormat, Settings

REDACTED = "[REDACTED]"

# Libraries that install their own handlers; their records are sent to the root handler instead.
THIRD_PARTY_LOGGERS = (
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
    "faststream",
    "faststream.access",
    "faststream.access.nats",
    "nats",
    "nats.aio.client",
)

_SECRET_KEY_NAMES = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "cookie",
        "set_cookie",
        "query",
        "query_string",
        "secret_key",
        "signing_key",
    }
)
_SECRET_KEY_SUFFIXES = ("token", "secret", "password", "api_key", "api_keys", "apikey")

# A header line or field "Authorization: <anything>" loses its whole value.
_AUTHORIZATION_VALUE = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\r\n\"',}]+")
# A bare credential such as "Bearer abc.def" anywhere in a text.
_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]+=*")
# Everything after the "?" of a URL: query strings carry access tokens (SSE cannot send headers).
_QUERY_STRING = re.compile(r"\?[^\s\"'<>#?]*=[^\s\"'<>#]*")
# A credential-like key=value outside a URL, such as a form body.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)\b((?:access_|refresh_|seat_)?token|api_key|apikey|secret|password)=[^\s&\"']+"
)

_ROOT_HANDLER_NAME = "spades"

_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""C0, DEL and C1: what a terminal may act on instead of showing."""
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
"""The same without the newline, which a traceback's lines keep."""
_MULTILINE_KEYS = frozenset({"exception", "stack"})
_PLAIN_TYPES = (bool, int, float, type(None))


def configure_logging(
    settings_or_format: Settings | LogFormat = "auto",
    level: str | int | None = None,
    *,
    stream: TextIO | None = None,
) -> None:
    """Route structlog and stdlib logging through one renderer; safe to call again.

    `level` overrides the settings' `log_level`; `stream` defaults to stderr, which keeps
    stdout free for the CLI's own output.
    """
    log_format, log_level = _format_and_level(settings_or_format, level)
    stream = stream if stream is not None else sys.stderr
    renderer = _renderer(log_format, stream)

    handler = logging.StreamHandler(stream)
    handler.set_name(_ROOT_HANDLER_NAME)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_shared_processors(),
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                # Tracebacks become text before redaction so a token in one is masked too.
                structlog.processors.format_exc_info,
                redact_secrets,
                *_escaping(log_format, stream),
                renderer,
            ],
        )
    )
    _install_root_handler(handler, log_level)
    _route_third_party_loggers()

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached, so a second configure_logging (or structlog.testing.capture_logs)
        # also reaches loggers that were already used.
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A logger whose `bind()`ed keys (game_id, command_id, seat) appear on every line."""
    return structlog.stdlib.get_logger(name)


def redact_secrets(_logger: WrappedLogger, _method_name: str, event_dict: EventDict) -> EventDict:
    """Mask credentials: values of secret-named keys, Authorization values, query strings."""
    return {key: _redact_field(key, value) for key, value in event_dict.items()}


def escape_control_characters(
    _logger: WrappedLogger, _method_name: str, event_dict: EventDict
) -> EventDict:
    """Write every control character of a key or value as an escape (``\\x1b``), for a terminal.

    A value that is not text becomes its ``repr``, escaped the same way: the console renderer
    would write that ``repr`` anyway, and an object's ``repr`` may hold a caller's text raw.
    A traceback (``exception``, ``stack``) keeps its newlines, nothing else.
    """
    return {
        _escape_control(_text(key)): _escaped_value(_text(key), value)
        for key, value in event_dict.items()
    }


def _escaped_value(key: str, value: Any) -> Any:
    if isinstance(value, _PLAIN_TYPES):
        return value
    text = value if isinstance(value, str) else _text(value) if isinstance(value, bytes) else None
    if text is None:
        text = repr(value)
    return _escape_control(text, keep_lines=key in _MULTILINE_KEYS)


def _escape_control(text: str, *, keep_lines: bool = False) -> str:
    pattern = _CONTROL_BUT_LINES if keep_lines else _CONTROL_CHARACTER
    return pattern.sub(_escape_one, text)


def _escape_one(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _redact_field(key: str, value: Any) -> Any:
    if _is_secret_key(key) and value is not None:
        return REDACTED
    return _redact_value(value)


def _redact_value(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return _redact_text(value)
    if isinstance(value, Mapping):
        return {key: _redact_field(_text(key), item) for key, item in value.items()}
    if _is_header_pair(value):
        name, header_value = value
        return (_text(name), _redact_field(_text(name), header_value))
    if isinstance(value, list | tuple | set | frozenset):
        return [_redact_value(item) for item in value]
    return value


def _is_header_pair(value: Any) -> bool:
    # ASGI and httpx carry headers as (name, value) pairs, often as bytes.
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str | bytes)


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def _redact_text(text: str) -> str:
    text = _AUTHORIZATION_VALUE.sub(rf"\g<1>{REDACTED}", text)
    text = _SCHEME_CREDENTIAL.sub(rf"\g<1> {REDACTED}", text)
    text = _QUERY_STRING.sub(f"?{REDACTED}", text)
    return _SECRET_ASSIGNMENT.sub(rf"\g<1>={REDACTED}", text)


def _is_secret_key(key: str) -> bool:
    normalized = key.lower().replace("-", "_")
    return normalized in _SECRET_KEY_NAMES or normalized.endswith(_SECRET_KEY_SUFFIXES)


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


def _format_and_level(
    settings_or_format: Settings | LogFormat, level: str | int | None
) -> tuple[LogFormat, str | int]:
    if isinstance(settings_or_format, Settings):
        settings_level = settings_or_format.log_level
        return settings_or_format.log_format, settings_level if level is None else level
    return settings_or_format, "INFO" if level is None else level


def _renderer(log_format: LogFormat, stream: TextIO) -> Processor:
    if _is_console(log_format, stream):
        return structlog.dev.ConsoleRenderer(colors=stream.isatty())
    return structlog.processors.JSONRenderer()


def _escaping(log_format: LogFormat, stream: TextIO) -> list[Processor]:
    """The console renderer writes text as it is; JSON escapes control characters itself."""
    return [escape_control_characters] if _is_console(log_format, stream) else []


def _is_console(log_format: LogFormat, stream: TextIO) -> bool:
    return log_format == "console" or (log_format == "auto" and stream.isatty())


def _install_root_handler(handler: logging.Handler, level: str | int) -> None:
    root = logging.getLogger()
    for previous in [h for h in root.handlers if h.get_name() == _ROOT_HANDLER_NAME]:
        root.removeHandler(previous)
        previous.close()
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)


def _route_third_party_loggers() -> None:
    for name in THIRD_PARTY_LOGGERS:
        library_logger = logging.getLogger(name)
        library_logger.handlers.clear()
        library_logger.propagate = True
