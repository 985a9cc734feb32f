"""The plan a reviewer reads for a tool call, and the arguments an edit of it gives.

One format for every adapter, in Python and in Node (``contrib/typescript/adapters/plan.js``
writes the same text and reads it the same way; ``contrib/adapters-vectors.json`` holds the
cases both check, and docs/guide/adapters.md says the rule in words). Why this shape: the
page and the terminal screen render a plan as Markdown, so the arguments sit in a fenced
block (each on its own line, shown as typed, never reflowed), and a reviewer edits values
in place; the adapter reads the edit back by the type each argument had, and an edit it
cannot read is refused with the reason, never guessed at.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Tuple

__all__ = ["PlanUnreadable", "code_span", "dump", "head_of", "parse_plan", "render_plan", "shown_name"]

#: A name shown as it is; any other is quoted as a JSON string.
_SIMPLE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
# Characters a JSON string escapes that JSON itself does not (DEL, C1, the Unicode line and
# paragraph separators), so that no value can break a line on the screen.
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029]")
# Characters that keep a text out of a plain line (every control but tab), out of a block
# (every control but tab and line feed), and a tool name out of its code span.
_NOT_PLAIN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NOT_BLOCK = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NOT_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FENCE = re.compile(r"`{3,}\Z")
_BLOCKS = ("|", "|-", "|+")
_SPACE = " \t"
_EMPTY = "(no arguments)"


class PlanUnreadable(ValueError):
    """The reviewer's edit of a tool call's plan is not arguments the adapter can read.
    ``kind``: ``head``, ``no_block``, ``unclosed``, ``outside``, ``line``, ``twice``,
    ``not_json``, ``not_string`` or ``input``; ``reason``: what is wrong, for people."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def dump(value: Any) -> str:
    """Compact JSON (as JavaScript's ``JSON.stringify`` writes it), with DEL, C1 and the
    Unicode line separators escaped too."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _ESCAPE.sub(lambda m: "\\u%04x" % ord(m.group(0)), text)


def shown_name(name: str) -> str:
    """A tool's name as a person reads it: as it is, or as JSON when it is empty or holds a
    control character."""
    return dump(name) if not name or _NOT_NAME.search(name) else name


def code_span(name: str) -> str:
    """``name`` as Markdown inline code (:func:`shown_name`)."""
    shown = shown_name(name)
    ticks = "`" * (max((len(r) for r in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return ticks + pad + shown + pad + ticks


def head_of(tool: str, whole: bool) -> str:
    """The plan's first line: ``whole`` when the input is not an object (one ``input:`` line)."""
    return "Run %s with%s:" % (code_span(tool), " the input" if whole else "")


def _block(text: str) -> List[str]:
    if text.endswith("\n\n"):
        indicator, body = "|+", text[:-1]
    elif text.endswith("\n"):
        indicator, body = "|", text[:-1]
    else:
        indicator, body = "|-", text
    lines = body.split("\n") if body else []
    return [indicator] + [("  " + line) if line else "" for line in lines]


def _value_lines(value: Any) -> List[str]:
    if isinstance(value, str):
        if value and not _NOT_PLAIN.search(value) and value[0] not in ' \t"|' and value[-1] not in _SPACE:
            return [value]
        if "\n" in value and not _NOT_BLOCK.search(value):
            return _block(value)
    return [dump(value)]


def render_plan(tool: str, args: Any) -> str:
    """The plan a reviewer reads (and may edit) for a call of ``tool`` with ``args``."""
    whole = not isinstance(args, Mapping)
    entries = [("input", args)] if whole else list(args.items())
    lines: List[str] = []
    for name, value in entries:
        name = str(name)
        first, *rest = _value_lines(value)
        lines.append("%s: %s" % (name if _SIMPLE.match(name) else dump(name), first))
        lines.extend(rest)
    body = "\n".join(lines) if lines else _EMPTY
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", body)), default=0) + 1)
    return "%s\n\n%s\n%s\n%s\n" % (head_of(tool, whole), fence, body, fence)


