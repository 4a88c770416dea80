"""``loop-brake run -- AGENT ARGS...``: one headless agent run with the brake, for that run only.

The pieces, in the order a run uses them:

* ``launch``: which agent the command is (``claude``, ``codex``, ``gemini``,
  ``opencode``), the headless stream it must write, and how the hook reaches it
  without touching the user's settings (Claude Code ``--settings FILE``, Codex
  ``-c hooks...``, Gemini CLI a system settings file named by
  ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``; OpenCode has no command hook: braked from
  its stream alone);
* ``hook/check.py``: the injected command is run once with a canary call before
  the agent starts (a command that cannot run is exit 7, the agent not started);
* ``process``: the agent in its own process group; ending it is SIGTERM to the
  group, SIGKILL after a grace period, and no process of it is left behind;
* ``watch``: the agent's stdout read as it comes, passed through unchanged, its
  calls judged by the same rule as the hook (``readers/pipeline.judge``), and
  the decision to end the run (a policy stop, ``--stop-after`` denials the agent
  ignored, the first denial of an agent the hook cannot reach);
* ``hook_log``: what the injected hook itself decided and where it failed open;
* ``progress``: the events counted, one plain line each on stderr, or shown by the
  view the command passes in on a terminal (``render/run_view.py``: a live panel);
* ``outputs``: the summary (the replay's), ``--json``, ``--html``, the Markdown of
  ``$GITHUB_STEP_SUMMARY`` and ``--junit``.

No module here prints a tool's arguments: the agent's own stream is passed
through as the agent wrote it, and everything loop-brake writes names calls by
tool, ids and the 12-hex hash prefix only.
"""
