"""Cline task histories: a task's ``api_conversation_history.json``.

Cline keeps each task in a folder of its own,
``…/globalStorage/saoudrizwan.claude-dev/tasks/<task id>/``:
``api_conversation_history.json`` is the conversation as sent to the model, an array
of Anthropic messages, each assistant message with what Cline adds (``modelInfo``,
``metrics``); ``ui_messages.json`` beside it is what the panel showed, with each API
request's exact figures (read here for the usage; alone, it is the ``cline-ui``
format)::

    [{"role": "user", "content": [{"type": "text", "text": "<task>\\nFix the build\\n</task>"}]},
     {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01…",
       "name": "read_file", "input": {"path": "build.sh"}}],
      "modelInfo": {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic"},
      "metrics": {"tokens": {"prompt": 10, "completion": 595, "cached": 9573}}}, ...]

Roo Code's histories have the same shape and are read alike, as the ``roo-code``
format; which agent wrote a history is decided from its head
(``_cline_task.agent``: Cline's ``modelInfo``, or no Roo marker).

* Calls: ``tool_use`` blocks of assistant messages (as the ``anthropic`` format reads
  them: ``name``, ``input``, ``id``); every block the model sent is a call, also those
  Cline did not run (it runs one tool a message). A history written before Cline used
  native tool calls holds its tools as XML tags in the assistant's text: not read (no
  call; the replay says so, with the file's assistant messages).
* Session: the task id, the folder the file is in when it is named
  ``api_conversation_history.json`` (so a replay of ``tasks/`` is one session per
  task); the file otherwise.
* Results: ``tool_result`` blocks by ``tool_use_id``; Cline writes a result as text
  blocks of the next user message instead (``[read_file for 'x'] Result:``), which
  then answers the latest call (its content, never printed, only hashed). No result
  records a failure apart from its text: none is an error for ``[same_error]``.
* Usage, one record per API request, before the calls it produced: from the
  ``ui_messages.json`` beside the history when it records requests (``api_req_started``:
  reads and writes of the cache apart, the request matched to its answer by
  ``conversationHistoryIndex``; ``_cline_task`` says how); else each assistant
  message's ``metrics.tokens``: ``completion`` the output, ``cached`` the cache (Cline
  records reads and writes as one figure there, so cache writes count as reads),
  ``prompt`` the input, less ``cached`` when no smaller than it. The model is
  ``modelInfo.modelId``. A history without either records no usage.
* User turns (only when asked): a user message with text and no result, as in
  ``anthropic``; Cline's own result messages (text starting ``[<tool> …] Result:``)
  are not the user speaking.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.records import Record
from ..readers.reader import Source
from . import FormatInfo
from ._cline_task import HISTORY, agent, read_history
from ._common import never_raises

INFO = FormatInfo(
    name="cline",
    description="Cline task histories (api_conversation_history.json)",
    line_based=False,
    patterns=(HISTORY,),
)


def sniff(head: bytes) -> bool:
    """A message array opening with Cline's ``<task>`` message, or holding an assistant
    message with Cline's ``modelInfo``, and no mark of Roo Code's."""
    return agent(head) == "cline"


@never_raises
def parse(source: Source) -> Iterator[Record]:
    """Every tool_use of the task, in order, with results, usage and user turns."""
    yield from read_history(source)
