"""Secrets hidden before anything is written: a URL's password, a token.

Every command line and every setting the project records (report headers, the history's
runs, the board's lock file, messages, the fleet page) goes through these functions first.
They read free text, so a URL is found wherever it stands: a whole argument,
``--opt=URL``, ``-o key=URL``, inside a message. What is hidden, each replaced by
:data:`HIDDEN`:

- the password of a URL's user part (``postgresql://user:PASSWORD@host/db``: what follows
  the first ``:`` of the user part up to the ``@`` before the host), and the user part of
  a web URL, a token there (``https://TOKEN@github.com/...``);
- the value of a parameter whose name says it is a secret (``?password=``, ``&token=``,
  ``sslpassword=``, ``--db-password=``, ``api_key=``...): :func:`secret_name`;
- in a command line, the argument after an option so named (``--token VALUE``).

Text without a secret comes back unchanged; nothing here raises on odd input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

HIDDEN = "***"

# The long words may end any name (sslpassword, accessToken); pass and pwd only a name or
# its last part (db_pass, not bypass).
_SECRET_WORDS = (
    r"(?:[\w.-]*?(?:password|passwd|token|secret|api[-_]?key|access[-_]?key)"
    r"|(?:[\w.-]*[-_.])?(?:pass|pwd))"
)
_SECRET_NAME = re.compile(_SECRET_WORDS, re.IGNORECASE)
# The password runs to the ``@`` after which the host has no ``@`` more (an unescaped
# ``@`` in a password would otherwise show its end). In one argument or setting the
# password may hold spaces; in a message a space ends it.
_AT_HOST = r"@(?=[^\s@/?#]*(?:[/?#\s]|$))"
_URL_PASSWORD = re.compile(rf"([a-zA-Z][\w+.-]*://[^\s:/@?#]*:)[^\s]+?{_AT_HOST}")
_URL_PASSWORD_ONE = re.compile(rf"([a-zA-Z][\w+.-]*://[^\s:/@?#]*:).+?{_AT_HOST}")
# https://TOKEN@github.com: a web URL's user part alone is a token.
_WEB_TOKEN = re.compile(r"(\b(?:git\+)?https?://)[^\s:/@?#]+@")
# A name standing alone (not the tail of a longer word) and its value, up to the next
# parameter or word: ``?password=x&``, ``--db-password=x``, ``token=x``.
_SECRET_PARAM = re.compile(rf"(?<![\w.-])({_SECRET_WORDS}=)[^\s&#;,'\"]+", re.IGNORECASE)
_SECRET_FLAG = re.compile(rf"-{{1,2}}{_SECRET_WORDS}", re.IGNORECASE)


def secret_name(name: str) -> bool:
    """Whether a parameter, option or setting called ``name`` holds a secret: its name
    ends in password, passwd, pass, pwd, token, secret, api_key or access_key (any case,
    ``-`` or ``_``)."""
    return _SECRET_NAME.fullmatch(name.strip().lstrip("-")) is not None


def redact_text(text: str) -> str:
    """``text`` (a message, a page) with every URL password, web URL token and secret
    parameter's value hidden."""
    return _redact(text, _URL_PASSWORD)


def _redact(text: str, url_password: re.Pattern[str]) -> str:
    if "=" not in text and "@" not in text:  # the common case, at no cost
        return text
    text = url_password.sub(rf"\1{HIDDEN}@", text)
    text = _WEB_TOKEN.sub(rf"\1{HIDDEN}@", text)
    return _SECRET_PARAM.sub(rf"\1{HIDDEN}", text)


def redact_argv(argv: Iterable[object]) -> list[str]:
    """A command line as it may be recorded: each argument through :func:`redact_text`,
    and the argument after a secret-named option without ``=`` (``--token VALUE``) hidden."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        text = str(arg)
        if hide_next:
            out.append(HIDDEN)
            hide_next = False
            continue
        hide_next = _SECRET_FLAG.fullmatch(text) is not None
        out.append(_redact(text, _URL_PASSWORD_ONE))
    return out


def redact_value(value: Any) -> Any:
    """A setting (or any JSON-like value) as it may be recorded: strings through
    :func:`redact_text`, the value of a secret-named key hidden, mappings and sequences
    walked; numbers, booleans and None as they are."""
    if isinstance(value, str):
        return _redact(value, _URL_PASSWORD_ONE)
    if isinstance(value, Mapping):
        return {
            k: HIDDEN if isinstance(k, str) and secret_name(k) and v not in (None, "")
            else redact_value(v)
            for k, v in value.items()
        }  # fmt: skip
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [redact_value(v) for v in value]
    return value


def hide_values(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` through :func:`redact_text`, and each of ``secrets`` (the passwords a
    connection was given) replaced wherever it appears: a driver's message may quote one
    outside any URL."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, HIDDEN)
    return redact_text(text)
