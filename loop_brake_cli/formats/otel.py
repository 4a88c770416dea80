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

* results: an ``execute_tool`` span's ``gen_ai.tool.call.result`` (Opt-In;
  decoded like the arguments: a structured value as JSON, a string kept as
  the string) is a ``ToolResult`` right after its call, paired by the call id;
* usage: an inference span (``gen_ai.operation.name`` ``chat``,
  ``text_completion`` or ``generate_content``) with ``gen_ai.usage.*``
  attributes is one turn (``gen_ai.response.id``, else the span id), ordered
  by its start like the calls, so before the tool spans it led to. The
  conventions say ``gen_ai.usage.cache_read.input_tokens`` and
  ``gen_ai.usage.cache_creation.input_tokens`` are included in
  ``gen_ai.usage.input_tokens``: input is what remains.
  ``gen_ai.usage.reasoning.output_tokens``, where present, is a part of the
  output. ``invoke_agent`` spans, which add up their inference spans, are
  never read for usage. The model is ``gen_ai.response.model``, else
  ``gen_ai.request.model``.
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

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolCall, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import parse_arguments, tokens
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
RESULT = "gen_ai.tool.call.result"
INFERENCE = ("chat", "text_completion", "generate_content")
USAGE_PREFIX = "gen_ai.usage."

_SNIFF = re.compile(rb'^\s*\{.{0,200}?"(resourceSpans|resource_spans)"\s*:\s*\[', re.S)
_MISSING = object()
_OTHER_SIGNALS = ("resourceLogs", "resourceMetrics", "resourceProfiles", "resource_logs")


def sniff(head: bytes) -> bool:
    """The head opens an OTLP/JSON traces document, or one of its lines is one (a bytes
    search for the key first: the pattern, tried on every line, needs it)."""
    if b'"resource' not in head:
        return False
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
    visited: set[tuple[str, str]] = set()
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


def _is_turn_span(span: _Span) -> bool:
    """An inference span that recorded usage."""
    return span.attributes.get(OPERATION) in INFERENCE and any(
        key.startswith(USAGE_PREFIX) for key in span.attributes
    )


def _usage(span: _Span, index: dict[tuple[str, str], _Span]) -> Usage:
    attributes = span.attributes
    turn = attributes.get("gen_ai.response.id")
    model = attributes.get("gen_ai.response.model", attributes.get("gen_ai.request.model"))
    usage = Usage(
        _conversation(span, index),
        turn if isinstance(turn, str) and turn else (span.span or None),
        model if isinstance(model, str) and model else None,
        line=span.line,
        path=span.path,
    )
    given = tokens(attributes.get("gen_ai.usage.input_tokens"))
    read = tokens(attributes.get("gen_ai.usage.cache_read.input_tokens"))
    written = tokens(attributes.get("gen_ai.usage.cache_creation.input_tokens"))
    if given is not None:
        rest = given - (read or 0) - (written or 0)
        usage.input_tokens = rest if rest >= 0 else given
    usage.output_tokens = tokens(attributes.get("gen_ai.usage.output_tokens"))
    usage.cache_read_tokens = read
    usage.cache_write_tokens = written
    usage.reasoning_tokens = tokens(attributes.get("gen_ai.usage.reasoning.output_tokens"))
    return usage


def _result(span: _Span, call: Record) -> ToolResult | None:
    """The tool span's result attribute, paired with the call just yielded."""
    if call.__class__ is not ToolCall or RESULT not in span.attributes:
        return None
    result = span.attributes[RESULT]
    return ToolResult(call.session, call.call_id, result, None, span.line, span.path)


def parse(source: Source) -> Iterator[Record]:
    """Read the whole input, then yield the turns and tool calls in start-time order."""
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
            if _is_tool_span(span) or _is_turn_span(span):
                tools.append(span)
    tools.sort(key=lambda span: (span.start, span.order))
    for span in tools:
        if not _is_tool_span(span):
            yield _usage(span, index)
            continue
        record = _to_record(span, index)
        yield record
        result = _result(span, record)
        if result is not None:
            yield result