def _loads(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    return json.loads(text, parse_constant=refuse)


def _split(line: str, n: int) -> Tuple[str, str]:
    """A line's name and the text after its colon."""
    bad = PlanUnreadable("line", "line %d is not `name: value`: %s" % (n, dump(line)))
    if line.startswith('"'):
        i = 1
        while i < len(line) and line[i] != '"':
            i += 2 if line[i] == "\\" else 1
        try:
            name = _loads(line[: i + 1])
        except ValueError:
            raise bad from None
        if not isinstance(name, str) or line[i + 1 : i + 2] != ":":
            raise bad
        return name, line[i + 2 :]
    at = line.find(":")
    if at < 0 or not _SIMPLE.match(line[:at]):
        raise bad
    return line[:at], line[at + 1 :]


def _value(n: int, name: str, raw: str, asked: Mapping[str, Any]) -> Any:
    """The value of one line (``raw``: after the colon, spaces trimmed) by the type asked."""
    known = name in asked
    if (known and isinstance(asked[name], str)) or (not known and raw.startswith('"')):
        if not raw.startswith('"'):
            return raw
        try:
            value = _loads(raw)
        except ValueError:
            value = None
        if isinstance(value, str):
            return value
        raise PlanUnreadable(
            "not_string", "line %d: the value of %s starts with '\"' and is not a JSON string" % (n, dump(name))
        )
    try:
        return _loads(raw)
    except ValueError:
        if not known:
            return raw
        raise PlanUnreadable(
            "not_json", "line %d: the value of %s must stay JSON, not %s" % (n, dump(name), dump(raw))
        ) from None


def parse_plan(text: str, tool: str, asked: Any) -> Any:
    """The arguments an edited plan of a call of ``tool`` gives; ``asked``: the arguments
    the call was asked with (their types guide the reading). Raises :class:`PlanUnreadable`."""
    whole = not isinstance(asked, Mapping)
    original: Mapping[str, Any] = {"input": asked} if whole else asked
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    head = head_of(tool, whole)
    if lines[0].rstrip(_SPACE) != head:
        raise PlanUnreadable("head", "the first line must stay %s: the tool cannot change" % dump(head))
    i = 1
    while i < len(lines) and not lines[i].strip(_SPACE):
        i += 1
    if i == len(lines) or not _FENCE.match(lines[i].strip(_SPACE)):
        raise PlanUnreadable("no_block", "the edited plan has no fenced block of arguments")
    fence = lines[i].strip(_SPACE)
    start = i + 1
    end = next((j for j in range(start, len(lines)) if lines[j].strip(_SPACE) == fence), None)
    if end is None:
        raise PlanUnreadable("unclosed", "the fenced block of arguments is not closed")
    for j in range(end + 1, len(lines)):
        if lines[j].strip(_SPACE):
            raise PlanUnreadable("outside", "line %d is outside the fenced block of arguments" % (j + 1))
    body = [(j + 1, lines[j]) for j in range(start, end)]
    out: Dict[str, Any] = {}
    if [line.strip(_SPACE) for _, line in body if line.strip(_SPACE)] != [_EMPTY]:
        k = 0
        while k < len(body):
            n, line = body[k]
            k += 1
            if not line.strip(_SPACE):
                continue
            name, raw = _split(line, n)
            raw = raw.strip(_SPACE)
            if name in out:
                raise PlanUnreadable("twice", "line %d gives %s a second time" % (n, dump(name)))
            if raw in _BLOCKS:
                block: List[str] = []
                while k < len(body) and (body[k][1].startswith("  ") or not body[k][1].strip(_SPACE)):
                    block.append(body[k][1][2:] if body[k][1].startswith("  ") else "")
                    k += 1
                if raw != "|+":
                    while block and not block[-1]:
                        block.pop()
                value: Any = "\n".join(block) + ("\n" if raw == "|" or (raw == "|+" and block) else "")
                if name in original and not isinstance(original[name], str):
                    value = _value(n, name, value, original)
                out[name] = value
            else:
                out[name] = _value(n, name, raw, original)
    if whole:
        if list(out) != ["input"]:
            raise PlanUnreadable("input", "the edited input must be the one `input:` line")
        return out["input"]
    return out
