"""OpenTelemetry GenAI traces in OTLP/JSON: ``execute_tool`` spans are the calls.

One OTLP/JSON document (``{"resourceSpans":[…]}``), or JSON lines of such
documents as the collector's file exporter writes them::

    {"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8e…","spanId":"eee1…",
     "parentSpanId":"051…","name":"execute_tool get_weather","startTimeUnixNano":"1…",
     "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
                   {"key":"gen_ai.tool.name","value":{"stringValue":"get_weather"}},
                   {"key":"gen_ai.tool.call.id","value":{"stringValue":"call_1"}},
                   {"key":"gen_ai.tool.call.arguments",
                    "value":{"stringValue":"{\\"location\\":\\"Paris\\"}"}}]}]}]}]}

Per the GenAI semantic conventions (``gen-ai-spans.md``, "Execute tool span"):

* a call is a span with ``gen_ai.operation.name == "execute_tool"``; tool
  ``gen_ai.tool.name`` (a Recommended attribute: when absent, the span name
  ``execute_tool {gen_ai.tool.name}`` gives it), call id ``gen_ai.tool.call.id``;
* ``gen_ai.tool.call.arguments`` is "expected to be an object" and MAY be a
  JSON string: a structured value (``kvlistValue``/``arrayValue``) is decoded,
  a string is parsed (unparseable: hashed as the string, counted). The
  attribute is Opt-In: a span without it cannot be judged (every call of a
  tool would look identical), so it is reported as an error, not counted as
  ``{}``. pydantic-ai's older ``tool_arguments`` attribute (a JSON string) is
  read when the standard one is absent, and its older "running tool" spans
  (``gen_ai.tool.name`` but no operation name) count as tool spans;
* the session is ``gen_ai.conversation.id`` from the span, else from the
  nearest ancestor that has it (``parentSpanId`` within the trace; the
  conventions put it on chat and ``invoke_agent`` spans), else the trace id.

Spans are exported as they end (children before parents, batches out of
order), so the whole input is read first and calls are ordered by
``startTimeUnixNano`` (ties keep file order); a span exported twice (same
trace and span id) counts once. Calls are located by JSON path, plus the line
for JSON lines. ``intValue`` may be a string, as the OTLP/JSON mapping says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..canonical import JSONInputError, parse_json
from ..reader import Source
from ..records import BadRecord, Record, ToolCall
from . import FormatInfo
from ._common import parse_arguments
from ._sniff import head_lines

INFO = FormatInfo(
    name="otel",
    description="OpenTelemetry OTLP/JSON traces (GenAI execute_tool spans)",
    line_based=False,
    patterns=("*.json", "*.jsonl"),
)

OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
CALL_ID = "gen_ai.tool.call.id"
ARGUMENTS = "gen_ai.tool.call.arguments"
CONVERSATION = "gen_ai.conversation.id"
LEGACY_ARGUMENTS = "tool_arguments"  # pydantic-ai / logfire before gen_ai.tool.call.arguments

_SNIFF = re.compile(rb'^\s*\{.{0,200}?"(resourceSpans|resource_spans)"\s*:\s*\[', re.S)
_MISSING = object()
_OTHER_SIGNALS = ("resourceLogs", "resourceMetrics", "resourceProfiles", "resource_logs")


def sniff(head: bytes) -> bool:
    """The head opens an OTLP/JSON traces document, or one of its lines is one."""
    if _SNIFF.match(head.lstrip(b"\xef\xbb\xbf")):
        return True
    return any(_SNIFF.match(line) for line in head_lines(head, 50))


def _any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as the plain JSON value it encodes (``_MISSING`` if empty)."""
    if not isinstance(value, dict):
        return _MISSING
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        number = value["intValue"]
        if isinstance(number, str):
            try:
                return parse_json(number)  # a JS number, as a JSON parser would see it
            except JSONInputError:
                return number
        return number
    if "doubleValue" in value:
        number = value["doubleValue"]
        return None if isinstance(number, str) else number  # "NaN"/"Infinity": JSON null
    if "arrayValue" in value:
        array = value["arrayValue"]
        items = array.get("values") if isinstance(array, dict) else None
        decoded = (_any_value(item) for item in (items if isinstance(items, list) else []))
        return [None if item is _MISSING else item for item in decoded]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"]
        pairs = kvlist.get("values") if isinstance(kvlist, dict) else None
        return _attributes(pairs)
    if "bytesValue" in value:
        return value["bytesValue"]
    return _MISSING


