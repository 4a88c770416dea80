"""The brake inside Python agent frameworks: one module per framework.

Each module imports its framework only when it is imported itself, and each is
an optional extra (``pip install 'loop-brake-cli[langchain]'``); importing
``loop_brake_cli`` or this package imports no framework.

* ``loop_brake_cli.integrations.mcp``: every tool of an MCP Python SDK server
  (``MCPServer`` or the low-level ``Server``), as server middleware.
* ``loop_brake_cli.integrations.langchain``: LangChain v1 agent middleware
  (``create_agent(..., middleware=[...])``), around each tool call.
* ``loop_brake_cli.integrations.openai_agents``: the OpenAI Agents SDK's tool
  guardrails, on every function tool of a braked run.
* ``loop_brake_cli.integrations.pydantic_ai``: a pydantic-ai capability around
  every tool execution (and a wrapper toolset).
* ``loop_brake_cli.integrations.google_adk``: a Google ADK runner plugin.
* ``loop_brake_cli.integrations.langgraph``: a LangGraph ``ToolNode`` tool-call
  wrapper (hand-built graphs, ``create_react_agent``).
* ``loop_brake_cli.integrations.fastmcp``: FastMCP server middleware.
* ``loop_brake_cli.integrations.claude_agent_sdk``: Claude Agent SDK hook callbacks.
* ``loop_brake_cli.integrations.smolagents``: smolagents' ``ToolCallingAgent`` and
  ``CodeAgent``.
* ``loop_brake_cli.integrations.strands``: a Strands hook provider.
* ``loop_brake_cli.integrations.autogen``: an AutoGen AgentChat workbench.
* ``loop_brake_cli.integrations.llama_index``: a LlamaIndex workflow agent's tool calls.
* ``loop_brake_cli.integrations.crewai``: CrewAI's tool-call hooks (every agent).

Every one counts through ``LoopBrake`` (so ``streak.step``) and hands the model
the core's ``Verdict.message``: never the arguments. What they share (the brake,
session keys, the bounded table, results for the progress mode, the stop) is
``_session``, whose docstring is the contract for a new one. See
docs/integrations.md.
"""
