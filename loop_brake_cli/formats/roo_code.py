"""Roo Code task histories: a task's ``api_conversation_history.json``.

Roo Code, a fork of Cline, keeps each task in a folder of its own,
``…/globalStorage/rooveterinaryinc.roo-cline/tasks/<task id>/`` (the id a UUID;
its forks Kilo Code and IBM Bob alike): ``api_conversation_history.json``, the
conversation as sent to the model, with a ``ts`` on every message and none of
Cline's ``modelInfo``/``metrics``; ``ui_messages.json`` beside it, what the panel
showed, with each API request's figures (``api_req_started``, since July 2025 with
its ``apiProtocol``); ``task_metadata.json`` and ``history_item.json``::

    [{"role": "user", "content": [
       {"type": "text", "text": "<user_message>\\nFix the build\\n</user_message>"},
       {"type": "text", "text": "<environment_details>\\n…# Current Mode\\n<slug>code</slug>
        \\n<name>💻 Code</name>\\n<model>claude-sonnet-4-5</model>\\n…"}], "ts": 1768000000000},
     {"role": "assistant", "content": [{"type": "text", "text": "…"},
       {"type": "tool_use", "id": "toolu_01…", "name": "read_file", "input": {"path": "build.sh"}}],
      "id": "msg_01…", "ts": 1768000004000}, ...]

It is read as Cline's is (``formats/cline.py``, the same module ``_cline_task``):
only the markers and the names differ. Told from Cline's by its head
(``_cline_task.agent``): a history whose task message is a ``<user_message>`` (Roo
since January 2026) or whose environment details name a mode by its slug
(``# Current Mode`` then ``<slug>code</slug>``, Roo since February 2025), without
Cline's ``modelInfo``. An older Roo history, from before modes had slugs, has no
mark of its own and is read as ``cline``.

* Calls: ``tool_use`` blocks (Roo's native tool calls, since November 2025:
  ``read_file``, ``apply_diff``, ``write_to_file``, ``execute_command``,
  ``update_todo_list``, ``new_task``, MCP tools as ``mcp--<server>--<tool>``…, each
  under the name the model was given). Before native calls Roo, like Cline, wrote
  its tools as XML in the assistant's text: not read (the replay says so). Roo's
  reasoning, thinking and thought-signature blocks are passed over.
* Session: the task id, the folder of ``api_conversation_history.json``.
* Results: ``tool_result`` blocks by ``tool_use_id`` (``is_error``, which Roo sets on a
  tool it refused or that failed, an error for ``[same_error]``);
  else the written ``[tool for 'x'] Result:`` text of the next user message.
* Usage: from ``ui_messages.json`` beside it, one record per request, matched to the
  assistant message that answered it by time (``ts``; Roo has no
  ``conversationHistoryIndex``); the model is the ``<model>`` Roo's environment
  details named for it. Roo's histories record no usage of their own: without the UI
  log, none.
* User turns (only when asked): as ``cline``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.records import Record
from ..readers.reader import Source
from . import FormatInfo
from ._cline_task import HISTORY, agent, read_history
from ._common import never_raises

INFO = FormatInfo(
    name="roo-code",
    description="Roo Code task histories (api_conversation_history.json)",
    line_based=False,
    patterns=(HISTORY,),
)


def sniff(head: bytes) -> bool:
    """A task history with a mark of Roo Code's (``_cline_task.agent``)."""
    return agent(head) == "roo-code"


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool_use of the task, in order, with results, usage and user turns."""
    yield from read_history(source)
