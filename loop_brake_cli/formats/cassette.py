"""VCR cassettes (YAML): recorded HTTP exchanges with model APIs (pydantic-ai, vcrpy).

Only the recorded RESPONSES are read: each request repeats the conversation so
far, so counting requests would count every call again at every turn::

    interactions:
    - request: {uri: https://api.openai.com/v1/chat/completions, parsed_body: {...}}
      response:
        parsed_body: {choices: [{message: {tool_calls: [{id: call_1, function: {...}}]}}]}

A response body is ``response.parsed_body`` (pydantic-ai) or the text of
``response.body.string`` (vcrpy): JSON, or a server-sent-event stream. The
calls are, by API:

* OpenAI Chat Completions: ``choices[].message.tool_calls``; streamed, the
  ``delta.tool_calls`` fragments are joined per choice and ``index`` (``id``
  and name come first, ``arguments`` arrive in pieces).
* OpenAI Responses: ``output[]`` items ``function_call`` (``call_id``);
  streamed, the ``response.output_item.done`` events (else the final
  ``response.completed`` output).
* Anthropic Messages: ``content[]`` blocks ``tool_use``, ``server_tool_use``
  and ``mcp_tool_use`` (see the anthropic adapter); streamed,
  ``content_block_start`` plus the ``input_json_delta`` fragments of its index.
* Gemini ``generateContent``: ``candidates[].content.parts[].functionCall``
  (``name``, ``args``, ``id`` when present), streamed or not.

Usage: each response's own figures, one turn per response, before its calls:
Chat Completions ``usage`` (a stream's last chunk that has one), Responses
``usage`` (a stream's ``response.completed``), Anthropic ``usage`` (a stream's
``message_start`` figures with the final ``message_delta`` counts over them),
Gemini ``usageMetadata`` (a stream's last). Each converts as its adapter
does: input never includes the cache reads or writes counted apart, output
includes reasoning; Gemini's ``promptTokenCount`` includes
``cachedContentTokenCount`` and its ``candidatesTokenCount`` excludes
``thoughtsTokenCount``. A stream is read whole before its calls, so its usage
comes first even though the API sends it last.

Results are in the REQUESTS: each one sends back the results of the calls the
previous response made, before the next response. So an interaction's request
is read for results only (its calls were counted in the response that made
them): Chat ``tool`` messages, Anthropic ``tool_result`` blocks, Responses
``function_call_output`` items, Gemini ``functionResponse`` parts, each a
``ToolResult`` paired by its call id, once per id (every request repeats the
conversation); a Gemini part without an id is read only from the request's
last content, and answers the latest call.

A body kept as ``!!binary`` gzip (vcrpy does so for compressed responses) is
inflated first. The session is the file. A call in a stream is located by the path of the body
string plus ``#<n>``, the number (from 0) of the stream event that completed it.
The YAML is read with a safe loader that keeps dates as strings, as they were in
the JSON that was recorded.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any

from ..core.canonical import JSONInputError, parse_json
from ..core.records import BadRecord, Record, ToolResult, Usage
from ..readers.reader import Source
from . import FormatInfo
from ._common import CallLedger, file_session, json_path, make_call, never_raises, tokens
from .anthropic import CALL_BLOCKS
from .anthropic import content_calls as anthropic_content_calls
from .anthropic import response_usage as anthropic_usage
from .openai_chat import response_calls
from .openai_chat import response_usage as chat_usage
from .openai_responses import items_calls
from .openai_responses import response_usage as responses_usage

INFO = FormatInfo(
    name="cassette",
    description="VCR cassettes (YAML) of OpenAI, Anthropic and Gemini API responses",
    line_based=False,
    patterns=("*.yaml", "*.yml"),
)

_INTERACTIONS = re.compile(rb"(?m)^interactions:[ \t]*$")
_EXCHANGE = re.compile(rb"(?m)^[ \t]*-?[ \t]*(request|response):[ \t]*$")


def sniff(head: bytes) -> bool:
    """A top-level ``interactions:`` list of request/response pairs (a bytes search for
    the key first: a multi-line ``^`` pattern tries every position of the head)."""
    if b"interactions:" not in head:
        return False
    return bool(_INTERACTIONS.search(head) and _EXCHANGE.search(head))


def _loader() -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    # base is chosen at run time (the C loader where PyYAML has it): not a static type
    class JSONishLoader(base):  # type: ignore[misc, valid-type]
        """SafeLoader without the YAML 1.1 timestamp type: dates stay strings."""

    JSONishLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return JSONishLoader


_MAX_BODY = 64 << 20


def _text_of(body: bytes) -> str:
    """A ``!!binary`` body as text: gzip (as vcrpy keeps compressed bodies) is inflated,
    at most 64 MiB of it, so a hostile cassette cannot exhaust memory."""
    if body.startswith(b"\x1f\x8b"):
        try:
            inflater = zlib.decompressobj(wbits=31)
            body = inflater.decompress(body, _MAX_BODY)
        except zlib.error:
            return ""
    return body.decode("utf-8", "replace")


def _index(obj: dict[str, Any]) -> int | str | None:
    """A stream's ``index`` field, if it can key a table (input decides its type): a
    number or a string, never ``true`` (which would key the same entry as ``1``)."""
    index = obj.get("index")
    return index if isinstance(index, (int, str)) and index.__class__ is not bool else None


def _at(records: Iterator[Record], where: str) -> Iterator[Record]:
    """Relocate records found inside one stream event to that event."""
    for record in records:
        record.path = where
        yield record


class _Cassette:
    """One file's state: its session and the call ids already counted."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.ledger = CallLedger()

    # -- JSON bodies -------------------------------------------------------

    def body(self, body: Any, parts: tuple[str | int, ...]) -> Iterator[Record]:
        if not isinstance(body, dict):
            return
        if isinstance(body.get("choices"), list):  # its usage first, as response_calls does
            yield from response_calls(body, self.ledger, self.session, None, parts)
        if isinstance(body.get("output"), list):
            usage = responses_usage(body, self.session, None, parts)
            if usage is not None:
                yield usage
            yield from items_calls(
                body["output"], self.ledger, self.session, None, (*parts, "output")
            )
        if isinstance(body.get("content"), list) and body.get("role") in (None, "assistant"):
            if isinstance(body.get("usage"), dict):
                yield anthropic_usage(body, body["usage"], self.session, None, parts)
            yield from anthropic_content_calls(
                body["content"], self.ledger, self.session, None, (*parts, "content")
            )
        if isinstance(body.get("candidates"), list):
            usage = self.gemini_usage(body, json_path(*parts, "usageMetadata"))
            if usage is not None:
                yield usage
            yield from self.gemini(body["candidates"], parts, None)

    def gemini_usage(self, body: dict[str, Any], where: str) -> Usage | None:
        """A Gemini response's ``usageMetadata`` as one turn."""
        meta = body.get("usageMetadata")
        if not isinstance(meta, dict):
            return None
        turn, model = body.get("responseId"), body.get("modelVersion")
        usage = Usage(
            self.session,
            turn if isinstance(turn, str) and turn else None,
            model if isinstance(model, str) and model else None,
            path=where,
        )
        prompt = tokens(meta.get("promptTokenCount"))
        cached = tokens(meta.get("cachedContentTokenCount"))
        tool = tokens(meta.get("toolUsePromptTokenCount")) or 0
        if prompt is not None:
            usage.input_tokens = (
                prompt - (cached or 0) + tool if (cached or 0) <= prompt else prompt
            )
        usage.cache_read_tokens = cached
        output, thoughts = (
            tokens(meta.get("candidatesTokenCount")),
            tokens(meta.get("thoughtsTokenCount")),
        )
        if output is not None or thoughts is not None:
            usage.output_tokens = (output or 0) + (thoughts or 0)
        usage.reasoning_tokens = thoughts
        return usage

    def stream_usage(self, events: list[Any], base: str) -> Usage | None:
        """The usage of a whole stream: the API sends it last, it is reported first."""
        found: Usage | None = None
        start: dict[str, Any] | None = None  # Anthropic's message_start message
        for number, event in enumerate(events):
            if not isinstance(event, dict):
                continue
            where = f"{base}#{number}"
            kind = event.get("type")
            if isinstance(event.get("usage"), dict) and "choices" in event:
                found = chat_usage(event, self.session, None, ()) or found
            elif isinstance(event.get("usageMetadata"), dict):
                found = self.gemini_usage(event, where) or found
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                if isinstance(event.get("response"), dict):
                    found = responses_usage(event["response"], self.session, None, ()) or found
            elif kind == "message_start" and isinstance(event.get("message"), dict):
                start = event["message"]
                if isinstance(start.get("usage"), dict):
                    found = anthropic_usage(start, start["usage"], self.session, None, ())
            elif kind == "message_delta" and isinstance(event.get("usage"), dict):
                before = start.get("usage") if isinstance(start, dict) else None
                figures = dict(before) if isinstance(before, dict) else {}
                figures.update(event["usage"])
                found = anthropic_usage(start or {}, figures, self.session, None, ())
            else:
                continue
            if found is not None:
                found.path = where
        return found

    def gemini(
        self, candidates: list[Any], parts: tuple[str | int, ...], path: str | None
    ) -> Iterator[Record]:
        for c_index, candidate in enumerate(candidates):
            content = candidate.get("content") if isinstance(candidate, dict) else None
            pieces = content.get("parts") if isinstance(content, dict) else None
            if not isinstance(pieces, list):
                continue
            for p_index, part in enumerate(pieces):
                call = part.get("functionCall") if isinstance(part, dict) else None
                if not isinstance(call, dict):
                    continue
                where = path or json_path(
                    *parts, "candidates", c_index, "content", "parts", p_index, "functionCall"
                )
                record = make_call(
                    self.ledger, call.get("name"), call.get("args"), self.session,
                    call.get("id"), None, where,
                )  # fmt: skip
                if record is not None:
                    yield record

    # -- streams -------------------------------------------------------------

    def stream(self, text: str, parts: tuple[str | int, ...]) -> Iterator[Record]:
        base = json_path(*parts)
        events: list[Any] = []
        for raw in text.split("\n"):
            raw = raw.rstrip("\r")
            if not raw.startswith("data:"):
                continue
            data = raw[5:].strip()
            if not data or data == "[DONE]":
                continue
            try:
                events.append(parse_json(data))
            except JSONInputError as exc:
                yield BadRecord(f"stream event {len(events)}: {exc}", None, base)
                events.append(None)
        usage = self.stream_usage(events, base)
        if usage is not None:
            yield usage
        chat: dict[tuple[Any, Any], dict[str, Any]] = {}
        blocks: dict[Any, dict[str, Any]] = {}
        responses_done = False
        finals: list[tuple[int, Any]] = []
        for number, event in enumerate(events):
            if not isinstance(event, dict):
                continue
            where = f"{base}#{number}"
            kind = event.get("type")
            if isinstance(event.get("choices"), list):
                self._chat_chunk(event["choices"], chat, number)
            elif isinstance(event.get("candidates"), list):
                yield from self.gemini(event["candidates"], parts, where)
            elif kind == "response.output_item.done":
                responses_done = True
                item = event.get("item")
                if isinstance(item, dict):
                    yield from _at(items_calls([item], self.ledger, self.session, None, ()), where)
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                finals.append((number, event.get("response")))
            elif kind == "content_block_start":
                block = event.get("content_block")
                if isinstance(block, dict) and block.get("type") in CALL_BLOCKS:
                    blocks[_index(event)] = {"block": block, "json": [], "at": number}
            elif kind == "content_block_delta":
                open_block = blocks.get(_index(event))
                delta = event.get("delta")
                if open_block is not None and isinstance(delta, dict):
                    fragment = delta.get("partial_json")
                    if isinstance(fragment, str):
                        open_block["json"].append(fragment)
            elif kind == "content_block_stop":
                open_block = blocks.pop(_index(event), None)
                if open_block is not None:
                    yield from self._block(open_block, f"{base}#{number}")
        for open_block in blocks.values():  # a stream cut before content_block_stop
            yield from self._block(open_block, f"{base}#{open_block['at']}")
        for call in chat.values():
            yield from self._chat_call(call, f"{base}#{call['at']}")
        if not responses_done:
            for number, response in finals:
                if isinstance(response, dict) and isinstance(response.get("output"), list):
                    items = items_calls(response["output"], self.ledger, self.session, None, ())
                    yield from _at(items, f"{base}#{number}")

    def _chat_chunk(
        self, choices: list[Any], chat: dict[tuple[Any, Any], dict[str, Any]], number: int
    ) -> None:
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            tool_calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            if not isinstance(tool_calls, list):
                continue
            for fragment in tool_calls:
                if not isinstance(fragment, dict):
                    continue
                key = (_index(choice), _index(fragment))
                call = chat.setdefault(key, {"id": None, "name": "", "args": [], "at": number})
                call["at"] = number
                if isinstance(fragment.get("id"), str) and fragment["id"]:
                    call["id"] = fragment["id"]
                function = fragment.get("function")
                if isinstance(function, dict):
                    if isinstance(function.get("name"), str):
                        call["name"] += function["name"]
                    if isinstance(function.get("arguments"), str):
                        call["args"].append(function["arguments"])

    def _chat_call(self, call: dict[str, Any], where: str) -> Iterator[Record]:
        record = make_call(
            self.ledger, call["name"] or None, "".join(call["args"]), self.session, call["id"],
            None, where,
        )  # fmt: skip
        if record is not None:
            yield record

    def _block(self, open_block: dict[str, Any], where: str) -> Iterator[Record]:
        block = open_block["block"]
        text = "".join(open_block["json"])
        raw_args = text if text.strip() else block.get("input")
        record = make_call(
            self.ledger, block.get("name"), raw_args, self.session, block.get("id"), None, where
        )
        if record is not None:
            yield record

    # -- interactions --------------------------------------------------------

    def request_results(self, request: Any, index: int) -> Iterator[Record]:
        """The results a request sends back (module docstring); nothing else of it is read."""
        if not isinstance(request, dict):
            return
        body, where = request.get("parsed_body"), ("interactions", index, "request", "parsed_body")
        if body is None:
            raw = request.get("body")
            text = raw.get("string") if isinstance(raw, dict) else raw
            if isinstance(text, bytes):
                text = _text_of(text)
            if not isinstance(text, str) or not text.lstrip().startswith("{"):
                return
            try:
                body = parse_json(text)
            except JSONInputError:
                return  # a request is not what the cassette is read for: no error for it
            where = ("interactions", index, "request", "body")
        if not isinstance(body, dict):
            return
        for key in ("messages", "input", "contents"):
            entries = body.get(key)
            if isinstance(entries, list):
                for number, entry in enumerate(entries):
                    last = number == len(entries) - 1
                    yield from self._entry_results(entry, (*where, key, number), last)

    def _entry_results(
        self, entry: Any, parts: tuple[str | int, ...], last: bool
    ) -> Iterator[Record]:
        if not isinstance(entry, dict):
            return
        kind = entry.get("type")
        if entry.get("role") == "tool" or kind in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            call_id = entry.get("tool_call_id", entry.get("call_id"))
            value = entry.get("content") if entry.get("role") == "tool" else entry.get("output")
            yield from self._result(call_id, value, parts)
            return
        pieces = entry.get("content") if "content" in entry else entry.get("parts")
        if not isinstance(pieces, list):
            return
        for number, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                continue
            where = (*parts, "content" if "content" in entry else "parts", number)
            if piece.get("type") == "tool_result":
                value = {"content": piece.get("content"), "isError": piece.get("is_error") is True}
                yield from self._result(piece.get("tool_use_id"), value, where)
            response = piece.get("functionResponse")
            if isinstance(response, dict):
                call_id = response.get("id")
                if isinstance(call_id, str) and call_id:
                    yield from self._result(call_id, response.get("response"), where)
                elif last:
                    path = json_path(*where)
                    yield ToolResult(self.session, None, response.get("response"), None, None, path)

    def _result(self, call_id: Any, value: Any, parts: tuple[str | int, ...]) -> Iterator[Record]:
        if isinstance(call_id, str) and call_id and not self.ledger.answered(call_id):
            yield ToolResult(self.session, call_id, value, None, None, json_path(*parts))

    def interaction(self, interaction: Any, index: int) -> Iterator[Record]:
        parts: tuple[str | int, ...] = ("interactions", index, "response")
        if not isinstance(interaction, dict):
            yield BadRecord("interaction is not a mapping", None, json_path("interactions", index))
            return
        yield from self.request_results(interaction.get("request"), index)
        response = interaction.get("response")
        if not isinstance(response, dict):
            yield BadRecord("interaction without a response mapping", None, json_path(*parts))
            return
        if "parsed_body" in response:
            yield from self.body(response["parsed_body"], (*parts, "parsed_body"))
            return
        body = response.get("body")
        if isinstance(body, dict):
            text, body_parts = body.get("string"), (*parts, "body", "string")
        else:
            text, body_parts = body, (*parts, "body")
        if isinstance(text, bytes):
            text = _text_of(text)
        if not isinstance(text, str) or not text.strip():
            return
        stripped = text.lstrip()
        if stripped.startswith(("{", "[")):
            try:
                value = parse_json(text)
            except JSONInputError as exc:
                yield BadRecord(f"response body: {exc}", None, json_path(*body_parts))
                return
            yield from self.body(value, body_parts)
        elif "data:" in text:
            yield from self.stream(text, body_parts)


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every call in the cassette's responses, in recorded order, each once, with each
    response's usage and the results the requests send back."""
    data = source.read_all()
    try:
        import yaml

        document = yaml.load(data, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except Exception as exc:  # noqa: BLE001 - any YAML failure is bad input, not a crash
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        yield BadRecord(f"not a readable YAML cassette ({exc.__class__.__name__})", line)
        return
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        yield BadRecord("no interactions list at the top level")
        return
    cassette = _Cassette(file_session(source))
    for index, interaction in enumerate(document["interactions"]):
        yield from cassette.interaction(interaction, index)