def _attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``[{key, value}]`` as a dict; the last of a repeated key wins, as in JSON."""
    out: dict[str, Any] = {}
    if not isinstance(pairs, list):
        return out
    for pair in pairs:
        if isinstance(pair, dict) and isinstance(pair.get("key"), str):
            decoded = _any_value(pair.get("value"))
            out[pair["key"]] = None if decoded is _MISSING else decoded
    return out


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _start(span: dict[str, Any]) -> int:
    value = _field(span, "startTimeUnixNano", "start_time_unix_nano")
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 30:
        return int(value)
    return 0


@dataclass(slots=True)
class _Span:
    trace: str
    span: str
    parent: str
    attributes: dict[str, Any]
    start: int
    order: int
    line: int | None
    path: str
    title: str


def _documents(data: bytes) -> Iterator[tuple[int | None, Any] | BadRecord]:
    """One whole document, or JSON lines of documents."""
    try:
        yield None, parse_json(data)
        return
    except JSONInputError as whole_error:
        lines = data.split(b"\n")
        first = next((line for line in lines if line.strip()), b"")
        try:
            parse_json(first)
        except JSONInputError:
            yield _locate_error(data, whole_error)
            return
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, parse_json(line)
        except JSONInputError as exc:
            yield BadRecord(str(exc), number)


def _locate_error(data: bytes, error: JSONInputError) -> BadRecord:
    """A document that does not parse: name the line, never quote the input."""
    try:
        json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        return BadRecord(f"not valid JSON: {exc.msg[:1].lower()}{exc.msg[1:]}", exc.lineno)
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    return BadRecord(str(error))


def _spans(document: Any, line: int | None, order: int) -> Iterator[_Span | BadRecord]:
    if not isinstance(document, dict):
        yield BadRecord("not an OTLP/JSON object", line, "$")
        return
    resources = _field(document, "resourceSpans", "resource_spans")
    if resources is None and any(key in document for key in _OTHER_SIGNALS):
        return  # logs or metrics written to the same file exporter
    if not isinstance(resources, list):
        yield BadRecord("no resourceSpans array", line, "$")
        return
    for r, resource in enumerate(resources):
        scopes = None
        scope_key = "scopeSpans"
        if isinstance(resource, dict):
            for scope_key, snake in (
                ("scopeSpans", "scope_spans"),
                ("instrumentationLibrarySpans", "instrumentation_library_spans"),
            ):
                scopes = _field(resource, scope_key, snake)
                if scopes is not None:
                    break
        for s, scope in enumerate(scopes if isinstance(scopes, list) else []):
            spans = scope.get("spans") if isinstance(scope, dict) else None
            for k, span in enumerate(spans if isinstance(spans, list) else []):
                path = f"$.resourceSpans[{r}].{scope_key}[{s}].spans[{k}]"
                if not isinstance(span, dict):
                    yield BadRecord("span is not an object", line, path)
                    continue
                ids = [_field(span, *names) for names in _ID_FIELDS]
                trace, span_id, parent = (value if isinstance(value, str) else "" for value in ids)
                attributes = _attributes(span.get("attributes"))
                title = span.get("name")
                if TOOL_NAME not in attributes:  # Recommended, not Required: use the span name
                    if isinstance(title, str) and title.startswith("execute_tool "):
                        attributes[TOOL_NAME] = title[len("execute_tool ") :].strip() or None
                order += 1
                title = title if isinstance(title, str) else ""
                yield _Span(
                    trace, span_id, parent, attributes, _start(span), order, line, path, title
                )


_ID_FIELDS = (
    ("traceId", "trace_id"),
    ("spanId", "span_id"),
    ("parentSpanId", "parent_span_id"),
)


def _conversation(span: _Span, index: dict[tuple[str, str], _Span]) -> str:
    """The conversation id of the span or its nearest ancestor, else the trace id."""
    current: _Span | None = span
    visited = set()
    while current is not None and len(visited) < 1000:
        value = current.attributes.get(CONVERSATION)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        key = (current.trace, current.parent)
        if not current.parent or key in visited:
            break
        visited.add(key)
        current = index.get(key)
    return span.trace or "default"


def _is_tool_span(span: _Span) -> bool:
    """``execute_tool``; or pydantic-ai's older "running tool" span, which had no operation."""
    operation = span.attributes.get(OPERATION)
    if operation == "execute_tool":
        return True
    return (
        operation is None and span.title.startswith("running tool") and TOOL_NAME in span.attributes
    )


def _to_record(span: _Span, index: dict[tuple[str, str], _Span]) -> Record:
    attributes = span.attributes
    name = attributes.get(TOOL_NAME)
    if not isinstance(name, str):
        return BadRecord(
            "execute_tool span without a string gen_ai.tool.name", span.line, span.path
        )
    arguments = attributes.get(ARGUMENTS, attributes.get(LEGACY_ARGUMENTS, _MISSING))
    if arguments is _MISSING:
        return BadRecord(
            "execute_tool span without gen_ai.tool.call.arguments (an opt-in attribute)",
            span.line,
            span.path,
        )
    call_id = attributes.get(CALL_ID)
    if isinstance(call_id, bool) or not isinstance(call_id, (str, int, type(None))):
        call_id = None
    args, unparsed = parse_arguments(arguments)
    return ToolCall(name, args, _conversation(span, index), call_id, span.line, span.path, unparsed)


def parse(source: Source) -> Iterator[Record]:
    """Read the whole input, then yield the tool calls in start-time order."""
    try:
        yield from _parse(source.read_all())
    except RecursionError:
        yield BadRecord("OTLP/JSON nested too deep")


def _parse(data: bytes) -> Iterator[Record]:
    index: dict[tuple[str, str], _Span] = {}
    tools: list[_Span] = []
    order = 0
    for item in _documents(data):
        if isinstance(item, BadRecord):
            yield item
            continue
        line, document = item
        for span in _spans(document, line, order):
            if isinstance(span, BadRecord):
                yield span
                continue
            order = span.order
            key = (span.trace, span.span)
            if span.span and key in index:
                continue  # the same span exported twice
            if span.span:
                index[key] = span
            if _is_tool_span(span):
                tools.append(span)
    tools.sort(key=lambda span: (span.start, span.order))
    for span in tools:
        yield _to_record(span, index)
