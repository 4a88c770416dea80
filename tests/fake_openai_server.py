"""A scripted OpenAI-compatible chat completions server on a free loopback port.

Real model clients (autogen-ext's ``OpenAIChatCompletionClient``, CrewAI's LLM) talk
to it over real HTTP, as to a local runtime, with no network: each POST to
``/v1/chat/completions`` gets the next scripted assistant message (the last one
repeats; a request offering no tools, such as AutoGen's reflection on a tool's
result, gets ``without_tools`` when given), and every request body is kept::

    with FakeOpenAI([tool_call("search", {"q": "w"}, "call_0")]) as server:
        client = OpenAIChatCompletionClient(model="gpt-4o", api_key="x", base_url=server.url)
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """An assistant message asking for one tool call."""
    function = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def text(content: str) -> dict[str, Any]:
    """An assistant message that answers in text (no tool call)."""
    return {"role": "assistant", "content": content}


class FakeOpenAI:
    """The server, started on entry and shut down on exit."""

    def __init__(
        self,
        answers: list[dict[str, Any]],
        model: str = "gpt-4o",  # the model named in an answer when the request names none
        without_tools: dict[str, Any] | None = None,
    ) -> None:
        self.answers = answers
        self.without_tools = without_tools
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL a client is given (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            n = len(self.requests) - 1
            if self.without_tools is not None and not body.get("tools"):
                message = self.without_tools
            else:
                scripted = sum(1 for r in self.requests if r.get("tools")) - 1
                message = self.answers[min(scripted, len(self.answers) - 1)]
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # no access log on stderr
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                data = json.dumps(fake._answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
