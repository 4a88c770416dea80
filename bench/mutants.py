"""Mutation run: does a one-line break of a rule make some test fail?

Each entry of ``MUTANTS`` is one deliberate break (a flipped comparison, an off-by-one,
a dropped condition, a changed message): the module, the original text (it must occur
exactly once in that file), its replacement, and the few test files that should kill
it. Each break is applied alone in a scratch copy of the tree (never in the checkout:
a crash cannot leave a break behind), those tests run with a timeout, and the break
is *killed* when they fail (or hang), *survives* when they pass. A break of the C
reader (``_event_scan.c``, ``_session_slots.h``, ``_policy_slots.h``) is rebuilt in the scratch copy
(``setup.py build_ext --inplace``) before its tests run.

Equivalent breaks (no input can tell them apart) are listed with the reason and not
counted. Not part of CI: it takes minutes. Usage:

    python bench/mutants.py -j 2            # all of them, two at a time
    python bench/mutants.py --only streak,policy/   # modules whose path holds either
    python bench/mutants.py --note progress_max,same_result  # breaks whose note holds either
    python bench/mutants.py --check         # every original still found, nothing run
    python bench/mutants.py -j 2 --save     # and keep the output in bench/results/

Each test selection first runs unbroken (it must pass: a failing one would "kill"
every break, so its breaks are listed as not run and the others go on); a break's run
may then take four times that (at least 60 s), longer is a hang: *hung* counts as
killed but is listed apart, since on a loaded machine it may only be slow (rerun it).

The score is printed per module, per area (``core/``, ``stores/``, the MCP front-ends)
and overall, then each survivor (with its note: the input that exposes it), each hung
break, and each break that could not be applied (the text moved: update the entry).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PKG = "loop_brake_cli/"
BUILT = PKG + "readers/"  # where setup.py build_ext puts the C reader
NODE_MODULES = "tests/js/everything/node_modules"  # the Node MCP server remote tests start


@dataclass(frozen=True)
class Mutant:
    module: str  # path under loop_brake_cli/
    original: str
    replacement: str
    tests: tuple[str, ...]  # test files (or node ids) under tests/
    note: str = ""  # what breaks, and the input that shows it
    equivalent: str = ""  # why no input can tell it apart (then it is not run)

    @property
    def label(self) -> str:
        """The module as the score groups it (``core/policy/``, ``readers/wire/`` ... as one)."""
        name = self.module.removesuffix(".py")
        for package in ("core/policy/", "readers/wire/", "stores/"):
            if name.startswith(package):
                return package
        return name

    @property
    def core(self) -> bool:
        return not (self.module.startswith("formats/") or self.module.startswith("analysis/"))

    @property
    def area(self) -> str:
        """The areas issue 42's targets name: ``core/``, ``stores/``, the MCP front-ends
        (with the MCP wire decoding they share), or "other"."""
        if self.module.startswith(("mcp_gateway/", "mcp_proxy/", "mcp_shared/")):
            return "MCP front-ends"
        if self.module == "readers/wire/mcp.py":
            return "MCP front-ends"
        for area in ("core/", "stores/"):
            if self.module.startswith(area):
                return area
        return "other"


# Test selections: the few files that cover each module.
CANON = ("test_canonical.py", "test_canonical_vectors.py", "test_canonical_reference.py")
STREAK = (
    "test_policy_reference.py",
    "test_brake.py",
    "test_policy.py",
    "test_progress_rule.py",
)
POLICY = ("test_policy_reference.py", "test_policy_defaults.py", "test_policy.py")
ARGS_IGNORE = ("test_args_ignore.py",)
RULES = ("test_rules_reference.py",)
SAME_RESULT = ("test_rules_same_result.py",)
USER_TURN = ("test_user_turn.py",)
WARN = ("test_warn_at.py",)
PROGRESS = ("test_progress_reference.py", "test_progress_rule.py")
FIELDS = ("test_canonical_reference.py", "test_formats_events.py")
MCP = ("test_wire_mcp.py", "test_formats_mcp.py", "test_mcp_results.py")
PROXY = ("test_mcp_proxy_bytes.py", "test_mcp_proxy_replay.py", "test_mcp_proxy_raw.py")
TRUST_STDIO = ("test_mcp_trust_boundary.py::test_through_the_stdio_proxy_at_most_two_of_six_run",)
GATEWAY = ("test_mcp_gateway_decide.py", "test_mcp_gateway_keys.py")
GATEWAY_HTTP = ("test_mcp_gateway_edges.py",)
STORE = ("test_hook_store_rules.py", "test_hook_store.py", "test_policy_engine.py")
FAST = ("test_fastpath_ids.py", "test_fastpath.py")
FAST_POLICY = ("test_fastpath_policy.py",)
FASTCANON = ("test_fastpath.py", "test_digest_json.py")
CREADER = ("test_event_scan.py",)
CLAUDE_SCAN = ("test_replay_claude_scan.py",)
BRAKE = ("test_brake_edges.py", "test_brake.py", "test_max_sessions.py")
SLOTS = ("test_compact_table.py",)
POLICY_SLOTS = ("test_policy_table.py",)
BRAKE_LRU = ("test_max_sessions.py",)
REDIS = ("test_stores.py",)  # each case on SQLite and on a real redis-server
REDIS_TTL = ("test_store_redis.py::test_idle_sessions_expire",)
REDIS_BREAKER = (
    "test_store_redis.py::test_the_circuit_breaker_stops_asking_a_dead_server",
    "test_store_redis.py::test_the_cool_down_doubles_up_to_its_cap",
)
REDIS_POLICY_TTL = ("test_store_redis.py::test_a_policy_session_expires_too",)
REDIS_END = (
    "test_stores.py",
    "test_store_redis.py::test_an_end_makes_a_decision_read_before_it_try_again",
)
SQLITE_THREADS = ("test_sqlite_store_threads.py",)
_TRANSACTION = (
    '")\n            try:\n                assert self._file is not None\n'
    "                claim(conn, self._file, _SCHEMA)\n                "
)
_IMMEDIATE = 'conn.execute("BEGIN IMMEDIATE' + _TRANSACTION  # one decision's transaction
_DEFERRED = 'conn.execute("BEGIN' + _TRANSACTION
ENDS = ("test_brake.py", "test_stores.py")
URLS = ("test_store_urls.py",)
FAST_OBSERVE = ("test_fast_observe.py", "test_fastpath_replay.py")
RESP = ("test_store_resp.py",)
RESP_SCRIPT = ("test_store_redis.py::test_script_flush_is_transparent",)
STORE_BATCH = ("test_store_batch.py",)  # batched = one at a time, every store and policy
STORE_BATCH_LIVE = (
    "test_store_batch.py::test_a_store_killed_while_a_batch_waits_fails_open_said_once",
)
GATEWAY_EDGES = ("test_mcp_gateway_edges.py",)
GATEWAY_KEYS = ("test_mcp_gateway_keys.py",)
GATEWAY_DECIDE = ("test_mcp_gateway_decide.py", "test_mcp_gateway_edges.py")
PROXY_BYTES = ("test_mcp_proxy_bytes.py",)
GATEWAY_STORE_WAIT = ("test_mcp_gateway_store_wait.py",)  # a redis-server frozen by SIGSTOP
REDIS_LOOP = ("test_store_redis_loop.py",)  # the gateway's round trips on its event loop
REDIS_LOOP_SUITE = (  # the shared suite and the fault tests, through the loop's path
    "test_stores.py::test_the_seed_rule_is_streak_step[redis-loop]",
    "test_stores.py::test_a_reused_id_counts_again_once_its_call_ended[redis-loop]",
    "test_stores.py::test_only_the_latest_call_ends[redis-loop]",
    "test_store_redis.py::test_a_frozen_server_times_out_and_the_call_still_gets_a_verdict[loop]",
    "test_store_redis.py::test_script_flush_is_transparent[loop]",
    "test_store_redis.py::test_the_circuit_breaker_stops_asking_a_dead_server[loop]",
    "test_store_redis.py::test_denials_resume_within_1_s_of_the_servers_return[loop]",
)
GATEWAY_LIMITS = ("test_mcp_gateway_limits.py",)
GATEWAY_UPSTREAM = ("test_mcp_gateway_upstream.py",)  # the client to the upstream, Corked
REDIS_HYGIENE = ("test_store_redis_hygiene.py",)  # keys that hold no streak; maxmemory-policy
RUN_VIEW = ("test_run_view.py",)
SQLITE_FILES = ("test_hook_store_files.py", "test_state_store_files.py")
LIMITS = ("test_brake.py", "test_config_rule.py")
EXIT = ("test_exit_table.py",)
TENANTS = ("test_mcp_gateway_tenants.py",)
SESSION_FROM = ("test_mcp_gateway_session_from.py",)  # real gateways: --session-from
PROXY_PROCESS = ("test_mcp_proxy_raw.py", "test_mcp_proxy_streams.py")
GATEWAY_SERVE = ("test_mcp_gateway.py",)
BRIDGE = ("test_mcp_bridge_transport.py", "test_mcp_bridge.py", "test_mcp_remote_node.py")
WRAPPERS = ("test_warn_at.py", "test_api.py", "test_attach.py")

HOOK_NOTICE = ("test_hook_notice.py",)
HOOK_ANSWERS = ("test_hook_answers.py", "test_agents_registry.py", "test_hook.py")
HOOK_CHECK = ("test_hook_check.py", "test_hook_install_check.py")
HOOK_INSTALL = (
    "test_hook_install_paths.py",
    "test_hook_install.py",
    "test_hook_install_update.py",
    "test_hook_install_check.py",
)
HOOK_RUNNER = ("test_hook.py", "test_hook_streams.py", "test_warn_at.py")
DOCTOR = ("test_doctor_entries.py", "test_doctor.py")
MCP_ANSWERS = ("test_mcp_answers.py", "test_mcp_proxy_raw.py", "test_mcp_gateway_decide.py")
MCP_SPANS = ("test_mcp_spans.py",)
DENIALS = ("test_mcp_denial_notes.py", "test_mcp_gateway_decide.py", "test_mcp_gateway_edges.py")
HEADERS = ("test_mcp_headers.py",)
VERDICT_LOG = (  # not the whole file: its brake-failure test fails on main today (reported)
    "test_mcp_proxy_log.py::test_the_log_is_created_private",
    "test_mcp_proxy_log.py::test_a_symlinked_log_is_refused_before_the_server_starts",
)
RUN = ("test_run_watch.py", "test_run_outputs.py", "test_run.py")
ROO = ("test_formats_roo_code.py", "test_sniff_decisions.py")

M = Mutant
METRICS = ("test_mcp_gateway_metrics.py",)  # /metrics without HTTP: every outcome and bound
OTEL = ("test_otel_metrics.py",)  # --otel and export_metrics with the real SDK
OTEL_LIBRARY = (
    "test_otel_metrics.py::test_the_library_exports_what_its_brake_decided_and_no_argument",
    "test_otel_metrics.py::test_a_tool_name_a_client_chose_is_shown_visible_as_on_metrics",
    "test_otel_metrics.py::test_the_library_names_sessions_only_when_asked_and_counts_evictions",
    "test_otel_metrics.py::test_a_store_that_fails_open_is_counted_and_fail_closed_is_a_denial",
)
MUTANTS: tuple[Mutant, ...] = (
    M(
        "core/streak.py",
        "if times >= window.max_repeats:",
        "if times > window.max_repeats:",
        RULES,
        "[window]: the max_repeats-th sighting is denied (A, B, A, C, A at 5/3)",
    ),
    M(
        "core/streak.py",
        "prev.seen[1 - window.calls :]",
        "prev.seen[-window.calls :]",
        RULES,
        "[window] holds calls digests, not one more (the brute-force reference)",
    ),
    M(
        "core/streak.py",
        "return error_digest, errors, open_ and errors >= after",
        "return error_digest, errors, open_ and errors > after",
        RULES,
        "[same_error]: the call after the after-th identical error is denied",
    ),
    M(
        "core/streak.py",
        "if prev is not None and not prev.awaiting and prev.slot.tool == tool:",
        "if prev is not None and prev.slot.tool == tool:",
        RULES,
        "[same_error]: a call whose result never came ends the run",
    ),
    M(
        "core/streak.py",
        "elif prev.errors and prev.error_digest == digest:",
        "elif prev.errors:",
        RULES,
        "[same_error]: a different error starts the run again at 1",
    ),
    M(
        "core/streak.py",
        "        awaiting = not denied\n",
        "        awaiting = True\n",
        RULES,
        "[same_error]: a denied call did not run, its result is no error",
    ),
    # -- issue 39: progress_max and [same_result]
    M(
        "core/streak.py",
        "        if identical >= ceiling:",
        "        if identical > ceiling:",
        SAME_RESULT,
        "progress_max: the call that makes the ceiling's identical calls is denied",
    ),
    M(
        "core/streak.py",
        "return (prev.identical or prev.slot.count) + 1",
        "return prev.slot.count + 1",
        SAME_RESULT,
        "progress_max: a changed result restarts the progress count, never the ceiling's",
    ),
    M(
        "core/policy/model.py",
        "return max(DEFAULT_PROGRESS_MAX, limit)",
        "return DEFAULT_PROGRESS_MAX",
        SAME_RESULT,
        "progress_max: a streak limit above the default raises the default ceiling",
    ),
    M(
        "core/streak.py",
        "return (prev.same_digest, prev.sames) if any_tool else (None, 0)",
        "return (None, 0)",
        SAME_RESULT,
        "[same_result] any_tool: an exempt tool's call neither extends nor ends the run",
    ),
    M(
        "core/streak.py",
        "if any_tool or prev.slot.tool == tool:",
        "if prev.slot.tool == tool:",
        SAME_RESULT,
        "[same_result] any_tool: the run goes on across tools",
    ),
    M(
        "core/streak.py",
        "same_awaiting = not denied and not same_exempt",
        "same_awaiting = not same_exempt",
        SAME_RESULT,
        "[same_result]: a denied call did not run, what came back is no result",
    ),
    M(
        "core/streak.py",
        "if state.sames and state.same_digest == digest:",
        "if state.sames:",
        SAME_RESULT,
        "[same_result]: a different result starts the run again at 1",
    ),
    M(
        "core/streak.py",
        "        if any_tool:\n            return None, 0, sames",
        "        if False:\n            return None, 0, sames",
        SAME_RESULT,
        "[same_result] any_tool: the denial ends the run",
    ),
    M(
        "stores/policy_rows.py",
        "    if state.identical:  # only after a progress restart: other rows are as before",
        "    if False:",
        SAME_RESULT,
        "progress_max in a store: the identical calls in a row are kept in the row",
    ),
    M(
        "core/progress.py",
        'return result.get("isError") is True or (len(result) == 1 and "error" in result)',
        'return result.get("isError") is True',
        RULES,
        "a JSON-RPC error answer is an error",
    ),
    M(
        "stores/policy_rows.py",
        'row["x"] = [state.errors, _hex(state.error_digest), state.awaiting]',
        'row["x"] = [state.errors, _hex(state.error_digest), False]',
        RULES,
        "a stored call waiting for its result keeps waiting (the row round-trips)",
    ),
    M(
        "core/streak.py",
        "(denied or exempt or count < warn_at)",
        "(denied or exempt or count <= warn_at)",
        WARN,
        "warn_at: the warn_at-th identical call is warned (the brute-force reference)",
    ),
    M(
        "core/streak.py",
        "policy.warn_at if rule.warn_at is None else rule.warn_at,",
        "policy.warn_at,",
        WARN,
        "warn_at: a rule's own warn_at overrides the global one",
    ),
    M(
        "core/streak.py",
        "(denied or exempt or count < warn_at)",
        "(denied or count < warn_at)",
        WARN,
        "warn_at: an exempt call is never warned",
    ),
    M(
        "stores/policy_rows.py",
        'row["a"] = d.warn_at',
        'row["b"] = d.warn_at',
        WARN,
        "warn_at: a stored warned decision round-trips (a duplicate is warned in the store)",
    ),
    M(
        "core/policy/load.py",
        "if rule.warn_at is not None and rule.warn_at >= rule.max_repeats:",
        "if rule.warn_at is not None and rule.warn_at > rule.max_repeats:",
        WARN,
        "warn_at: a rule's warn_at equal to its max_repeats is refused (located)",
    ),
    M(
        "core/policy/load.py",
        "if repeats > calls:",
        "if repeats > calls + 1:",
        RULES,
        "[window] max_repeats above calls is refused (located)",
    ),
    # -- canonical ---------------------------------------------------------------
    M(
        "core/canonical.py",
        "_SAFE_INT_DIGITS = 15",
        "_SAFE_INT_DIGITS = 17",
        CANON,
        "9007199254740993 must parse as the double 9007199254740992",
    ),
    M(
        "core/canonical.py",
        'if rest.strip(" \\t\\r\\n"):',
        "if rest.strip():",
        CANON,
        'a form feed or U+00A0 after the value is not JSON whitespace: "{}\\x0c" raises',
    ),
    M(
        "core/canonical.py",
        "if not value.strip():",
        "if not value:",
        CANON,
        'parse_arguments("   ") is ({}, False)',
    ),
    M("core/canonical.py", "if k <= n <= 21:", "if k <= n < 21:", CANON, "1e21 prints as 1e+21"),
    M("core/canonical.py", "elif -6 < n <= 0:", "elif -7 < n <= 0:", CANON, "1e-7 prints as 1e-7"),
    M(
        "core/canonical.py",
        'exponent = ("e+" if e >= 0 else "e-")',
        'exponent = ("e" if e >= 0 else "e-")',
        CANON,
        "1e21 prints as 1e+21",
    ),
    M("core/canonical.py", '"\\f": "\\\\f",', '"\\f": "\\\\u000c",', CANON, "form feed is \\f"),
    M(
        "core/canonical.py",
        "keys.sort(key=_utf16_key)",
        "keys.sort()",
        CANON,
        "keys sort by UTF-16 units: an astral key before U+FF01",
    ),
    M(
        "core/canonical.py",
        "return digest[: PREFIX_LENGTH // 2].hex()",
        "return digest[: PREFIX_LENGTH // 2 + 1].hex()",
        CANON,
        "the prefix is 12 hex characters",
    ),
    M(
        "core/canonical.py",
        'return re.sub(_SURROGATE, "\\ufffd", text)',
        'return re.sub(_SURROGATE, "?", text)',
        CANON,
        "a lone surrogate in a tool name hashes as U+FFFD",
    ),
    M(
        "core/canonical.py",
        'hashlib.sha256(utf8(tool_name + "\\n" + canonical_json(args)))',
        'hashlib.sha256(utf8(tool_name + "\\t" + canonical_json(args)))',
        CANON,
        "the hash input is tool + newline + canonical form",
    ),
    M(
        "core/canonical.py",
        'raise JSONInputError("not valid UTF-8", exc.start + 1)',
        'raise JSONInputError("not valid UTF-8", exc.start)',
        CANON,
        "the bad byte's column is 1-based",
    ),
    M(
        "core/canonical.py",
        "out.append(str(value) if -(2**53) <= value <= 2**53 else _big_int(value))",
        "out.append(str(value) if -(2**53) < value <= 2**53 else _big_int(value))",
        CANON,
        equivalent="-(2**53) is exact as a double: _big_int prints the same digits",
    ),
    # -- streak ------------------------------------------------------------------
    M(
        "core/streak.py",
        "if call_id is not None and call_id == prev_call_id:",
        "if call_id == prev_call_id:",
        STREAK,
        "two calls without an id are not duplicates",
    ),
    M(
        "core/streak.py",
        "return count >= max_repeats",
        "return count > max_repeats",
        STREAK,
        "the call that reaches the limit is denied",
    ),
    M(
        "core/streak.py",
        "base = base._replace(count=1)",
        "base = base._replace(count=0)",
        STREAK,
        "after a changed result the next identical call is 2",
    ),
    M(
        "core/streak.py",
        "denials = (prev.decision.denials if prev is not None else 0) + 1",
        "denials = (prev.decision.denials if prev is not None else 1) + 1",
        STREAK,
        "max_repeats = 1 and [stop] after_denials = 2: the first call is a denial, not a stop",
    ),
    M(
        "core/streak.py",
        "if count <= 1 or prev is None:",
        "if count <= 2 or prev is None:",
        STREAK,
        "the second call of a streak carries the first call's result",
    ),
    M(
        "core/streak.py",
        "return prev.latest_result, prev.earlier_results + 1",
        "return prev.latest_result, prev.earlier_results + 2",
        STREAK,
        "the progress message counts the identical results",
    ),
    M(
        "core/streak.py",
        "is_denied(count, limit), limit, limit",
        "is_denied(count, max_repeats), limit, limit",
        STREAK,
        "a tool rule's max_repeats is its limit",
    ),
    M(
        "core/streak.py",
        "prev, digest, tool, cycles, policy.is_exempt, not denied and not exempt",
        "prev, digest, tool, cycles, policy.is_exempt, not denied",
        STREAK,
        equivalent="find_cycle skips every cycle holding an exempt tool, and the call is in it",
    ),
    M(
        "core/streak.py",
        "if stop is not None and denials >= stop.after_denials:",
        "if stop is not None and denials > stop.after_denials:",
        STREAK,
        "the after_denials-th denial is the stop",
    ),
    M(
        "core/streak.py",
        "if prev is None or (call_id is not None and call_id != prev.slot.call_id):",
        "if prev is None or call_id != prev.slot.call_id:",
        STREAK,
        "a result without an id pairs with the latest call",
    ),
    M(
        "core/streak.py",
        "if not decision.progress or decision.denied or prev.latest_result == digest:",
        "if not decision.progress or prev.latest_result == digest:",
        STREAK,
        "a denied call's result is no progress",
    ),
    M(
        "core/streak.py",
        "and self.latest_result != self.earlier_result",
        "and self.latest_result == self.earlier_result",
        STREAK,
        "a changed result restarts the streak",
    ),
    M(
        "core/streak.py",
        "            denials,\n            progress,\n",
        "            1 if denied else 0,\n            progress,\n",
        STREAK,
        "denials count the consecutive denials",
    ),
    # -- verdicts ------------------------------------------------------------------
    M(
        "core/verdicts.py",
        "if identical >= 2:",
        "if identical >= 1:",
        STREAK,
        'A, A, result, A under progress: "and 1 result reported"',
    ),
    M(
        "core/verdicts.py",
        'prefixes=", ".join(f"{prefix}\\u2026" for _, prefix in cycle),',
        'prefixes=", ".join(f"{prefix}" for _, prefix in cycle),',
        STREAK,
        "a cycle message has an ellipsis after each hash prefix",
    ),
    M(
        "core/verdicts.py",
        '"Stop: report to the user what you were trying to do instead of retrying."',
        '"Change the arguments, call a different tool, or stop."',
        STREAK,
        "the stop message ends with its instruction to report to the user",
    ),
    M(
        "core/verdicts.py",
        "max_repeats=decision.max_repeats,",
        "max_repeats=decision.limit or decision.max_repeats,",
        STREAK,
        "maxRepeats of a cycle verdict is the streak limit",
    ),
    M(
        "readers/fast_observe.py",
        "count >= max_repeats,  # streak.is_denied",
        "count > max_repeats,  # streak.is_denied",
        FAST_OBSERVE,
        "the seed's verdict denies at the limit (replay's, as LoopBrake.observe's)",
    ),
    M(
        "readers/fast_observe.py",
        "digest[:_PREFIX_BYTES].hex(),",
        "digest[: _PREFIX_BYTES + 1].hex(),",
        FAST_OBSERVE,
        "the verdict's prefix is 12 hex characters (replay's, as LoopBrake.observe's)",
    ),
    # -- issue 41 goal 1: filter --policy on the fast path
    M(
        "readers/fastpath.py",
        "                hash_prefix = hexlify(digest[:6])",
        "                pass",
        FAST_POLICY,
        "a call counted on a policy hash (args_ignore) shows that hash's prefix",
    ),
    M(
        "readers/fastpath.py",
        "                warned += is_warned",
        "                warned += 0",
        FAST_POLICY,
        "the tally counts the warned calls a template writes (--summary)",
    ),
    M(
        "readers/fastpath.py",
        "            key = (state[1], state[0][1])  # (decision, count)",
        "            key = (state[1], 0)  # (decision, count)",
        FAST_POLICY,
        "a template is a decision's and a count's (the count is written in it)",
    ),
    M(
        "readers/fastpath.py",
        "return brake.store is None and not brake.progress and not brake.user_turns",
        "return brake.store is None and not brake.user_turns",
        FAST_POLICY,
        "a policy that reads results takes the exact path (the fast path reads only calls)",
    ),
    M(
        "readers/fastpath.py",
        "                policy_exactly(state, session, call_id, tool, number, True)",
        "                policy_exactly(state, session, call_id, tool, number, False)",
        FAST_POLICY,
        "a duplicate under a policy is written and tallied as one",
    ),
    M(
        "readers/policy_lines.py",
        "    if decision.period:  # a cycle: the line names the cycle's calls",
        "    if False:  # a cycle: the line names the cycle's calls",
        FAST_POLICY,
        "a cycle's denial names the cycle's calls: no template",
    ),
    M(
        "readers/fastpath.py",
        "if count >= max_repeats:",
        "if count > max_repeats:",
        FAST,
        "filter's fast path denies at the limit (streak.is_denied, restated inline)",
    ),
    M(
        "readers/fast_lines.py",
        """b',"hashPrefix":"%b"'""",
        """b',"hashprefix":"%b"'""",
        FAST,
        "the fast path's verdict line spells its keys as verdict_record does",
    ),
    M(
        "readers/fast_lines.py",
        """line += b',"message":"'""",
        """line += b',"message": "'""",
        FAST,
        "the fast path's deny line is the exact path's, byte for byte",
    ),
    M(
        "core/records.py",
        'out["maxRepeats"] = verdict.max_repeats\n    out["hashPrefix"] = verdict.hash_prefix',
        'out["hashPrefix"] = verdict.hash_prefix\n    out["maxRepeats"] = verdict.max_repeats',
        ("test_filter_cli.py::test_verdict_line_schema",),
        "the exact path's verdict line keeps its keys in the documented order",
    ),
    M(
        "agents/_common.py",
        '"permissionDecisionReason": message,',
        '"permissionDecisionReason": message.split("\\n")[0],',
        ("test_agents_registry.py::test_deny_output_matches_the_golden",),
        "Claude Code's and Codex's deny answer carries the whole deny text (the goldens)",
    ),
    M(
        "mcp_shared/answers.py",
        '"text", "text": message}], "isError": True}',
        '"text", "text": message}], "isError": False}',
        ("test_mcp_proxy_raw.py",),
        "a denial is answered as a tool error, isError true (the exact answer line)",
    ),
    M(
        "mcp_shared/verdict_log.py",
        "write_all(self._fd, json_line(record))",
        "write_all(self._fd, json_line(dict(sorted(record.items()))))",
        ("test_mcp_proxy_replay.py",),
        "the proxy's --log is replay --verdicts' lines, keys in the documented order",
    ),
    M(
        "core/streak.py",
        "            earlier_results if progress else 0,\n",
        "            0,\n",
        PROGRESS,
        "the rules' order: a progress denial says how many results were identical "
        "(progress_rule before the streak's decision)",
    ),
    M(
        "core/streak.py",
        "        if not denied and not exempt:\n            times = seen.count(digest)",
        "        if not exempt:\n            times = seen.count(digest)",
        RULES,
        "the rules' order: a call that both completes a cycle and fills the window is the "
        "cycle's denial",
    ),
    M(
        "core/verdicts.py",
        "tool=js_string(tool_name), count=count, prefix=prefix, limit=max_repeats",
        "tool=tool_name, count=count, prefix=prefix, limit=max_repeats",
        STREAK,
        "the denial quotes the tool name as JSON",
    ),
    M(
        "core/verdicts.py",
        "state.recent_tools[-period:],",
        "state.recent_tools[:period],",
        STREAK,
        "the cycle names its own calls, the latest period",
    ),
    # -- brake ---------------------------------------------------------------------
    M(
        "core/brake.py",
        "if max_sessions is not None and max_sessions < 1:",
        "if max_sessions is not None and max_sessions < 0:",
        BRAKE,
        "LoopBrake(max_sessions=0) raises",
        equivalent="since 3b30e0e the memory table checks it too (BoundedMemoryTable raises "
        "the same ValueError for 0), and with store= a max_sessions is refused anyway: "
        "0 still raises ValueError (with a store, the other of two messages)",
    ),
    M(
        "core/brake.py",
        "if source is not None and max_repeats is not None:",
        "if source is not None:",
        BRAKE,
        'LoopBrake(None, source="--config") keeps the resolved source',
    ),
    M(
        "core/table.py",
        "slots.popitem(last=False)",
        "slots.popitem(last=True)",
        BRAKE,
        "the least recently used session is evicted",
    ),
    M(
        "core/table.py",
        "if len(slots) > self.max_sessions:",
        "if len(slots) >= self.max_sessions:",
        BRAKE,
        "max_sessions sessions are kept",
    ),
    M(
        "core/table.py",
        "slot, duplicate = step(slots.get(session), tool, digest, call_id)",
        "slot, duplicate = step(slots.get(session), tool, digest, None)",
        BRAKE,
        "a repeated call id is a duplicate",
    ),
    M(
        "core/records.py",
        "if session_id is not None:\n        return session_id",
        "if session_id:\n        return session_id",
        BRAKE,
        'the empty session id is a session of its own ("" ?? agent)',
    ),
    M(
        "core/records.py",
        'f"{session_id}/{agent_id}"',
        'f"{session_id}:{agent_id}"',
        BRAKE,
        "a subagent's session is <session>/<agent>",
    ),
    M(
        "core/brake.py",
        "digest = self.digest(tool_name, {} if args is None else args)",
        "digest = self.digest(tool_name, args)",
        BRAKE,
        "no arguments hash as {}",
    ),
    M(
        "core/table.py",
        "return 0 if slots.pop(session, _ABSENT) is _ABSENT else 1",
        "return 0 if slots.get(session, _ABSENT) is _ABSENT else 1",
        USER_TURN,
        "a user turn ends the session's state (2 calls, a turn, 1 call: count 1)",
    ),
    M(
        "core/streak.py",
        "return policy is not None and policy.reset_on_user_turn",
        "return policy is not None",
        USER_TURN,
        "without reset_on_user_turn a user turn changes nothing",
    ),
    # -- policy/ -------------------------------------------------------------------
    M(
        "core/policy/model.py",
        "                for rule in self.tools\n",
        "                for rule in reversed(self.tools)\n",
        POLICY,
        "read_* (limit 2) then * (limit 5): read_file gets 2",
    ),
    M(
        "core/policy/model.py",
        "return found is not None and found[0].exempt",
        "return found is not None",
        POLICY,
        "a non-exempt rule for a plus [cycles] 2/2: a, b, a, b is a cycle denial",
    ),
    M(
        "core/policy/model.py",
        "return self.progress or any(rule.progress for rule in self.tools)",
        "return self.progress or any(rule.progress is not None for rule in self.tools)",
        POLICY,
        "a rule with progress = false leaves progress off",
    ),
    M(
        "core/policy/model.py",
        "return fnmatchcase(name, pattern)",
        'return __import__("fnmatch").fnmatch(name, pattern)',
        POLICY,
        equivalent="fnmatch normalises case with os.path.normcase: the identity on POSIX",
    ),
    M(
        "core/policy/cycles.py",
        "if size >= p and recent[size - p] == digest",
        "if size > p and recent[size - p] == digest",
        POLICY,
        "a, b, a, b ... with [cycles] max_period 2",
    ),
    M(
        "core/policy/cycles.py",
        "if len(set(recent[-period:])) < 2:",
        "if len(set(recent[-period:])) < 1:",
        POLICY,
        "a streak of identical calls is never a cycle",
    ),
    M(
        "core/policy/cycles.py",
        "repeats = (run + period) // period",
        "repeats = (run + period - 1) // period",
        POLICY,
        "the third repetition is denied at max_repeats 3",
    ),
    M(
        "core/policy/cycles.py",
        "        if run < period:  # the common case first: no repetition yet\n"
        "            continue\n",
        "",
        POLICY,
        equivalent="repeats >= max_repeats >= 2 already means run + period >= 2 period",
    ),
    M(
        "core/policy/cycles.py",
        "return recent[1:] + (digest,), recent_tools[1:] + (tool,), new_runs",
        "return recent + (digest,), recent_tools + (tool,), new_runs",
        POLICY + ("test_hook_store_rules.py",),
        "the window is max_period calls long however long the session (the stored state)",
    ),
    M(
        "core/policy/load.py",
        '"cycles", 0, table, "max_period", 2, MAX_PERIOD',
        '"cycles", 0, table, "max_period", 1, MAX_PERIOD',
        POLICY,
        "max_period = 1 is refused",
    ),
    M(
        "core/policy/load.py",
        "MAX_PERIOD = 16",
        "MAX_PERIOD = 17",
        POLICY,
        "max_period = 17 refused",
    ),
    M(
        "core/policy/load.py",
        'limit = checker.integer("tools", index, entry, "max_repeats", 1)',
        'limit = checker.integer("tools", index, entry, "max_repeats", 0)',
        POLICY,
        "max_repeats = 0 is refused",
    ),
    M(
        "core/policy/load.py",
        'if "?" in earlier or "[" in earlier or "[" in later:',
        'if "[" in earlier or "[" in later:',
        POLICY,
        'a?c then abc: "?" is not a shadowing glob the check can prove',
    ),
    M(
        "core/policy/load.py",
        'after = checker.integer("stop", 0, table, "after_denials", 1)',
        'after = checker.integer("stop", 0, table, "after_denials", 2)',
        POLICY,
        "after_denials = 1 is allowed",
    ),
    M(
        "core/policy/load.py",
        'repeats = checker.integer("cycles", 0, table, "max_repeats", 2)',
        'repeats = checker.integer("cycles", 0, table, "max_repeats", 1)',
        POLICY,
        "[cycles] max_repeats = 1 is refused",
    ),
    # -- args_ignore (issue 29, item 5) ---------------------------------------------
    M(
        "core/policy/args_paths.py",
        "keys: Any = value",
        "keys: Any = ()",
        ARGS_IGNORE,
        "$.a.* removes every member of an object (the brute-force reference)",
    ),
    M(
        "core/policy/args_paths.py",
        "elif step.__class__ is int and step < size:",
        "elif step.__class__ is int and step < size - 1:",
        ARGS_IGNORE,
        "$[3] removes the last of four elements",
    ),
    M(
        "core/policy/args_paths.py",
        "return value  # nothing reached: the same object, hashed as before",
        "return dict(value)",
        ARGS_IGNORE,
        "a path that reaches nothing gives the arguments themselves back",
    ),
    M(
        "core/policy/args_paths.py",
        'if len(digits) > 1 and digits[0] == "0":',
        'if len(digits) > 2 and digits[0] == "0":',
        ARGS_IGNORE,
        "$.a[01] is refused",
    ),
    M(
        "core/policy/args_paths.py",
        "MAX_ARGS_IGNORE = 32",
        "MAX_ARGS_IGNORE = 33",
        ARGS_IGNORE,
        "33 paths refused",
    ),
    M(
        "core/streak.py",
        "                bool(rule.ignore_paths),\n",
        "                False,\n",
        ARGS_IGNORE,
        "a call counted on a policy hash is marked (policyHash, the denial text)",
    ),
    # -- progress ------------------------------------------------------------------
    M(
        "core/progress.py",
        'r"(?i)\\bpid\\b[\\s:=#]*\\d+",',
        'r"(?i)\\bpid\\b[\\s=#]*\\d+",',
        PROGRESS,
        "PID: 4242 normalises like pid 4242",
    ),
    M(
        "core/progress.py",
        '"isError": result.get("isError") is True}',
        '"isError": result.get("isError")}',
        PROGRESS,
        '{"content": c} and {"content": c, "isError": false} digest alike',
    ),
    M(
        "core/progress.py",
        'if "\\n" in text:  # line by line',
        'if "\\r" in text:  # line by line',
        PROGRESS,
        'a pattern never joins lines: "pid\\n4242" stays',
    ),
    M(
        "core/progress.py",
        "DIGEST_HEX.fullmatch(text)",
        "DIGEST_HEX.match(text)",
        PROGRESS,
        "a 65-hex digest is refused",
    ),
    M(
        "core/progress.py",
        "if cls is list or cls is tuple:",
        "if cls is list:",
        PROGRESS,
        "a tuple result is cleaned like a list",
    ),
    M(
        "core/progress.py",
        'not set(result) - {"content", "isError", "structuredContent", "_meta"}',
        'not set(result) - {"content", "isError", "structuredContent"}',
        PROGRESS,
        "_meta (timings) is dropped from an MCP result",
    ),
    M(
        "core/progress.py",
        'r"\\b\\d{1,2}:\\d{2}:\\d{2}(?:[.,]\\d+)?\\b",',
        'r"\\b\\d{2}:\\d{2}:\\d{2}(?:[.,]\\d+)?\\b",',
        PROGRESS,
        "9:05:01 is a time of day",
    ),
    M(
        "core/progress.py",
        "re.compile(pattern, re.MULTILINE)",
        "re.compile(pattern)",
        PROGRESS,
        "^Chunk ID on the second line of a result is removed",
    ),
    M(
        "core/progress.py",
        'r"^Wall time: [0-9.]+ seconds$",',
        'r"^Wall time: [0-9]+ seconds$",',
        PROGRESS,
        "Wall time: 1.5 seconds is removed",
    ),
    # -- wire/ ---------------------------------------------------------------------
    M(
        "readers/wire/fields.py",
        "if isinstance(value, int) and -_MAX_SAFE <= value <= _MAX_SAFE:",
        "if isinstance(value, int) and -_MAX_SAFE <= value < _MAX_SAFE:",
        FIELDS,
        "2**53 is a valid call id",
    ),
    M(
        "readers/wire/fields.py",
        "isinstance(value, float) and value.is_integer() and -_MAX_SAFE",
        "isinstance(value, float) and -_MAX_SAFE",
        FIELDS,
        "7.5 is not a call id",
    ),
    M(
        "readers/wire/fields.py",
        "if isinstance(value, bool):",
        "if isinstance(value, type(None)):",
        FIELDS,
        "true is not a call id",
    ),
    M(
        "readers/wire/fields.py",
        "return subagent_session_key(session_key(session), agent)",
        "return session_key(session, agent)",
        FIELDS,
        "a hook's agent id names a subagent: <session>/<agent>",
    ),
    M(
        "readers/wire/fields.py",
        "if value is None or isinstance(value, str):\n        return value",
        "if value is None or isinstance(value, (str, int)):\n        return value",
        FIELDS,
        "a numeric session id is an error",
    ),
    M(
        "readers/wire/event_line.py",
        'TOOL_KEYS = ("tool", "toolName", "name")',
        'TOOL_KEYS = ("tool", "name", "toolName")',
        FIELDS,
        "toolName wins over name",
    ),
    M(
        "readers/wire/event_line.py",
        "        if value is not None:\n            return value\n    return None",
        "        if value:\n            return value\n    return None",
        FIELDS,
        'the empty string is a tool name and a session ("" is not null)',
    ),
    M(
        "readers/wire/event_line.py",
        "return ToolCall(tool, {} if args is None else args, session, call_id, line)",
        "return ToolCall(tool, args, session, call_id, line)",
        FIELDS,
        "a missing args is {}",
    ),
    M(
        "readers/wire/event_line.py",
        'if results and obj.get("type") == RESULT_TYPE:',
        'if obj.get("type") == RESULT_TYPE:',
        FIELDS,
        "without the progress mode a result line is an error, as before",
    ),
    M(
        "readers/wire/mcp.py",
        'if method == "initialize" and "id" in message:',
        'if method == "initialize":',
        MCP,
        "an initialize without an id does not start a new connection",
    ),
    M(
        "readers/wire/mcp.py",
        "if len(table) > MAX_PENDING:",
        "if len(table) >= MAX_PENDING:",
        MCP,
        "with exactly 4,096 pending calls the response to id 0 still pairs",
    ),
    M(
        "readers/wire/mcp.py",
        'if method != "tools/call" or "id" not in message:',
        'if method != "tools/call":',
        MCP,
        "a tools/call without an id is a notification, not a call",
    ),
    M(
        "readers/wire/mcp.py",
        "return None if call_id is None else (call_id.__class__, call_id)",
        "return None if call_id is None else (str, str(call_id))",
        MCP,
        'the response to id "1" is not the result of id 1',
    ),
    M(
        "readers/wire/mcp.py",
        'result = {"error": message["error"]}',
        'result = message["error"]',
        MCP,
        "an error response is the result {error: ...}",
    ),
    M(
        "readers/wire/mcp.py",
        "call = state.open.pop(key, None) if key is not None else None",
        "call = state.open.get(key) if key is not None else None",
        MCP,
        "a second response to one id is traffic",
    ),
    M(
        "readers/wire/mcp.py",
        "        if state.seen:\n            state.number += 1",
        "        if state.number:\n            state.number += 1",
        MCP,
        "a log that opens with initialize stays on connection 1",
    ),
    # issue 36.1: a retry continues a call only when the server asked for input
    M(
        "readers/wire/mcp.py",
        "if retry is not None and retry in state.awaiting:",
        "if retry is not None:",
        MCP,
        "inputResponses {} on a call never asked for input is a call, counted",
    ),
    M(
        "readers/wire/mcp.py",
        "original = state.awaiting.pop(retry)",
        "original = state.awaiting.get(retry)",
        MCP,
        "one input_required answer lets one retry through, not two",
    ),
    M(
        "readers/wire/mcp.py",
        "return tool, call_digest(tool, args), state",
        "return tool, call_digest(tool, args), None",
        MCP,
        "a retry with a forged requestState is a call, counted",
    ),
    M(
        "readers/wire/mcp.py",
        'if isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED:',
        "if isinstance(result, dict):",
        MCP,
        "a complete answer lets no retry through",
    ),
    # -- the MCP front-ends (issues 36 and 42) --------------------------------------------
    M(
        "mcp_proxy/routing.py",
        'return Routed(None, parse_error(PROG, str(exc)) + b"\\n")',
        "return Routed(line)",
        PROXY,
        "issue 36.2: a line that is not strict JSON (NaN, a BOM) is answered, not forwarded",
    ),
    M(
        "mcp_proxy/routing.py",
        "            return False, self._refuse(message, record, raw)",
        "            return True, None",
        PROXY,
        "a tools/call the decoder cannot read is answered -32600, not forwarded",
    ),
    M(
        "mcp_proxy/routing.py",
        "if verdict.duplicate and not self.shadow:",
        "if False:",
        PROXY,
        "issue 36.3: a request sent again while open is not forwarded (the server runs it twice)",
    ),
    M(
        "mcp_proxy/routing.py",
        "        if record.call_id is not None:  # answered here: its id may name a new call\n"
        "            self.brake.end_call(session, record.call_id)",
        "        pass",
        PROXY,
        "issue 36.3: after the proxy's denial the same id is a new call (count 3, not a duplicate)",
    ),
    M(
        "mcp_proxy/routing.py",
        "                    self.brake.end_call(answer.session, answer.call_id)",
        "                    pass",
        TRUST_STDIO,
        "issue 36.3: a client reusing id 1 after each answer ran 6 of 6",
    ),
    M(
        "mcp_proxy/routing.py",
        "if verdict.warn_at is not None and not self.shadow:",
        "if verdict.warn_at is not None:",
        PROXY,
        "issue 42: under --shadow no warning is added",
    ),
    M(
        "mcp_proxy/routing.py",
        'if not isinstance(message, dict) or "id" not in message or "method" in message:',
        'if not isinstance(message, dict) or "id" not in message:',
        PROXY,
        "issue 42: a server request reusing a warned call's id leaves the warning for the answer",
    ),
    M(
        "mcp_proxy/routing.py",
        "        return canonical_json(request_id)",
        "        return str(request_id)",
        PROXY,
        'issue 42: ids 1 and "1" merged: the cancellation of "1" dropped',
    ),
    M(
        "mcp_shared/denials.py",
        "        if run is not None and run.key == key:",
        "        if False:",
        GATEWAY,
        "issue 36.7: a run of identical denials is summed up, not one line each",
    ),
    M(
        "mcp_shared/denials.py",
        '    shown = visible(id_bytes.decode("utf-8", "replace"))',
        '    shown = id_bytes.decode("utf-8", "replace")',
        GATEWAY,
        "issue 36.7: an id's bytes (a bidi control, a line break in an object id) are escaped",
    ),
    M(
        "mcp_gateway/keys.py",
        'return SessionKey(f"{scope}name:{name}", "meta")',
        'return SessionKey(f"{scope}{name}", "meta")',
        GATEWAY,
        "issue 36.4: a name in _meta never equals a derived key (conn:..., auth:...)",
    ),
    M(
        "mcp_gateway/keys.py",
        'scope = f"auth:{digest(auth)}/" if auth else ""',
        'scope = ""',
        GATEWAY,
        "issue 36.4: two credentials naming one session keep two streaks",
    ),
    M(
        "mcp_gateway/keys.py",
        'return SessionKey(f"{scope}mcp-session:{digest(mcp_session)}", "mcp-session-id")',
        'return SessionKey(f"mcp-session:{digest(mcp_session)}", "mcp-session-id")',
        GATEWAY,
        "issue 36.4: an Mcp-Session-Id under a credential is that credential's",
    ),
    M(
        "mcp_gateway/keys.py",
        "    if len(value) > MAX_NAME:",
        "    if len(value) >= MAX_NAME:",
        GATEWAY,
        "issue 42: a session name of exactly 256 characters is taken",
    ),
    M(
        "mcp_gateway/keys.py",
        '    return f"{scope}/{canonical_json(call_id)}"',
        '    return f"{scope}/{call_id}"',
        GATEWAY,
        'issue 36.3: the scoped ids of 1 and "1" differ',
    ),
    M(
        "mcp_gateway/keys.py",
        '    if mcp_session:\n        return f"mcp-session:{digest(mcp_session)[:8]}"',
        '    if False:\n        return f"mcp-session:{digest(mcp_session)[:8]}"',
        GATEWAY_HTTP,
        "issue 42: a retry in one MCP session over a new TCP connection is the same request",
    ),
    M(
        "mcp_gateway/decide.py",
        "        if key is not None and key in self.awaiting:",
        "        if key is not None:",
        GATEWAY,
        "issue 36.1: requestState on a call the upstream never asked for input is counted",
    ),
    M(
        "mcp_gateway/decide.py",
        "            del self.awaiting[key]\n",
        "            pass\n",
        GATEWAY,
        "issue 36.1: one input_required answer lets one retry through",
    ),
    M(
        "mcp_gateway/decide.py",
        "            return 400, parse_error(PROG, str(exc))",
        "            return PLAIN",
        GATEWAY,
        "issue 36.2: a body with NaN, a BOM or in UTF-16 is refused, never forwarded",
    ),
    M(
        "mcp_gateway/decide.py",
        "            if verdict.duplicate and not self.shadow:",
        "            if False:",
        GATEWAY,
        "issue 36.3: a request sent again while open is 409, not forwarded",
    ),
    M(
        "mcp_gateway/decide.py",
        "        self._end_call(forward.session, forward.call_id, lambda: self._ended(forward))",
        "        self._ended(forward)",
        GATEWAY,
        "issue 36.3: after its answer the same id is a new call",
    ),
    M(
        "mcp_gateway/decide.py",
        "warning = verdict.warning if verdict.warn_at is not None and not self.shadow else None",
        "warning = verdict.warning if verdict.warn_at is not None else None",
        GATEWAY,
        "issue 42: warnings are not spliced in shadow mode",
    ),
    M(
        "mcp_gateway/decide.py",
        'in session {visible(session)} ({key.source})"',
        'in session {session} ({key.source})"',
        GATEWAY,
        "issue 36.7: a client-chosen session name with a line break cannot forge a stderr line",
    ),
    M(
        "mcp_gateway/decide.py",
        "        if self.calls is None:\n            verdict = brake.observe(",
        "        if True:\n            verdict = brake.observe(",
        GATEWAY_STORE_WAIT,
        "issue 37.1: a store's round trip is made off the event loop (tools/list is answered "
        "while a call waits on a frozen store)",
    ),
    M(
        "mcp_gateway/store_calls.py",
        "return await asyncio.wait_for(future, self.deadline)",
        "return await future",
        GATEWAY_STORE_WAIT + METRICS,
        "issue 37.1: a decision waits at most --store-deadline, then is allowed uncounted "
        "(in the worker pool: a SQLite store frozen past a 0.01 s deadline; a redis:// "
        "store's count is made on the event loop)",
    ),
    M(
        "core/table.py",
        "cutoff = self._clock() - self.idle",
        "cutoff = self._clock() - 2 * self.idle",
        GATEWAY_LIMITS,
        "issue 37.2: a session unused for --session-idle seconds is forgotten",
    ),
    M(
        "mcp_gateway/limits.py",
        "            self.transport.abort()  # no reply",
        "            pass  # no reply",
        GATEWAY_LIMITS,
        "issue 37.2: a connection whose request has not arrived within --request-timeout is cut",
    ),
    M(
        "mcp_gateway/limits.py",
        "if len(self.connections) > limits.max_connections:",
        "if len(self.connections) > limits.max_connections + 1:",
        GATEWAY_LIMITS,
        "issue 37.2: the connection beyond --max-connections is answered 503",
    ),
    M(
        "mcp_gateway/app.py",
        "            if size > limit:",
        "            if declared is not None and size > limit:",
        GATEWAY_HTTP,
        "issue 42: a chunked body without Content-Length is held to --max-body",
    ),
    M(
        "mcp_gateway/app.py",
        "            if size > limit:",
        "            if size >= limit:",
        GATEWAY_HTTP,
        "issue 42: a body of exactly --max-body bytes is taken",
    ),
    M(
        "mcp_gateway/app.py",
        "return origin is None or bool(_LOOPBACK_ORIGIN.fullmatch(origin))",
        "return origin is None or bool(_LOOPBACK_ORIGIN.match(origin))",
        GATEWAY_HTTP,
        "issue 42: Origin http://localhost.evil.example is not a loopback origin",
    ),
    M(
        "mcp_gateway/app.py",
        "        if not _LOOPBACK_HOST.fullmatch(host):",
        "        if not _LOOPBACK_HOST.match(host):",
        GATEWAY_HTTP,
        "issue 42: Host localhost.evil.example is not a loopback name",
    ),
    M(
        "mcp_gateway/app.py",
        '    if encoding not in ("", "identity"):',
        "    if False:",
        GATEWAY_HTTP,
        "issue 36.2: a gzip body (which the upstream could inflate) is refused, 415",
    ),
    M(
        "mcp_gateway/app.py",
        '        if isinstance(result, dict) and result.get("resultType") == INPUT_REQUIRED:',
        "        if False:",
        GATEWAY,
        "issue 36.1: the gateway sees the upstream's answer ask for input, cut anywhere",
    ),
    M(
        "mcp_gateway/stdio_upstream.py",
        "            if not hmac.compare_digest(given, expected):",
        "            if False:",
        GATEWAY_HTTP,
        "issue 36.12: the private port of a stdio upstream answers no one but the gateway",
    ),
    M(
        "mcp_gateway/serve.py",
        "        store.connect()\n",
        "        pass\n",
        ("test_store_redis_hygiene.py::test_the_gateway_says_it_at_start_once",),
        "issue 37.4: under volatile-lru the gateway says the policy at start, before listening",
    ),
    M(
        "mcp_gateway/serve.py",
        "            proxy_headers=False,",
        "            proxy_headers=True,",
        GATEWAY_UPSTREAM,
        "--anonymous connection: a client's X-Forwarded-For does not choose its streak",
    ),
    M(
        "mcp_gateway/limits.py",
        "        self.flush()\n        self._transport.close()",
        "        self._transport.close()",
        GATEWAY_UPSTREAM,
        "issue 41.2: an answer written just before its connection closes still reaches the client",
    ),
    M(
        "mcp_gateway/upstream.py",
        'size_text = line.split(b";", 1)[0].strip()',
        "size_text = line.strip()",
        GATEWAY_UPSTREAM,
        "issue 41.2: a chunk size with an extension (1a;name=value) is read as its size",
    ),
    M(
        "mcp_gateway/upstream.py",
        "            if self.status_code >= 200 or self.status_code == 101:",
        "            if True:",
        GATEWAY_UPSTREAM,
        "issue 41.2: a 100 Continue before the answer is skipped, not taken as the answer",
    ),
    M(
        "mcp_gateway/upstream.py",
        "        if self._done and self._reusable:",
        "        if self._reusable:",
        GATEWAY_UPSTREAM,
        "issue 41.2: a connection whose answer was not read whole is never reused",
    ),
    M(
        "mcp_gateway/upstream.py",
        "            if not reader.at_eof() and not writer.is_closing():",
        "            if not writer.is_closing():",
        GATEWAY_UPSTREAM,
        "issue 41.2: a connection the server closed while idle is not used for the next request",
    ),
    M(
        "mcp_gateway/upstream.py",
        '            if self.auth is not None and name.lower() == "authorization":',
        "            if False:",
        GATEWAY_UPSTREAM,
        "issue 41.2: with user info in --upstream, the client's Authorization is not sent too",
    ),
    M(
        "mcp_gateway/upstream.py",
        '            if "\\r" in value or "\\n" in value or "\\r" in name or "\\n" in name:',
        "            if False:",
        GATEWAY_UPSTREAM,
        "issue 41.2: a header value with a line break is refused, never a header injected",
    ),
    M(
        "mcp_gateway/upstream.py",
        '    raise httpx2.RemoteProtocolError("the server closed the connection early")\n'
        "                left -= len(data)",
        "    return\n                left -= len(data)",
        GATEWAY_UPSTREAM,
        "issue 41.2: a body cut short of its Content-Length is a broken connection, said",
    ),
    # -- hook store (SQLite) -----------------------------------------------------------
    M(
        "stores/sqlite_store.py",
        "row[4] >= at - self.ttl",
        "row[4] > at - self.ttl",
        STORE,
        "a row exactly ttl seconds old is live",
    ),
    M(
        "stores/sqlite_store.py",
        '"DELETE FROM streaks WHERE updated < ?"',
        '"DELETE FROM streaks WHERE updated <= ?"',
        STORE,
        "a prune at the ttl instant keeps the row",
    ),
    M(
        "stores/sqlite_store.py",
        "conn.execute(policy_rows.POLICY_PRUNE)",
        "pass",
        STORE,
        "max_sessions = 1: the policy table holds one row after a second session",
    ),
    M(
        "stores/base.py",
        "DEFAULT_IDLE_TTL = 24 * 3600.0",
        "DEFAULT_IDLE_TTL = 12 * 3600.0",
        STORE,
        "with the default TTL a call 13 hours later continues the streak",
    ),
    M(
        "stores/sqlite_store.py",
        "excess = total - self.max_sessions",
        "excess = total - self.max_sessions - 1",
        STORE,
        "max_sessions rows are kept, not one more",
    ),
    M(
        "stores/sqlite_store.py",
        "ORDER BY updated ASC, session ASC LIMIT ?",
        "ORDER BY updated DESC, session ASC LIMIT ?",
        STORE,
        "the oldest session is dropped",
    ),
    M(
        "stores/policy_rows.py",
        'if data["u"] != updated:',
        'if data["u"] == updated:',
        STORE,
        "the stored policy part of a live streak is read back",
    ),
    M(
        "stores/policy_rows.py",
        "len(runs) != cycles.max_period - 1",
        "len(runs) != cycles.max_period",
        STORE,
        "a cycle window of the policy's size is kept between hook calls",
    ),
    # -- fastpath, fast_canonical ------------------------------------------------------
    M(
        "readers/prove.py",
        'and "agentId" not in obj',
        'and "agentId" != obj',
        FAST,
        'a numeric agentId beside a sessionId is an error on both paths ({..."agentId":5})',
    ),
    M(
        "readers/prove.py",
        "and args is not None\n",
        'and "args" in obj\n',
        FAST,
        '"args": null hashes as {}',
    ),
    M(
        "readers/prove.py",
        "and call_id.__class__ is str\n",
        "and call_id is not None\n",
        FAST,
        "a numeric callId 7.0 is 7 (the exact path's rule)",
    ),
    M(
        "readers/fast_canonical.py",
        'if b".0" in out:',
        'if b".00" in out:',
        FASTCANON,
        "orjson writes 1.0 where JavaScript writes 1",
    ),
    M(
        "readers/fast_canonical.py",
        '_EXPONENT = re.compile(rb"[0-9]e[-+]")',
        '_EXPONENT = re.compile(rb"[0-9]e[+]")',
        FASTCANON,
        "orjson writes 1e-6 where JavaScript writes 0.000001",
    ),
    M(
        "readers/fast_canonical.py",
        'return not (astral and (b"\\xee" in out or b"\\xef" in out))',
        "return True",
        FASTCANON,
        "keys holding an astral character and U+FF01 sort differently",
    ),
    M(
        "readers/fast_canonical.py",
        "if len(_HEADS) >= 1024:",
        "if len(_HEADS) >= 1024 * 1024:",
        FASTCANON,
        equivalent="the head cache's bound: memory only, every entry is exact",
    ),
    # -- the C reader ------------------------------------------------------------------
    M(
        "readers/_event_scan.c",
        "#define MAX_DIGITS 15",
        "#define MAX_DIGITS 17",
        CREADER,
        "a 16-digit integer is not printed as written",
    ),
    M(
        "readers/_event_scan.c",
        "if (leading > 5)",
        "if (leading > 6)",
        CREADER,
        "0.0000001 prints as 1e-7",
    ),
    M(
        "readers/_event_scan.c",
        "        if (low < 0xDC00 || low > 0xDFFF)",
        "        if (low < 0xDC00 || low > 0xDFFE)",
        CREADER,
        "an escaped surrogate pair ending in \\udfff is one astral character",
    ),
    M(
        "readers/_event_scan.c",
        "0, 0, 0, 0, 0, 0, 0, 0, 'b', 't', 'n', 0, 'f', 'r', 0, 0,",
        "0, 0, 0, 0, 0, 0, 0, 0, 'b', 't', 'n', 'v', 'f', 'r', 0, 0,",
        CREADER,
        "\\u000b is written \\u000b by JSON.stringify, not \\v",
    ),
    M(
        "readers/_event_scan.c",
        "if (c < 0x20)\n            return NO; /* a raw control character: not JSON */",
        "if (c < 0x1f)\n            return NO; /* a raw control character: not JSON */",
        CREADER,
        "a raw control character is not JSON",
    ),
    M(
        "readers/_event_scan.c",
        "        if (c < 0x20)\n            return NO;\n        if (c < 0x80)",
        "        if (c < 0x1f)\n            return NO;\n        if (c < 0x80)",
        CREADER,
        "a member the event line drops holding a raw control character is not JSON",
    ),
    M(
        "readers/_event_scan.c",
        "high = 0x9F; /* no surrogate */",
        "high = 0xBF; /* no surrogate */",
        CREADER,
        "an encoded surrogate is not UTF-8",
    ),
    M(
        "readers/_event_scan.c",
        "else if (zero && *start == '-')",
        "else if (zero && *start == '+')",
        CREADER,
        "-0 prints as 0",
    ),
    M(
        "readers/_event_scan.c",
        "if (p[-1] == '0')",
        "if (p[-1] == '9')",
        CREADER,
        "1.50 prints as 1.5",
    ),
    # -- replay's C reader of Claude Code lines (_claude_scan.h, analysis/replay_claude.py) --
    M(
        "readers/_claude_scan.h",
        'if (r->end - r->p >= 4 && memcmp(r->p, "true", 4) == 0)',
        'if (r->end - r->p >= 4 && memcmp(r->p, "fals", 4) == 0)',
        CLAUDE_SCAN,
        "a sidechain line (isSidechain true) counts in its subagent's session, not the parent's",
    ),
    M(
        "readers/_claude_scan.h",
        "#define CLAUDE_FIGURE_DIGITS 15",
        "#define CLAUDE_FIGURE_DIGITS 17",
        CLAUDE_SCAN,
        "a 16-digit token count is a double where the exact parser reads the line",
    ),
    M(
        "readers/_claude_scan.h",
        "if (digits == 0 || (digits > 1 && *r->p == '0') ||",
        "if (digits == 0 ||",
        CLAUDE_SCAN,
        "a token count written 05 is not JSON",
    ),
    M(
        "readers/_claude_scan.h",
        """(left >= 6 && memcmp(quote + 1, "usage\\"", 6) == 0)""",
        """(left >= 5 && memcmp(quote + 1, "usage", 5) == 0)""",
        CLAUDE_SCAN,
        'a garbled line naming "usages" but neither needle is skipped, as the adapter skips it',
    ),
    M(
        "readers/_claude_scan.h",
        "return end - p >= 1 && *p == '{' && end[-1] == '}';",
        "return end - p >= 1 && *p == '{';",
        CLAUDE_SCAN,
        "a truncated line without a needle is reported, not skipped",
    ),
    M(
        "readers/_claude_scan.h",
        "if (*p != ' ' && *p != '\\t' && *p != '\\r' && *p != '\\n')",
        "if (*p != ' ' && *p != '\\t' && *p != '\\r' && *p != '\\n' && *p != '\\x0b')",
        CLAUDE_SCAN,
        "a line holding a vertical tab is content (not JSON), not a blank line",
    ),
    M(
        "readers/_claude_scan.h",
        "PyObject *pair[2] = {found, PyLong_FromLongLong(number + 1)};",
        "PyObject *pair[2] = {found, PyLong_FromLongLong(number + 2)};",
        CLAUDE_SCAN,
        "the lines after a read chunk are numbered one too far",
    ),
    M(
        "readers/_claude_scan.h",
        "int is_id = name[0] == 'i';",
        "int is_id = name[0] == 'm';",
        CLAUDE_SCAN,
        "the message id names the turn, the model its model",
    ),
    M(
        "readers/_claude_scan.h",
        "if (odd || !seen_name || !seen_input || !input_ok || line->calls >= CLAUDE_MAX_CALLS) {",
        "if (odd || !seen_name || !seen_input || line->calls >= CLAUDE_MAX_CALLS) {",
        CLAUDE_SCAN,
        "a tool input outside the canonical subset (1e2, a string) is hashed by the adapter",
    ),
    M(
        "readers/_claude_scan.h",
        "    if (unknown_type) {\n        line->odd = 1;",
        "    if (unknown_type) {\n        line->odd = 0;",
        CLAUDE_SCAN,
        'a block whose type is escaped ("tool\\u005fuse") may be a call',
    ),
    M(
        "readers/_claude_scan.h",
        "content_path(call->index),",
        "content_path(call->index + 1),",
        CLAUDE_SCAN,
        "a call is located at its own block",
    ),
    M(
        "readers/_event_scan.c",
        "flags = ((word - ones * 0x20) & ~word & highs) | ((quote - ones) & ~quote & highs) |",
        "flags = ((word - ones * 0x1f) & ~word & highs) | ((quote - ones) & ~quote & highs) |",
        CLAUDE_SCAN + CREADER,
        "a raw 0x1f inside a string is not JSON",
    ),
    M(
        "readers/_event_scan.c",
        "        quote = word ^ (ones * '\"');",
        "        quote = word ^ (ones * '\\'');",
        CLAUDE_SCAN + CREADER,
        "a string ends at its closing quote",
    ),
    M(
        "analysis/replay_claude.py",
        "if call_id is not None and seen_call(call_id):",
        "if call_id is None and seen_call(call_id):",
        CLAUDE_SCAN,
        "a tool_use block written again (a split response) is one call",
    ),
    M(
        "analysis/replay_claude.py",
        "and not results\n",
        "\n",
        CLAUDE_SCAN,
        "a run that reads results (a progress policy) takes the adapter's path",
    ),
    M(
        "formats/claude_code.py",
        "earlier.output_tokens = _larger(earlier.output_tokens, output)",
        "earlier.output_tokens = _larger(earlier.output_tokens, given)",
        CLAUDE_SCAN,
        "a split response's later line raises the turn's output count to its own",
    ),
    M(
        "readers/reader.py",
        'return TOO_LONG if len(line) - (line[-1:] == b"\\r") > limit else line',
        "return TOO_LONG if len(line) > limit else line",
        CLAUDE_SCAN,
        "a line at the limit is not too long for its CR",
    ),
    # -- filter's compact session table (the C reader's SessionSlots) ---------------------
    M(
        "readers/_session_slots.h",
        "memcmp(e->digest, digest, 32) == 0 ? e->count + 1 : 1;",
        "memcmp(e->digest, digest, 31) == 0 ? e->count + 1 : 1;",
        SLOTS,
        "two digests differing in their last byte are one streak (the hash cut short)",
    ),
    M(
        "readers/_session_slots.h",
        "memcmp(e->digest, digest, 32) == 0 ? e->count + 1 : 1;",
        "memcmp(e->digest, digest, 32) == 0 ? e->count + 2 : 1;",
        SLOTS,
        "the same call twice counts 3",
    ),
    M(
        "readers/_session_slots.h",
        "        return ID_SIZE(e->id) == id->size &&\n",
        "        return ID_SIZE(e->id) >= id->size &&\n",
        SLOTS,
        'call id "" after "c1" is a duplicate (a prefix of the stored id)',
    ),
    M(
        "readers/_session_slots.h",
        "    if (kind == id->kind && kind != ID_OBJ)",
        "    if (kind != ID_OBJ)",
        SLOTS,
        "call id True after 1 is no duplicate (compared as bytes, not with ==)",
    ),
    M(
        "readers/_session_slots.h",
        '"utf-8", "surrogatepass");\n        if (out->holder == NULL)',
        '"utf-8", "surrogateescape");\n        if (out->holder == NULL)',
        SLOTS,
        "a session key holding \\ud800 raises instead of being counted",
    ),
    M(
        "readers/_session_slots.h",
        "    if (t->max_sessions && t->newest != n) { /* a use, a duplicate's too */",
        "    if (t->max_sessions && t->newest != n && 0) { /* a use, a duplicate's too */",
        BRAKE_LRU + SLOTS,
        "a session counted again is not made the most recently used: a b a c evicts a",
    ),
    M(
        "readers/_session_slots.h",
        "            uint32_t oldest = t->oldest;",
        "            uint32_t oldest = t->entries[t->oldest].newer;",
        BRAKE_LRU + SLOTS,
        "the second least recently used session is evicted",
    ),
    M(
        "readers/_session_slots.h",
        "(Py_ssize_t)t->live > t->max_sessions",
        "(Py_ssize_t)t->live >= t->max_sessions",
        BRAKE_LRU + SLOTS,
        "--max-sessions 2 holds one session",
    ),
    M(
        "readers/_session_slots.h",
        "    t->garbage += ID_SIZE(e->id);\n    e->id = 0;",
        "    t->garbage += ID_SIZE(e->id);",
        SLOTS,
        "an ended call's id is still a duplicate",
    ),
    M(
        "readers/_session_slots.h",
        "    if (tool == t->last_tool) {",
        "    if (t->last_tool != NULL) {",
        SLOTS,
        "the tool cache answers for any name: a call is reported as the last tool's",
    ),
    M(
        "readers/_session_slots.h",
        "            memcpy(fresh + at, t->arena + e->data, n);",
        "            memcpy(fresh + at + e->key_size, t->arena + e->data + e->key_size,"
        " n - e->key_size);",
        SLOTS,
        "the arena compacted keeps the call ids but not the keys (many sessions, evictions)",
    ),
    # -- filter's rule step under a policy, in C (_policy_slots.h, policy_table.py) ----------
    # written from docs/policies.md and streak.py's docstring: each rule, in its order
    M(
        "readers/_policy_slots.h",
        "    int denied = !exempt && (int64_t)count >= limit; /* streak */",
        "    int denied = !exempt && (int64_t)count > limit; /* streak */",
        POLICY_SLOTS,
        "the call that brings a streak to its tool's limit passes (denied one call late)",
    ),
    M(
        "readers/_policy_slots.h",
        "    int denied = !exempt && (int64_t)count >= limit; /* streak */",
        "    int denied = (int64_t)count >= limit; /* streak */",
        POLICY_SLOTS,
        "an exempt tool's streak is denied",
    ),
    M(
        "readers/_policy_slots.h",
        "        uint64_t found = (run + period) / period;",
        "        uint64_t found = run / period;",
        POLICY_SLOTS,
        "a cycle is denied one repetition late (abab ab at max_repeats 3 passes)",
    ),
    M(
        "readers/_policy_slots.h",
        "        if (!distinct || exempt)",
        "        if (exempt)",
        POLICY_SLOTS,
        "a streak of identical calls is denied as a cycle (a cycle needs two distinct calls)",
    ),
    M(
        "readers/_policy_slots.h",
        "            exempt |= t->tool_exempt[*history_tool(c, p->history, at)];",
        "            exempt |= 0;",
        POLICY_SLOTS,
        "a cycle through an exempt tool (list_*) is denied",
    ),
    M(
        "readers/_policy_slots.h",
        "        runs[period - 2] = same ? runs[period - 2] + 1 : 0;",
        "        runs[period - 2] = same ? runs[period - 2] + 1 : runs[period - 2];",
        POLICY_SLOTS,
        "a broken cycle's repetitions go on counting (abab x abab is denied)",
    ),
    M(
        "readers/_policy_slots.h",
        "    uint32_t earlier = c->window_calls - 1;",
        "    uint32_t earlier = c->window_calls;",
        POLICY_SLOTS,
        "[window] calls = 4 sees the last 5 calls",
    ),
    M(
        "readers/_policy_slots.h",
        "        if ((int64_t)times >= c->window_max) {",
        "        if ((int64_t)times > c->window_max) {",
        POLICY_SLOTS,
        "a call seen max_repeats times in the window passes",
    ),
    M(
        "readers/_policy_slots.h",
        "    for (uint32_t i = 1; i <= earlier; i++)",
        "    for (uint32_t i = 1; i < earlier; i++)",
        POLICY_SLOTS,
        "the window's oldest call is not counted: [window] calls = 3 sees 2",
    ),
    M(
        "readers/_policy_slots.h",
        "    uint64_t denials = denied ? prev_denials + 1 : 0; /* stop */",
        "    uint64_t denials = denied ? 1 : 0; /* stop */",
        POLICY_SLOTS,
        "denials in a row never add up: [stop] after_denials = 2 never stops",
    ),
    M(
        "readers/_policy_slots.h",
        "    if (denied && c->has_stop && (int64_t)denials >= c->stop_after) {",
        "    if (denied && c->has_stop && (int64_t)denials > c->stop_after) {",
        POLICY_SLOTS,
        "the after_denials-th denial in a row is no stop (one late)",
    ),
    M(
        "readers/_policy_slots.h",
        "    int warned = warns && !denied && !exempt && (int64_t)count >= warn_at; /* warn */",
        "    int warned = warns && !exempt && (int64_t)count >= warn_at; /* warn */",
        POLICY_SLOTS,
        "a denied call is warned too (warn_at is for calls that run)",
    ),
    M(
        "readers/_policy_slots.h",
        "    int warned = warns && !denied && !exempt && (int64_t)count >= warn_at; /* warn */",
        "    int warned = warns && !denied && !exempt && (int64_t)count > warn_at; /* warn */",
        POLICY_SLOTS,
        "the call whose streak reaches warn_at is not warned (one late)",
    ),
    M(
        "readers/_policy_slots.h",
        "        if (t->max_sessions && (Py_ssize_t)t->live > t->max_sessions) {",
        "        if (t->max_sessions && (Py_ssize_t)t->live > t->max_sessions + 1) {",
        POLICY_SLOTS,
        "--max-sessions 2 holds three sessions under a policy",
    ),
    M(
        "readers/_policy_slots.h",
        "    if (same) {\n        answer = POLICY_DUPLICATE;",
        "    if (0) {\n        answer = POLICY_DUPLICATE;",
        POLICY_SLOTS,
        "a call whose id equals the session's last one is counted again (no duplicate)",
    ),
    M(
        "readers/_policy_slots.h",
        "p->denials << 31 | p->repeats << 51",
        "p->denials << 31 | 0 << 51",
        FAST_POLICY,
        "two window denials seen 3 and 4 times share one template (the line's seen)",
    ),
    M(
        "readers/_policy_slots.h",
        "    uint64_t key = count | p->denials << 31",
        "    uint64_t key = count | 0 << 31",
        FAST_POLICY,
        "a denial and a stop after it share one template when the rule keeps its name",
    ),
    M(
        "readers/_policy_slots.h",
        "                   (uint64_t)((p->flags & PF_WARNED) != 0) << 62;",
        "                   (uint64_t)0 << 62;",
        FAST_POLICY,
        "a warned call and a call that passes unwarned share one template",
        equivalent="whether a call is warned follows from its tool's warn_at and exemption "
        "(the template is per tool), its count and whether it was denied, all in the key",
    ),
    M(
        "readers/_event_scan.c",
        "memcmp(PyBytes_AsString(word), out_buf + name, close - name) == 0;",
        "memcmp(PyBytes_AsString(word), out_buf + name, 1) == 0;",
        POLICY_SLOTS,
        "args_ignore $.limit also leaves out a member lines (same length, same first letter)",
    ),
    M(
        "readers/_event_scan.c",
        "    if (args_end < 2 || out_buf[0] != '{') { /* not an object: nothing to leave out */",
        "    if (args_end < 2) { /* not an object: nothing to leave out */",
        POLICY_SLOTS,
        "arguments that are an array lose their first element under args_ignore",
    ),
    M(
        "readers/policy_table.py",
        "            None if flags & _EXEMPT else rule_limit,",
        "            rule_limit,",
        POLICY_SLOTS,
        "an exempt call's verdict has a limit (the brake's maxRepeats) instead of none",
    ),
    M(
        "readers/policy_table.py",
        "        policy.reads_results\n",
        "        False\n",
        POLICY_SLOTS,
        "a progress policy counts in C, which reads no results (c_rules must say None)",
    ),
    M(
        "readers/policy_table.py",
        "            seen=() if window is None else digests[-window.calls :],",
        "            seen=() if window is None else digests[-window.calls + 1 :],",
        POLICY_SLOTS,
        "the window's digests handed back lack the oldest (a state policy_step did not make)",
    ),
    M(
        "readers/fastpath.py",
        "            if all(len(path) == 1 and path[0].__class__ is str for path in paths):",
        "            if all(path[0].__class__ is str for path in paths):",
        FAST_POLICY,
        "args_ignore $.a.b leaves out the whole member a (a nested path hashed as $.a)",
    ),
    # -- adapters ----------------------------------------------------------------------
    M(
        "formats/claude_code.py",
        "given if given.__class__ is int and given >= 0 else None,",
        "given if given.__class__ is int and given > 0 else None,",
        ("test_formats_edges.py", "test_formats_claude_code.py"),
        "usage with input_tokens: 0 gives 0, not None",
    ),
    M(
        "formats/claude_code.py",
        "if content is not None and content.__class__ is not str:",
        "if content.__class__ is not str:",
        ("test_formats_edges.py", "test_formats_claude_code.py"),
        "content: null beside usage is no error",
    ),
    M(
        "formats/claude_code.py",
        'return "tool_result" not in kinds and bool(kinds & {"text", "image"})',
        'return bool(kinds & {"text", "image"})',
        ("test_user_turn_replay.py",),
        "a user line carrying tool_result blocks is no user turn",
    ),
    M(
        "formats/claude_code.py",
        'and obj.get("isSidechain") is not True',
        'and obj.get("isSidechain") is not None',
        ("test_formats_claude_code.py", "test_formats_edges.py"),
        "the common assistant line read in the loop is never a subagent's: its own streak",
    ),
    M(
        "formats/claude_code.py",
        'obj.get("type") == "assistant" and not stream:',
        'obj.get("type") == "assistant":',
        ("test_formats_streams.py", "test_formats_claude_code.py"),
        "a claude-stream line with a sessionId is keyed by its session_id (stream_session)",
    ),
    M(
        "formats/claude_code.py",
        "(old is None or value > old)",
        "(old is None or value < old)",
        ("test_formats_edges.py", "test_formats_claude_code.py"),
        "a split message keeps the larger figures",
    ),
    M(
        "formats/codex.py",
        'args = "" if raw is None else raw',
        "args = {} if raw is None else raw",
        ("test_formats_edges.py", "test_formats_codex.py"),
        'a custom_tool_call without input hashes as ""',
    ),
    M(
        "formats/_common.py",
        "cached is not None and cached <= total_input:",
        "cached is not None and cached < total_input:",
        ("test_formats_edges.py", "test_formats_codex.py"),
        "cached_input_tokens == input_tokens gives 0 fresh input tokens",
    ),
    M(
        "formats/codex.py",
        "tokens(old) is not None and value >= old:",
        "tokens(old) is not None and value > old:",
        ("test_formats_edges.py", "test_formats_codex.py"),
        "a figure that did not change is a difference of 0",
    ),
    M(
        "formats/codex.py",
        "failed = failed or (code is not None and int(code) != 0)",
        "failed = failed or code is not None",
        ("test_formats_error_flags.py",),
        "Codex's header with exit code 0 is no error",
    ),
    M(
        "formats/codex.py",
        "return False  # not Codex's header: nothing is read from it",
        "continue  # not Codex's header: nothing is read from it",
        ("test_formats_error_flags.py",),
        "a header line Codex never writes: nothing is read from the output",
    ),
    M(
        "formats/codex.py",
        "failed = self.failed.pop(call_id, False) is None or _output_failed(output)",
        "failed = _output_failed(output)",
        ("test_formats_error_flags.py",),
        "an end event that said failed before the output makes it an error",
    ),
    M(
        "formats/openhands.py",
        "if code.__class__ is int and code not in (0, -1):",
        "if code.__class__ is int and code != 0:",
        ("test_formats_error_flags.py",),
        "OpenHands' exit code -1 (still running) is no error",
    ),
    M(
        "formats/openhands.py",
        'failed = isinstance(observation, dict) and observation.get("is_error") is True',
        'failed = isinstance(observation, dict) and "is_error" in observation',
        ("test_formats_error_flags.py",),
        "an SDK observation with is_error false is no error",
    ),
    M(
        "formats/codex_exec.py",
        'if kind == "command_execution" and code.__class__ is int and code != 0:',
        'if kind == "command_execution" and code.__class__ is int and code > 1:',
        ("test_formats_error_flags.py",),
        "a command's exit code 1 with status completed is an error",
    ),
    M(
        "formats/mcp.py",
        'if match.group(1) == b"STDERR" or not',
        'if match.group(1) == b"STDOUTX" or not',
        ("test_formats_edges.py", "test_formats_mcp.py"),
        "a goose STDERR line is not JSON-RPC traffic",
    ),
    M(
        "formats/mcp.py",
        "server = second if first.strip().lower() in _LEVELS else first",
        "server = first",
        ("test_formats_edges.py", "test_formats_mcp.py"),
        "Claude Desktop's [info] [server] line names the server second",
    ),
    M(
        "formats/_common.py",
        "if value.__class__ is int and value >= 0:\n        return value",
        "if value.__class__ is int and value > 0:\n        return value",
        ("test_formats_edges.py", "test_formats_codex.py"),
        "a token count of 0 is recorded as 0",
    ),
    M(
        "formats/gemini_cli.py",
        "if isinstance(call_id, str) and call_id:",
        "if isinstance(call_id, str):",
        ("test_formats_edges.py", "test_formats_gemini.py"),
        'an empty id ("") is no id: the call is not de-duplicated',
    ),
    # issue 42's format holes and their neighbours (tests/test_formats_holes.py)
    M(
        "core/progress.py",
        'and isinstance(result.get("content"), list)',
        "and True",
        ("test_formats_holes.py", "test_progress_rule.py"),
        "a result whose content is not a list keeps its _meta in the digest",
    ),
    M(
        "formats/_common.py",
        "if position <= self._spoken:",
        "if position < self._spoken:",
        ("test_formats_holes.py", "test_user_turn_replay.py"),
        "a request log resending the last user message is one user turn",
    ),
    M(
        "formats/gemini_cli.py",
        "if not isinstance(said, str) or said not in self.spoken:",
        "if True:",
        ("test_formats_holes.py", "test_user_turn_replay.py"),
        "a Gemini user message rewritten by $set (same id) is one user turn",
    ),
    M(
        "formats/gemini_cli.py",
        "if isinstance(value, str) and value:\n            self.session = value",
        "if isinstance(value, str):\n            self.session = value",
        ("test_formats_holes.py", "test_formats_gemini.py"),
        'sessionId "" is no session: the file is',
    ),
    M(
        "formats/_common.py",
        "if isinstance(call_id, bool) or not isinstance(call_id, (str, int)):",
        "if not isinstance(call_id, (str, int)):",
        ("test_formats_holes.py", "test_formats_openai.py"),
        "a tool call id true is no id (not the id 1)",
    ),
    M(
        "formats/cassette.py",
        "isinstance(index, (int, str)) and index.__class__ is not bool",
        "isinstance(index, (int, str))",
        ("test_formats_holes.py", "test_formats_cassette.py"),
        "a stream fragment with index true is not index 1's",
    ),
    # mini-swe-agent (issue 39): its own rule for a call (tests/test_formats_mini_swe_agent.py)
    M(
        "formats/mini_swe_agent.py",
        "if len(found) == 1:  # else a format error: nothing ran",
        "if len(found) >= 1:  # else a format error: nothing ran",
        ("test_formats_mini_swe_agent.py",),
        "a v1 message with two blocks is a format error, no call",
    ),
    M(
        "formats/mini_swe_agent.py",
        "return [str(found).strip() for found in self.regex.findall(content)]",
        "return [str(found) for found in self.regex.findall(content)]",
        ("test_formats_mini_swe_agent.py",),
        "a v1 action is stripped: '  pytest -q  ' is 'pytest -q'",
    ),
    M(
        "formats/mini_swe_agent.py",
        'if self.unanswered and said is None and "actions" not in extra:',
        'if self.unanswered and "actions" not in extra:',
        ("test_formats_mini_swe_agent.py",),
        "a user's interruption after a v2 text call is not its result",
    ),
    M(
        "formats/mini_swe_agent.py",
        'if (code.__class__ is int and code != 0) or extra.get("exception_info"):',
        "if code.__class__ is int and code > 0:",
        ("test_formats_mini_swe_agent.py",),
        "a command not executed (returncode -1, exception_info) is an error",
    ),
    M(
        "formats/mini_swe_agent.py",
        "if _OPENING.match(body):\n        return True",
        "if False:\n        return True",
        ("test_formats_mini_swe_agent.py",),
        "a run whose long submission hides mini_version is still detected",
    ),
    M(
        "formats/mini_swe_agent.py",
        'return not self.v1 and (said in _USER_SPOKE or "actions" in extra)',
        "return not self.v1 and said in _USER_SPOKE",
        ("test_formats_mini_swe_agent.py",),
        "a command the user typed (human mode) is a user turn",
    ),
    # Cline's and Roo Code's task folders (issue 39): tests/test_formats_cline*.py, roo_code
    M(
        "formats/_cline_task.py",
        "if os.path.basename(name) in (HISTORY, UI_LOG):",
        "if False:",
        ("test_formats_cline.py",),
        "a task's history is the session of its folder (the task id)",
    ),
    M(
        "formats/_cline_task.py",
        "return bool(texts) and not any(_RESULT.match(text) for text in texts)",
        "return bool(texts)",
        ("test_formats_cline.py",),
        "Cline's written results are not the user speaking",
    ),
    M(
        "formats/_cline_task.py",
        '        return "roo-code"\n    return "cline"',
        '        return "roo-code"\n    return None',
        ("test_formats_cline.py",),
        "a history without metrics (XML tool tags) is still Cline's, by its <task> opening",
    ),
    M(
        "formats/_cline_task.py",
        "if _MODEL_INFO.search(body):",
        "if False:",
        ("test_formats_roo_code.py",),
        "Cline's modelInfo decides before Roo's markers",
    ),
    M(
        "formats/_cline_task.py",
        'if opening.group(1) == b"user_message" or _ROO_MODE.search(body):',
        "if _ROO_MODE.search(body):",
        ("test_formats_roo_code.py",),
        "a task message that is a <user_message> is Roo Code's",
    ),
    M(
        "formats/_cline_task.py",
        'if opening.group(1) == b"user_message" or _ROO_MODE.search(body):',
        'if opening.group(1) == b"user_message":',
        ("test_formats_roo_code.py",),
        "Roo's mode slug in the environment details is Roo Code's",
    ),
    M(
        "formats/_cline_task.py",
        '"<(task|user_message)>',
        '"<(task)>',
        ("test_formats_roo_code.py",),
        "a history opening with <user_message> is a task history",
    ),
    M(
        "formats/_cline_task.py",
        "prompt - cached if cached is not None and cached <= prompt else prompt",
        "prompt",
        ("test_formats_cline.py",),
        "metrics: a prompt that includes its cached part counts the rest",
    ),
    M(
        "formats/_cline_task.py",
        "usage.input_tokens = sent - cache if sent is not None and cache <= sent else sent",
        "usage.input_tokens = sent",
        ("test_formats_cline.py",),
        "tokensIn no smaller than the cache includes it: the input is the rest",
    ),
    M(
        "formats/_cline_task.py",
        "cache = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)",
        "cache = usage.cache_read_tokens or 0",
        ("test_formats_roo_code.py",),
        "the cache tokensIn may include is the reads and the writes",
    ),
    M(
        "formats/_cline_task.py",
        "path = beside(name, UI_LOG)",
        'path = beside(name, "ui_log.json")',
        ("test_formats_cline.py",),
        "the usage comes from the ui_messages.json beside the history",
    ),
    M(
        "formats/_cline_task.py",
        "k = bisect.bisect_left(turns, r.history_index + 1)",
        "k = bisect.bisect_left(turns, r.history_index)",
        ("test_formats_cline.py",),
        "a request is answered after the history as it stood (conversationHistoryIndex + 1)",
    ),
    M(
        "formats/_cline_task.py",
        "        all(r.ts is not None for r in requests)\n",
        "        False\n",
        ("test_formats_roo_code.py",),
        "Roo's requests are matched by time, not in order",
    ),
    M(
        "formats/_cline_task.py",
        "for k, r in enumerate(requests):",
        "for k, r in enumerate(requests, 1):",
        ("test_formats_cline.py",),
        "without index or time, request k answers assistant message k",
    ),
    M(
        "formats/_cline_task.py",
        "open_request.info = {**open_request.info, **info}",
        "pass",
        ("test_formats_cline.py",),
        "a legacy api_req_finished completes its request",
    ),
    M(
        "formats/_cline_task.py",
        "self.model = _environment_model(content) or self.model",
        "pass",
        ("test_formats_roo_code.py",),
        "Roo's model is the one its environment details name",
    ),
    M(
        "formats/_detect.py",
        'if base in ("ui_messages.json", "task_metadata.json"):',
        "if False:",
        ("test_formats_cline.py",),
        "a task's ui_messages.json is skipped without a word in a directory",
    ),
    M(
        "formats/_detect.py",
        "and re.match(_CLINE_UI, body) and _history_beside(path):",
        "and re.match(_CLINE_UI, body):",
        ("test_formats_cline_ui.py",),
        "a UI log with no history beside it is read (cline-ui)",
    ),
    M(
        "formats/_detect.py",
        "if known is not None and format_name is None and _is_ui_log(path):",
        "if False:",
        ("test_formats_cline.py",),
        "a UI log named beside its history is not read twice",
    ),
    M(
        "formats/cline_ui.py",
        'if message.get("partial") is True or not isinstance(name, str):',
        "if not isinstance(name, str):",
        ("test_formats_cline_ui.py",),
        "a record still being written is no call",
    ),
    M(
        "formats/cline_ui.py",
        "command = text.removesuffix(_REQUIRES_APPROVAL)",
        "command = text",
        ("test_formats_cline_ui.py",),
        "Cline's REQ_APP mark is no part of the command",
    ),
    M(
        "formats/cline_ui.py",
        '(kind == "say" and name == "completion_result")',
        '(name == "completion_result")',
        ("test_formats_cline_ui.py",),
        "a completion is the said record, its ask the same call",
    ),
    M(
        "formats/cline_ui.py",
        'tool = info.get("toolName") if info.get("type") == "use_mcp_tool" else None',
        "tool = None",
        ("test_formats_cline_ui.py",),
        "an MCP call is named by its toolName",
    ),
    # no silent zero (issue 39): a file that gave no tool call is said
    M(
        "analysis/replay.py",
        "if info.calls == 0 and info.error is None and not info.unreadable and content:",
        "if info.calls == 0 and info.error is None and info.unreadable and content:",
        ("test_replay_zero_calls.py",),
        "a chat with assistant messages and no call warns, and fails under --strict",
    ),
    M(
        "formats/_detect.py",
        "turns = model_turns or _assistant_messages(path)",
        "turns = model_turns",
        ("test_replay_zero_calls.py",),
        "the warning counts a file's assistant messages (read again)",
    ),
    M(
        "analysis/analyzer.py",
        "stats.unparsed_args += 1",
        "stats.unparsed_args += 0",
        ("test_formats_edges.py", "test_analysis.py"),
        "a call with unparsed arguments counts in unparsed_args",
    ),
    # -- replay --outcomes and --suggest-policy (issue 38): the stop points, the table,
    # the matching, the suggestions; tests/test_outcomes.py and test_suggest_policy.py
    M(
        "analysis/stops.py",
        "for limit in range(len(stops) + 1, min(count - 1, cap) + 1):",
        "for limit in range(len(stops) + 1, min(count, cap) + 1):",
        ("test_outcomes.py",),
        "an ignored denial is a call of count m + 1 or more, not m",
    ),
    M(
        "analysis/stops.py",
        "if turn.ordinal > stop.turn:",
        "if turn.ordinal >= stop.turn:",
        ("test_outcomes.py",),
        "the turn that made the stop call is not saved by it",
    ),
    M(
        "analysis/outcome_sweep.py",
        "return next((row for row in self.rows if row.resolved_stopped <= allowed), None)",
        "return next((row for row in self.rows if row.resolved_stopped < allowed), None)",
        ("test_outcomes.py",),
        "the recommendation may stop as many resolved runs as tolerated",
    ),
    M(
        "analysis/outcomes.py",
        'matched.by_key["unlisted"] = matched.by_key.get("unlisted", 0) + 1',
        'matched.by_key["unlisted"] = matched.by_key.get("unlisted", 0) + 1\n            continue',
        ("test_outcomes.py",),
        "a leaderboard results.json counts a run it does not list as unresolved",
    ),
    M(
        "analysis/suggest.py",
        "if not shapes <= NOISE:",
        "if False:",
        ("test_suggest_policy.py",),
        "a path whose values are text is never suggested for args_ignore",
    ),
    M(
        "analysis/suggest.py",
        "elif not unlabelled:",
        "else:",
        ("test_suggest_policy.py",),
        "without outcomes no higher limit is suggested",
    ),
    # -- the Redis store (stores/redis_store.py and its scripts): test_stores.py holds
    # both stores to streak.step / policy_step on drawn sequences (a real redis-server)
    M(
        "stores/redis_step.lua",
        "if live and digest == ARGV[at] then",
        "if live then",
        REDIS,
        "the seed rule in Redis: A then B counts B as 2 (any call went on the streak)",
    ),
    M(
        "stores/redis_step.lua",
        "    out[#out + 1] = count\n    out[#out + 1] = 1\n",
        "    out[#out + 1] = count + 1\n    out[#out + 1] = 1\n",
        REDIS,
        "a retried call id (same id twice) reports the stored count, not one more",
    ),
    M(
        "stores/redis_step.lua",
        "redis.call('PEXPIRE', key, ARGV[1])",
        "redis.call('PERSIST', key)",
        REDIS_TTL,
        "idle_ttl = 0.5: the key expires (PTTL <= 500 ms) and the next call is count 1",
    ),
    M(
        "stores/redis_cas.lua",
        "if ttl == '' then",
        "if ttl ~= '' then",
        REDIS,
        "under a policy a call sets a fresh expiry and a result keeps the current one "
        "(else the result's write fails in Lua)",
    ),
    M(
        "stores/redis_store.py",
        "if len(digest) != 32 or",
        "if len(digest) != 64 or",
        REDIS,
        "a stored 32-byte digest is read back: under a policy A, A, A is denied at 3",
    ),
    M(
        "stores/redis_store.py",
        "decode_call_id(_text(call_id) if call_id else None), _text(tool)",
        "None, _text(tool)",
        REDIS,
        "under a policy the stored call id is read back: a retried id is not counted twice",
    ),
    M(
        "stores/redis_store.py",
        "state, paired = result_step(prev, call_id, digest, error)",
        "state, paired = result_step(prev, call_id, digest)",
        REDIS,
        "[same_error] in Redis: a result's error flag counts (after = 2: error, error, deny)",
    ),
    M(
        "stores/redis_store.py",
        "if self.failures >= self.threshold:\n                wait",
        "if self.failures > self.threshold:\n                wait",
        REDIS_BREAKER,
        "the circuit opens after 3 unreachable answers, not 4",
    ),
    M(
        "stores/redis_step.lua",
        "if kind ~= 'hash' and kind ~= 'none' then",
        "if false then",
        REDIS_HYGIENE,
        "a string at a session's key is overwritten as a fresh streak (else WRONGTYPE: the "
        "session fails open on every call)",
    ),
    M(
        "stores/redis_step.lua",
        "local live = count ~= nil and count >= 1",
        "local live = count ~= nil",
        REDIS_HYGIENE,
        "a stored count of -5 with the call's digest is no streak: the call is count 1, not -4",
    ),
    M(
        "stores/redis_store.py",
        "if len(digest) != 32 or count < 1:",
        "if len(digest) != 32:",
        REDIS_HYGIENE,
        "under a policy, a stored count of -5 is no streak: the call is count 1",
    ),
    M(
        "stores/redis_store.py",
        'if found not in (None, "noeviction")),',
        "if found is not None),",
        REDIS_HYGIENE,
        "volatile-lru is said once at the first answer, noeviction never",
    ),
    M(
        "stores/redis_store.py",
        "if self.healed == 1:",
        "if self.healed >= 1:",
        REDIS_HYGIENE,
        "a second key healed is counted, not said again",
    ),
    M(
        "stores/redis_store.py",
        "shown.sort(key=lambda row: row.updated, reverse=True)",
        "shown.sort(key=lambda row: row.updated)",
        REDIS,
        "state list: the most recently updated session first (two sessions, the older first "
        "written)",
    ),
    M(
        "stores/policy_rows.py",
        'row["w"] = [digest.hex() for digest in state.seen]',
        'row["w"] = [digest.hex() for digest in state.seen[1:]]',
        REDIS,
        "[window] calls = 4, max_repeats = 2: a store keeps all the window's digests "
        "(A, B, A is denied from SQLite and Redis as in memory)",
    ),
    # -- issue 41 goal 3: calls decided together (readers/batched.py, count_calls), from
    # its docstrings: each session's calls in their order, the verdicts of one at a time
    M(
        "stores/redis_step.lua",
        "digest, tool, id_key, last = ARGV[at], ARGV[at + 1], call_key, at",
        "digest, tool, last = ARGV[at], ARGV[at + 1], at",
        STORE_BATCH,
        "several calls of one session in one run: a call repeating the id of the call "
        "before it in the same batch is a duplicate",
    ),
    M(
        "stores/redis_step.lua",
        "if last then\n  redis.call('DEL', key)",
        "if last and #ARGV == 6 then\n  redis.call('DEL', key)",
        STORE_BATCH,
        "a run of several calls writes the session's hash too (the next batch counts on)",
    ),
    M(
        "stores/redis_store.py",
        "decided.append((index, (after, duplicate)))",
        "decided.append((index, (state, duplicate)))",
        STORE_BATCH,
        "under a policy each call of a batch gets its own state, not the one before it",
    ),
    M(
        "stores/redis_link.py",
        "            link.load(self.text)\n            again = ",
        "            again = ",
        STORE_BATCH,
        "a batch sent after SCRIPT FLUSH loads the script again and is counted",
    ),
    M(
        "stores/redis_link.py",
        "masters.setdefault(master, []).append(index)",
        "masters.setdefault(None, []).append(index)",
        STORE_BATCH,
        "a cluster batch while one master is down: the sessions the others hold are counted "
        "(a pipeline per master), only the dead one's fail open",
    ),
    M(
        "readers/batched.py",
        "    def on_wait() -> None:\n        decide()\n",
        "    def on_wait() -> None:\n",
        STORE_BATCH_LIVE,
        "live input: a call is answered before the reader waits for the next line",
    ),
    M(
        "readers/batched.py",
        "                decide()\n                for judged, verdict in judge(",
        "                for judged, verdict in judge(",
        STORE_BATCH,
        "a result or user turn (progress, reset_on_user_turn) waits for the calls before it",
    ),
    M(
        "core/brake.py",
        "            if self.failure is not None:\n                self._store_answered()\n"
        "            state, duplicate = answer",
        "            state, duplicate = answer",
        STORE_BATCH_LIVE,
        "a batch answered after a failed one says the store answers again, and how many "
        "calls it missed",
    ),
    # -- issue 42 and the call's end (issue 36 item 3), from the specification ----------
    M(
        "stores/sqlite_store.py",
        _IMMEDIATE + "if policy is None:",
        _DEFERRED + "if policy is None:",
        SQLITE_THREADS,
        "6 threads x 900 calls on one file: a deferred BEGIN fails some upgrades "
        "(SQLITE_BUSY: StoreError, calls uncounted)",
    ),
    M(
        "stores/sqlite_store.py",
        _IMMEDIATE + "slot = self._live_slot(",
        _DEFERRED + "slot = self._live_slot(",
        SQLITE_THREADS,
        "an end read then written from six threads: a deferred BEGIN fails some",
    ),
    M(
        "stores/sqlite_store.py",
        _IMMEDIATE + "paired = self._record_result(",
        _DEFERRED + "paired = self._record_result(",
        SQLITE_THREADS,
        "a result read then written from six threads: a deferred BEGIN fails some",
    ),
    M(
        "stores/sqlite_store.py",
        '_END_CALL = "UPDATE streaks SET call_id_json = NULL WHERE session = ?"',
        '_END_CALL = "UPDATE streaks SET call_id_json = NULL, updated = updated + 1'
        ' WHERE session = ?"',
        ENDS,
        "an end changes the id alone: the stop's denials (the policy row stamped with "
        "the streak row's updated) survive it",
    ),
    M(
        "stores/sqlite_store.py",
        "# the call ended\n                conn.execute(_END_CALL, (key,))",
        "# the call ended\n                pass",
        ENDS,
        "a result paired by its id ends the call in SQLite too: the id counts again",
    ),
    M(
        "stores/redis_cas.lua",
        "  redis.call('PEXPIRE', key, ttl)",
        "  redis.call('PERSIST', key)",
        REDIS_POLICY_TTL,
        "under a policy every write leaves the key an expiry (PTTL > 0, never -1); an "
        "idle session is gone and its next call is count 1",
    ),
    M(
        "stores/redis_cas.lua",
        "if tonumber(ttl) > 0 then",
        "if tonumber(ttl) > 500 then",
        REDIS_POLICY_TTL,
        "a result keeps the key's expiry (PTTL at most the idle ttl, never -1)",
    ),
    M(
        "stores/redis_end.lua",
        "if redis.call('HGET', key, 'k') ~= ARGV[1] then",
        "if redis.call('HGET', key, 'k') == false then",
        REDIS_END,
        'an end names the latest call: ending "1" (or an older id) leaves 1 a duplicate',
    ),
    M(
        "stores/redis_end.lua",
        "redis.call('HSET', key, 'v', version + 1)",
        "redis.call('HSET', key, 'v', version)",
        REDIS_END,
        "an end bumps the version: a compare-and-set that read before it writes nothing",
    ),
    M(
        "stores/redis_store.py",
        "wait = self.cooldown * 2 ** (self.failures - self.threshold)",
        "wait = self.cooldown",
        REDIS_BREAKER,
        "a failed try after the cool-down reopens the circuit for twice as long",
    ),
    M(
        "stores/redis_store.py",
        "min(wait, self.max_cooldown)",
        "wait",
        REDIS_BREAKER,
        "the cool-down doubles up to 30 s, no further",
    ),
    M(
        "stores/redis_store.py",
        "            with self._lock:\n                self.failures = 0\n",
        "            with self._lock:\n                self.failures = self.failures\n",
        REDIS_BREAKER,
        "an answer closes the circuit: the next outage opens it after 3 failures, for 1 s",
    ),
    M(
        "core/streak.py",
        "return prev.latest_result, 1\n",
        "return prev.latest_result, 2\n",
        PROGRESS,
        "a, b, b then a denial: the last 2 results identical (the restart's and one more)",
    ),
    M(
        "core/streak.py",
        "return prev.latest_result, prev.earlier_results + 1",
        "return prev.latest_result, prev.earlier_results",
        PROGRESS,
        "a, a then a denial: the last 2 results identical",
    ),
    M(
        "core/streak.py",
        "return prev.earlier_result, prev.earlier_results",
        "return prev.earlier_result, 0",
        PROGRESS,
        "a, b, (no result) then a denial: 1 result reported",
    ),
    M(
        "core/streak.py",
        "    if prev.call_id is None or call_id != prev.call_id:\n        return prev\n",
        "    if prev.call_id is None:\n        return prev\n",
        ENDS,
        "an end names the latest call: ending an older id leaves the open call a duplicate",
    ),
    M(
        "core/streak.py",
        "        return prev._replace(slot=slot._replace(call_id=None))",
        "        return prev",
        ENDS,
        "under a policy an ended id counts again (a stop's denials: count 1, 2, 3)",
    ),
    M(
        "core/streak.py",
        "    state = call_ended(prev, prev.slot.call_id)  # the paired call has ended",
        "    state = prev",
        PROGRESS + ("test_stores.py",),
        "a result paired by its id ends the call: the same id again is counted, a second "
        "result with it ignored",
    ),
    M(
        "core/table.py",
        "        self._slots[session] = state  # an end is not a use: a bound's order stays",
        "        pass",
        ENDS,
        "in memory an ended id counts again",
    ),
    M(
        "stores/__init__.py",
        'if sep and "/" not in before:',
        'if sep and "/" in before:',
        URLS,
        '" redis://host" (a space before the scheme) is refused, not a SQLite file',
    ),
    M(
        "stores/__init__.py",
        'if lowered.startswith(name + "//"):',
        'if target.startswith(name + "//"):',
        URLS,
        '"REDIS//host" is refused like "redis//host"',
    ),
    M(
        "stores/__init__.py",
        "if colon and head[:1].isalpha() and set(head.lower()) <= _SCHEME_CHARS:",
        "if colon and len(head) > 5 and head[:1].isalpha() and set(head.lower()) <= _SCHEME_CHARS:",
        URLS,
        "redis:host:6379 (a scheme of 5 letters or fewer) is refused, never a SQLite file",
    ),
    M(
        "core/verdicts.py",
        "        is_denied(slot.count, max_repeats),\n",
        "        is_denied(slot.count + 1, max_repeats),\n",
        BRAKE,
        "the library's verdict denies the call that reaches the limit, not the one before",
    ),
    M(
        "core/brake.py",
        "            self.fail_closed,\n            tool_name,",
        "            False,\n            tool_name,",
        BRAKE,
        "a store that fails: denied with fail_closed (rule store, count 0)",
    ),
    M(
        "core/brake.py",
        "        if self.failure is None:\n            self._outage",
        "        if True:\n            self._outage",
        BRAKE,
        "a store that fails is said once, not once per call",
    ),
    # -- the hook's Redis connection and the MCP front-ends, from their docs (issue 42) -----
    M(
        "stores/resp.py",
        "password = unquote(parts.password) if parts.password else",
        "password = parts.password if parts.password else",
        RESP,
        "a password written %-encoded in the URL logs in decoded, as redis-py's parse_url",
    ),
    M(
        "stores/resp.py",
        'db = int(query["db"]) if "db" in query else None',
        'db = int(query["db"]) if "db" in query else 0',
        RESP,
        "redis://host/3 is database 3 (the path counts when no ?db= is given)",
    ),
    M(
        "stores/resp.py",
        "if not set(query) <= UNDERSTOOD:",
        "if not set(query) <= UNDERSTOOD | {'ssl_cert_reqs', 'health_check_interval'}:",
        RESP,
        "a URL option this module does not read leaves the URL to redis-py",
    ),
    M(
        "stores/redis_link.py",
        "        link.load(self.text)\n        return link.call(",
        "        return link.call(",
        RESP_SCRIPT,
        "after SCRIPT FLUSH the store loads the script again (NOSCRIPT), through redis-py's "
        "connection and the hook's",
    ),
    M(
        "mcp_gateway/app.py",
        "if not _LOOPBACK_HOST.fullmatch(host):",
        "if not _LOOPBACK_HOST.match(host):",
        GATEWAY_EDGES,
        "Host: localhost.evil.example is refused (the rebinding guard: whole names)",
    ),
    M(
        "mcp_gateway/app.py",
        "declared.isdigit() and int(declared) > limit:",
        "declared.isdigit() and int(declared) >= limit:",
        GATEWAY_EDGES,
        "a body of exactly --max-body bytes (Content-Length given) is read, not 413",
    ),
    M(
        "mcp_gateway/app.py",
        "                if size > limit:\n",
        "                if size > limit and declared is not None:\n",
        GATEWAY_EDGES,
        "a chunked body (no Content-Length) past --max-body is 413 too",
    ),
    M(
        "mcp_gateway/keys.py",
        "if len(value) > MAX_NAME:",
        "if len(value) >= MAX_NAME:",
        GATEWAY_KEYS,
        "a session name of exactly 256 characters is taken; 257 is refused",
    ),
    M(
        "mcp_gateway/keys.py",
        "if not isinstance(value, str) or not value.strip():",
        "if not isinstance(value, str) or not value:",
        GATEWAY_KEYS,
        "a session name of spaces only is refused, as an empty one",
    ),
    M(
        "mcp_gateway/decide.py",
        "            if verdict.duplicate and not self.shadow:\n                text = (",
        "            if verdict.duplicate:\n                text = (",
        GATEWAY_DECIDE,
        "under --shadow an id sent again while open is forwarded, not refused",
    ),
    # -- the Python prover (readers/prove.py)
    M(
        "readers/prove.py",
        'and "agent_id" not in obj',
        'and "agentid" not in obj',
        FAST,
        'an "agent_id" beside a sessionId makes the session <session>/<agent> on both paths',
    ),
    M(
        "readers/prove.py",
        "(len(line) >= 1024 and too_deep(line))",
        "(len(line) >= 4096 and too_deep(line))",
        FAST,
        "a line nesting 1,000 lists (2,000 bytes) is 'nested too deep' on the exact path, "
        "so on the fast path",
    ),
    M(
        "readers/prove.py",
        "(encode_string(call_id).encode()),",
        "(call_id.encode()),",
        FAST,
        "a line-cache hit writes its call id as JSON: the same line again with callId "
        '"a\\"b" gives valid JSON output',
    ),
    M(
        "readers/prove.py",
        'canonical.replace(b".0", b"") is not canonical',
        'canonical.replace(b".00", b"") is not canonical',
        FAST,
        '{"x": 1.0} hashes as {"x":1} (orjson writes 1.0; is_exact must see it)',
    ),
    # -- issue 29: reset_on_user_turn, warn_at, [window], [same_error]
    M(
        "core/brake.py",
        "self._ask(lambda: self.table.reset(session) >= 0, False)",
        "self._ask(lambda: self.table.reset() >= 0, False)",
        USER_TURN,
        "a user turn in s ends s alone: the subagent s/a (and another session) runs on",
    ),
    M(
        "core/policy/load.py",
        'reset = checker.boolean("", 0, document, "reset_on_user_turn") or False',
        'reset = checker.boolean("", 0, document, "reset_on_user_turn") or True',
        USER_TURN,
        "a policy without the key keeps streaks across user turns",
    ),
    M(
        "readers/wire/event_line.py",
        'if user_turns and obj.get("type") == USER_TYPE:',
        'if obj.get("type") == USER_TYPE:',
        USER_TURN,
        'without reset_on_user_turn a {"type": "user"} line reads as before',
    ),
    M(
        "core/policy/model.py",
        "return self.warn_at is not None or any(rule.warn_at is not None for rule in self.tools)",
        "return self.warn_at is not None",
        WARN,
        "a rule's own warn_at (no global one) still warns",
    ),
    M(
        "core/verdicts.py",
        "warn_at=warn_at, limit=max_repeats",
        "warn_at=max_repeats, limit=max_repeats",
        WARN,
        "the warning names the threshold: warn_at = 2, limit 4: 'warn at 2, limit 4'",
    ),
    M(
        "core/policy/load.py",
        'after = checker.integer("same_error", 0, table, "after", 1, MAX_SAME_ERROR)',
        'after = checker.integer("same_error", 0, table, "after", 2, MAX_SAME_ERROR)',
        RULES,
        "[same_error] after = 1 is valid: the call after one error is denied",
    ),
    M(
        "core/policy/load.py",
        'calls = checker.integer("window", 0, table, "calls", 2, MAX_WINDOW)',
        'calls = checker.integer("window", 0, table, "calls", 3, MAX_WINDOW)',
        RULES,
        "[window] calls = 2, max_repeats = 2 is valid (A, A denied)",
    ),
    # loop-brake run's progress on a terminal (issue 38 item 1): tests/test_run_view.py
    M(
        "render/run_view.py",
        "if quiet or shared:",
        "if quiet:",
        RUN_VIEW,
        "the agent's stream on the same terminal: lines, never a panel redrawn over it",
    ),
    M(
        "render/run_view.py",
        'if not terminal or env.get("TERM", "") == "dumb":',
        "if not terminal:",
        RUN_VIEW,
        "TERM=dumb: the plain lines, no control sequence",
    ),
    M(
        "render/run_view.py",
        'Text(f"{tally.ignored}/{self.stop_after}"',
        'Text(f"{tally.denials}/{self.stop_after}"',
        RUN_VIEW,
        "the panel counts the ignored denials, not all denials (3 denied, 2 ignored: 2/2)",
    ),
    M(
        "render/run_view.py",
        "Text(visible(event.tool), overflow",
        "Text(event.tool, overflow",
        RUN_VIEW,
        "a tool name holding an escape sequence is drawn as its escape on the panel",
    ),
    M(
        "run/execute.py",
        "progress.close(_outcome(watch.decision, status))",
        "progress.close(None)",
        RUN_VIEW,
        "a run the brake did not end says so in the panel's last frame (the agent's status)",
    ),
    M(
        "run/progress.py",
        "            self.warnings += 1\n        else:\n            self.passes += 1",
        "            self.warnings += 1\n        else:\n            self.passes += 2",
        RUN_VIEW,
        "passes + warnings + denials = calls on the panel",
    ),
    M(
        "run/execute.py",
        "opts.grace, progress.owns_terminal)",
        "opts.grace, False)",
        RUN_VIEW,
        "the agent's stderr on the panel's terminal: each line whole above the panel",
    ),
    # --- issue 42 item 2: breaks written from docs/ (hook.md, ci.md, mcp-proxy.md,
    # formats.md) and the code of hook/, mcp_shared/, run/, doctor/, agents/ and roo_code
    M(
        "hook/notice.py",
        "if not isinstance(session, str):\n        return True",
        "if not isinstance(session, str):\n        return False",
        HOOK_NOTICE,
        "an input without a session id is told every time (Claude Code, no session_id, store down)",
    ),
    M(
        "hook/notice.py",
        "except FileExistsError:\n        return False",
        "except FileExistsError:\n        return True",
        HOOK_NOTICE,
        "two fail-opens in one session: the second answers no systemMessage",
    ),
    M(
        "hook/notice.py",
        "return True  # cannot remember: tell every time",
        "return False  # cannot remember: tell every time",
        HOOK_NOTICE,
        "XDG_STATE_HOME a file (no marker folder): the notice is still given",
    ),
    M(
        "hook/notice.py",
        'f"{agent}\\0{session}".encode',
        'f"{session}".encode',
        HOOK_NOTICE,
        "the same session id under Claude Code and Gemini CLI: each agent is told once",
    ),
    M(
        "hook/notice.py",
        "WEEK = 7 * 86400",
        "WEEK = 7 * 3600",
        HOOK_NOTICE + DOCTOR,
        "a marker two days old is kept by a new notice, and counted by doctor (a week)",
    ),
    M(
        "hook/answer.py",
        'out.append("," if i else "")',
        'out.append(", " if i else "")',
        HOOK_ANSWERS,
        "a deny answer is output.json_line's bytes: no space after a comma (Claude's three keys)",
    ),
    M(
        "hook/answer.py",
        '_CONSTANTS = {True: "true", False: "false"}',
        '_CONSTANTS = {True: "true", False: "true"}',
        HOOK_ANSWERS,
        "Gemini CLI's stop answer says continue: false",
    ),
    M(
        "hook/check.py",
        "if stderr:\n        return CheckResult(False, first, session)",
        "if False:\n        return CheckResult(False, first, session)",
        HOOK_CHECK,
        "a hook that exits 0 but fails open (a store it cannot open, one stderr line) is no check",
    ),
    M(
        "hook/check.py",
        '"loop brake is off" in str(answer.get("systemMessage"))',
        '"loop brake is off" in str(answer.get("reason"))',
        HOOK_CHECK,
        "a command that answers systemMessage 'loop brake is off ...' on a clean stderr fails",
    ),
    M(
        "hook/check.py",
        "if done.returncode == 127:",
        "if done.returncode == 126:",
        HOOK_CHECK,
        "--command /no/such/loop-brake: the reason says the shell cannot run it (exit 127)",
    ),
    M(
        "hook/check.py",
        'payload["hook_event_name"] = "BeforeTool"',
        'payload["hook_event_name"] = "PreToolUse"',
        HOOK_CHECK,
        "gemini's canary is a BeforeTool call: with a store down the check fails",
    ),
    M(
        "hook/check.py",
        '"conversation_id": session,',
        '"session_id": session,',
        DOCTOR,
        "Cursor's canary names its session conversation_id: a working Cursor entry is ✓",
        equivalent="Cursor's hook reads conversation_id, else session_id (agents/cursor.py),"
        " and is detected by its event name: the same canary either way",
    ),
    M(
        "hook/check.py",
        'if len(words) < 2 or words[1] != "hook":',
        'if len(words) < 2 or words[0] != "hook":',
        HOOK_CHECK + DOCTOR,
        "the canary session is forgotten in the store the command names (--state FILE)",
    ),
    M(
        "hook/check.py",
        "forget_marker(agent, session, env)",
        "forget_marker(agent, session)",
        HOOK_CHECK,
        "a canary that fails open leaves no marker under the env's XDG_STATE_HOME",
    ),
    M(
        "hook/install.py",
        "return os.path.abspath(argv0)",
        "return argv0",
        HOOK_INSTALL,
        "install run as a relative ./loop-brake writes an absolute path",
    ),
    M(
        "hook/install.py",
        "        and os.path.isfile(installed)\n        and os.access(installed, os.X_OK)\n",
        "        and os.path.isfile(installed)\n",
        HOOK_INSTALL,
        "an entry whose program is a file that is not executable is replaced by this program",
    ),
    M(
        "hook/install.py",
        'command = f"{quote(executable)} hook --agent {agent}"',
        'command = f"{executable} hook --agent {agent}"',
        HOOK_INSTALL,
        "--command '/tmp/a dir/loop-brake' is one word for the shell",
    ),
    M(
        "hook/install.py",
        'command += f" --policy {quote(policy)}"',
        'command += f" --policy {policy}"',
        HOOK_INSTALL,
        "--policy 'my policy.toml' is one word for the shell",
    ),
    M(
        "hook/runner.py",
        'if not self.opts["fail_closed"] or self.opts["shadow"]:',
        'if not self.opts["fail_closed"]:',
        HOOK_RUNNER,
        "--shadow --fail-closed with a store down: allowed (shadow never denies)",
    ),
    M(
        "hook/runner.py",
        'self.log(call, verdict)\n        if opts["shadow"]:\n            return 0',
        "self.log(call, verdict)\n        if False:\n            return 0",
        HOOK_RUNNER,
        "--shadow: a repeated call over the limit is logged, not denied (no stdout)",
    ),
    M(
        "hook/runner.py",
        'if not opts["shadow"]:\n                    self.tell(',
        "if True:\n                    self.tell(",
        HOOK_RUNNER,
        "--shadow with a warn_at policy: the warned call gets no answer on stdout",
    ),
    M(
        "hook/runner.py",
        '(the deny answer could not be written: {why}; exit 2)")\n        return 2',
        '(the deny answer could not be written: {why}; exit 2)")\n        return 0',
        HOOK_RUNNER,
        "a denial with stdout closed exits 2 (every agent blocks on 2)",
    ),
    M(
        "agents/gemini.py",
        '{**deny_output(message), "continue": False, "stopReason": message}',
        '{**deny_output(message), "stopReason": message}',
        HOOK_ANSWERS,
        "Gemini CLI's stop answer ends the agent loop: continue false",
    ),
    M(
        "agents/cursor.py",
        '{"permission": "deny", "agent_message": message, "user_message": message}',
        '{"permission": "ask", "agent_message": message, "user_message": message}',
        HOOK_ANSWERS,
        "Cursor's deny answer is permission deny",
    ),
    M(
        "mcp_shared/answers.py",
        "if modern:\n        result[",
        "if not modern:\n        result[",
        MCP_ANSWERS,
        "a denial of a 2026-07-28 request says resultType complete, an older one does not",
    ),
    M(
        "mcp_shared/answers.py",
        'request_error(b"null", PARSE_ERROR, text)',
        'request_error(b"null", INVALID_REQUEST, text)',
        MCP_ANSWERS,
        'a line that is not strict JSON ({"a":NaN}) is answered with code -32700',
    ),
    M(
        "mcp_shared/answers.py",
        "if array_element_spans(data, content[0]):",
        "if True:",
        WARN + MCP_ANSWERS,
        "a warned call whose result content is [] gets [{warning}], not [,{warning}]",
    ),
    M(
        "mcp_shared/answers.py",
        'content = member_span(data, "content", result[0])',
        'content = member_span(data, "content", start)',
        WARN + MCP_ANSWERS,
        "a warned call's warning goes into result.content",
    ),
    M(
        "mcp_shared/answers.py",
        "return isinstance(meta, dict) and MODERN_META_KEY in meta",
        "return isinstance(meta, dict) and bool(meta)",
        MCP_ANSWERS,
        "a denied call with _meta {progressToken: 1} only is not modern: no resultType",
    ),
    M(
        "mcp_shared/spans.py",
        "        if name == key:\n            found = (at, end)",
        "        if name == key and found is None:\n            found = (at, end)",
        MCP_SPANS,
        'a key given twice: the last one, as the parser keeps it ({"id":1,"id":2} is 2)',
    ),
    M(
        "mcp_shared/spans.py",
        '_SCALAR_END = re.compile(rb"[ \\t\\r\\n,\\]}]")',
        '_SCALAR_END = re.compile(rb"[,\\]}]")',
        MCP_SPANS,
        'an id followed by whitespace ({"id": 7 ,...}): its span is "7" alone',
    ),
    M(
        "mcp_shared/spans.py",
        'name = parse_json(raw_key) if b"\\\\" in raw_key else raw_key[1:-1].decode("utf-8")',
        'name = raw_key[1:-1].decode("utf-8")',
        MCP_SPANS,
        'an escaped key ("\\u0069d") is the member id',
    ),
    M(
        "mcp_shared/spans.py",
        '    if data[at : at + 1] == b"]":\n        return spans\n',
        "",
        MCP_SPANS,
        "an empty array has no element",
    ),
    M(
        "mcp_shared/denials.py",
        "while count >= 10 and count % 10 == 0:",
        "while count > 10 and count % 10 == 0:",
        DENIALS,
        "the 10th denial in a row is said again (10, 100, 1,000...)",
    ),
    M(
        "mcp_shared/denials.py",
        "key = (verdict.tool_name, verdict.hash_prefix, shadow)",
        "key = (verdict.tool_name, shadow)",
        DENIALS,
        "a denial of another call of the same tool is said in full, not counted in the run",
    ),
    M(
        "mcp_shared/denials.py",
        "        if unsaid > 0:\n",
        "        if unsaid >= 0:\n",
        DENIALS,
        "a single denial, then the front-end stops: no '0 more denials' line",
    ),
    M(
        "mcp_shared/denials.py",
        "            if run is not None:\n                self._sum_up(session, run)",
        "            if run is not None:\n                pass",
        DENIALS,
        "three denials, then a call of the session passes: '2 more denials' said then",
    ),
    M(
        "mcp_shared/headers.py",
        "if name.lower() in RESERVED:",
        "if name in RESERVED:",
        HEADERS,
        "--header 'Content-Type: text/plain' is refused (the transport sets it)",
    ),
    M(
        "mcp_shared/headers.py",
        'value = f"{head} {found}" if head else found',
        "value = found",
        HEADERS,
        "--header 'Authorization: Bearer env:TOKEN' is 'Bearer ' + $TOKEN",
    ),
    M(
        "mcp_shared/headers.py",
        "        if not found:\n            raise HeaderError(",
        "        if variable not in environ:\n            raise HeaderError(",
        HEADERS,
        "'Authorization: Bearer env:TOKEN' with TOKEN empty is an error naming TOKEN",
    ),
    M(
        "mcp_shared/headers.py",
        'netloc = f"{host}:{port}" if port is not None else host',
        "netloc = parts.netloc",
        HEADERS,
        "safe_url of http://user:token@host:8080/mcp shows no user info",
    ),
    M(
        "mcp_shared/verdict_log.py",
        "LOG_MODE = 0o600",
        "LOG_MODE = 0o644",
        VERDICT_LOG,
        "the proxy's --log is created 0600 (it names tools and sessions)",
    ),
    M(
        "mcp_shared/verdict_log.py",
        '    | getattr(os, "O_NOFOLLOW", 0)\n',
        "",
        VERDICT_LOG,
        "--log a symbolic link: refused, the target untouched",
    ),
    M(
        "run/watch.py",
        "if previous is not None and previous == (True, verdict.hash_prefix):",
        "if previous is not None and previous[0]:",
        RUN,
        "a denial of call B after a denial of call A is not an ignored denial",
    ),
    M(
        "run/watch.py",
        "if self.ignored >= self.stop_after and (self.ignored or self.stop_after == 0):",
        "if self.ignored > self.stop_after and (self.ignored or self.stop_after == 0):",
        RUN,
        "--stop-after 2: the second ignored denial ends the run",
    ),
    M(
        "run/watch.py",
        "if self.ignored >= self.stop_after and (self.ignored or self.stop_after == 0):",
        "if self.ignored >= self.stop_after and self.ignored:",
        RUN,
        "--stop-after 0: the first denial ends the run",
    ),
    M(
        "run/watch.py",
        "        if verdict.duplicate:\n            return\n",
        "",
        RUN,
        "a denied call's line sent again with its call id is no ignored denial",
    ),
    M(
        "run/watch.py",
        "if not self.reachable:",
        "if False:",
        RUN,
        "an agent the hook cannot reach (OpenCode): the first denial ends the run",
    ),
    M(
        "run/watch.py",
        "record.session = key + slash + rest",
        "record.session = key",
        RUN,
        "--session K: a subagent's session abc/sub is K/sub",
    ),
    M(
        "run/process.py",
        "        self._signal_group(signal.SIGKILL)\n\n    @property",
        "        self._signal_group(signal.SIGTERM)\n\n    @property",
        RUN,
        "an agent that traps SIGTERM is killed after --grace",
    ),
    M(
        "run/process.py",
        "for sig in (signal.SIGTERM, signal.SIGKILL):",
        "for sig in (signal.SIGTERM,):",
        RUN,
        "after the agent exits, a child of its group that ignores SIGTERM is killed",
    ),
    M(
        "run/execute.py",
        "return 128 - agent_status",
        "return -agent_status",
        RUN,
        "an agent killed by a signal the run did not send (kill -9 $$): exit 137",
    ),
    M(
        "run/execute.py",
        "return ExitStatus.OK  # the reader went away",
        "return ExitStatus.OUTPUT  # the reader went away",
        RUN,
        "loop-brake run ... | head -1: exit 0",
    ),
    M(
        "run/execute.py",
        'if decision.kind in ("stop", "ignored", "unreachable"):\n            return',
        'if decision.kind in ("stop", "ignored"):\n            return',
        RUN,
        "OpenCode's denied call ends the run with exit STOPPED",
    ),
    M(
        "run/execute.py",
        "if failed and status in (ExitStatus.OK,):",
        "if False:",
        RUN,
        "--junit into a missing folder: exit OUTPUT",
    ),
    M(
        "run/outputs.py",
        'tests="{len(cases)}"',
        'tests="{len(sessions)}"',
        RUN,
        "a run without a tool call: JUnit tests=1 (its one test case)",
    ),
    M(
        "run/outputs.py",
        "        stopped = stats.session in result.stopped_sessions\n",
        "        stopped = stats.denied > 0\n",
        RUN,
        "JUnit: a session denied once that moved on is no failure",
    ),
    M(
        "run/outputs.py",
        'outcome = "stopped" if stats.session in result.stopped_sessions else "ok"',
        'outcome = "stopped" if stats.denied else "ok"',
        RUN,
        "the step summary: a session denied once that moved on is ok",
    ),
    M(
        "run/outputs.py",
        'shown = visible(text).replace("`", "\'").replace("|", "\\\\|")',
        'shown = visible(text).replace("`", "\'")',
        RUN,
        "the step summary: a session id holding | does not split its table row",
    ),
    M(
        "run/execute.py",
        "write_text(path, step_summary(result), append=True)",
        "write_text(path, step_summary(result))",
        RUN,
        "$GITHUB_STEP_SUMMARY is appended to, its earlier content kept",
    ),
    M(
        "run/outputs.py",
        'return f"killed by signal {-status}"',
        'return f"killed by signal {status}"',
        RUN,
        "an agent killed by SIGKILL: 'killed by signal 9'",
    ),
    M(
        "doctor/setup.py",
        "if entry.is_file(follow_symlinks=False) and when >= cutoff:",
        "if entry.is_file(follow_symlinks=False):",
        DOCTOR,
        "a fail-open marker eight days old is not counted",
    ),
    M(
        "doctor/entries.py",
        'if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):',
        'if os.path.isdir(os.path.join(venv, "pyvenv.cfg")):',
        DOCTOR,
        "a bare loop-brake found only in a venv on PATH is a ✗",
    ),
    M(
        "doctor/entries.py",
        "        if not os.access(program, os.X_OK):\n",
        "        if False:\n",
        DOCTOR,
        "an entry whose program is a file that is not executable is a ✗",
    ),
    M(
        "doctor/entries.py",
        "if len(commands) > 1:",
        "if len(commands) > 2:",
        DOCTOR,
        "two different loop-brake hooks before each call: a warning",
    ),
    M(
        "doctor/entries.py",
        '_EVERY_TOOL = (None, "", "*", ".*")',
        '_EVERY_TOOL = (None, "", "*", ".*", "Bash")',
        DOCTOR,
        "a matcher Bash leaves the other tools unbraked: a warning",
    ),
    M(
        "doctor/entries.py",
        "forget(store, entry.agent, result.session, options.env)",
        "pass",
        DOCTOR,
        "doctor's canary decision leaves no session in the entry's store",
    ),
    M(
        "doctor/entries.py",
        "        if needed and missing:\n",
        "        if missing:\n",
        DOCTOR,
        "a policy that reads no results: no warning for a hook missing from PostToolUse",
    ),
    M(
        "doctor/store.py",
        "            store.reset(session)\n",
        "",
        DOCTOR,
        "doctor's store canary leaves no loop-brake-doctor session in a SQLite store",
    ),
    M(
        "doctor/store.py",
        "    elif mode & 0o044:",
        "    elif mode & 0o004:",
        DOCTOR,
        "a store file mode 0640 (group may read it) is a warning",
    ),
    M(
        "formats/roo_code.py",
        'return agent(head) == "roo-code"',
        "return agent(head) is not None",
        ROO,
        "a Cline history (<task> opening, no Roo mode) is not sniffed as roo-code",
    ),
    M(
        "run/watch.py",
        'end = data.rfind(b"\\n") + 1',
        "end = len(data)",
        RUN_VIEW,
        "a stream sharing the terminal: a chunk's unfinished last line waits for its end",
    ),
    # issue 42 item 2 (7 December 2026): breaks written from docs/ and the modules'
    # docstrings for the modules the list had (almost) none of, not from their tests.
    M(
        "stores/sqlite_file.py",
        "os.makedirs(parent, mode=0o700, exist_ok=True)",
        "os.makedirs(parent, mode=0o755, exist_ok=True)",
        SQLITE_FILES,
        "docs/hook.md: the store's directory is created 0700",
    ),
    M(
        "stores/sqlite_file.py",
        "fd = os.open(path, flags, 0o600)",
        "fd = os.open(path, flags, 0o644)",
        SQLITE_FILES,
        "docs/hook.md: a new store file is created 0600",
    ),
    M(
        "stores/sqlite_file.py",
        'flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK',
        'flags |= getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK',
        SQLITE_FILES,
        "a --state that is a symbolic link to a real store is refused, not followed",
    ),
    M(
        "stores/sqlite_file.py",
        '_SIDECARS = ("-wal", "-shm", "-journal")',
        '_SIDECARS = ("-wal", "-shm")',
        SQLITE_FILES,
        "a symbolic link beside the store as its -journal is refused like -wal's",
    ),
    M(
        "stores/sqlite_file.py",
        'if "streaks" in names and names <= _OLD_NAMES:',
        'if "streaks" in names:',
        SQLITE_FILES,
        "an unmarked database holding an old loop-brake streaks table and another table "
        "is not ours: refused untouched, not marked",
    ),
    M(
        "stores/sqlite_file.py",
        'base = environ.get("XDG_STATE_HOME") or os.path',
        "base = os.path",
        SQLITE_FILES + ("test_state.py",),
        "docs/hook.md: the default store is under $XDG_STATE_HOME when it is set",
    ),
    M(
        "stores/rows.py",
        "    if isinstance(value, bool):\n        return int(value)",
        "    if isinstance(value, bool):\n        return value",
        REDIS,
        "Redis: call ids True and 1 (equal in Python, so in MemoryTable) are one id",
    ),
    M(
        "stores/rows.py",
        "if isinstance(value, float) and math.isfinite(value) and value == int(value):",
        "if isinstance(value, float) and math.isfinite(value) and value != value:",
        REDIS,
        "Redis: call ids 1.0 and 1 (equal in Python, so in MemoryTable) are one id",
        equivalent="canonical_json prints every number as JavaScript does, a double: an "
        "integral float and the int equal to it already have one text (1.0 and 1 are 1, "
        "1e21 and 10**21 are 1e+21), so the float's conversion changes no key",
    ),
    M(
        "stores/rows.py",
        "        and len(digest) == 32\n",
        "",
        SQLITE_FILES,
        "a row whose digest is a BLOB of other than 32 bytes is of the wrong type: skipped "
        "by state list, started afresh by the hook",
    ),
    M(
        "stores/rows.py",
        'return text.encode("utf-8", "surrogatepass")',
        'return text.encode("utf-8", "replace")',
        REDIS,
        "SQLite: sessions '\\ud800' and '\\ud801' (lone surrogates) stay two sessions",
    ),
    M(
        "stores/__init__.py",
        "chosen = store or state or environ.get(ENV_STORE)",
        "chosen = environ.get(ENV_STORE) or store or state",
        URLS + ("test_integration_session.py",),
        "docs/hook.md: --store wins over $LOOP_BRAKE_STORE",
    ),
    M(
        "stores/__init__.py",
        'if path.startswith("/") and len(path) > 1:',
        "if path:",
        URLS,
        "docs/scaling.md: sqlite:///absolute/path only; sqlite://relative is an error",
    ),
    M(
        "core/limits.py",
        "if isinstance(value, bool) or not isinstance(value, (int, float)):",
        "if not isinstance(value, (int, float)):",
        LIMITS,
        "docs/filter.md: a boolean maxRepeats (true) is rejected, not read as 1",
    ),
    M(
        "core/limits.py",
        "if isinstance(value, float) and not value.is_integer():",
        "if isinstance(value, float) and not value.is_integer() and value < 1:",
        LIMITS,
        "docs/filter.md: a fraction (2.5) is rejected, not rounded down",
    ),
    M(
        "core/limits.py",
        "    if value < 1:\n",
        "    if value < 0:\n",
        LIMITS,
        "docs/filter.md: maxRepeats 0 is rejected",
    ),
    M(
        "core/limits.py",
        "if not (digits.isascii() and digits.isdigit()):",
        "if not digits.isdigit():",
        LIMITS,
        "docs/filter.md: $DSH_LOOP_BRAKE_MAX_REPEATS is a base-10 integer: '٣' (Arabic-Indic "
        "three) is rejected",
    ),
    M(
        "core/limits.py",
        "    text = raw.strip()\n",
        "    text = raw\n",
        LIMITS,
        "docs/filter.md: ' 5 ' in $DSH_LOOP_BRAKE_MAX_REPEATS is 5 (surrounding spaces allowed)",
    ),
    M(
        "core/limits.py",
        "    if not text:\n        return None\n",
        "    if not text:\n        return DEFAULT_MAX_REPEATS\n",
        LIMITS,
        "docs/filter.md: an empty $DSH_LOOP_BRAKE_MAX_REPEATS is unset (the source is "
        "'default', not the variable)",
    ),
    M(
        "core/limits.py",
        "    if explicit is not None:\n",
        "    if explicit:\n",
        LIMITS,
        "-m 0 is an error even when the environment holds a valid value",
    ),
    M(
        "core/exitcodes.py",
        "return command is None or not self.commands or command in self.commands",
        "return command is None or command in self.commands",
        EXIT,
        "a status every command gives (usage error 2) is in each command's table",
    ),
    M(
        "core/exitcodes.py",
        "if any(not part.commands for part in parts)",
        "if all(not part.commands for part in parts)",
        EXIT,
        "the README's row of a status some commands give more of names no commands",
    ),
    M(
        "core/exitcodes.py",
        "    OUTPUT = 5  #",
        "    OUTPUT = 8  #",
        EXIT + ("test_filter_cli.py",),
        "README: standard output that cannot be written is exit status 5",
    ),
    M(
        "core/records.py",
        '    if call.call_id is not None:\n        out["callId"] = call.call_id',
        '    if call.call_id:\n        out["callId"] = call.call_id',
        ("test_filter_cli.py", "test_fastpath_ids.py"),
        'docs/filter.md: a call id 0 (or "") is in its verdict line',
    ),
    M(
        "core/records.py",
        'kind = "stop" if verdict.stop else "deny" if verdict.denied else "pass"',
        'kind = "deny" if verdict.denied else "pass"',
        ("test_policy.py",) + RULES,
        'docs/policies.md: a [stop] rule\'s line says "verdict": "stop"',
    ),
    M(
        "core/records.py",
        'out["seen"] = verdict.cycle_repeats',
        'out["seen"] = verdict.window',
        RULES,
        "docs/policies.md: a [window] deny line's seen is the calls seen in the window",
    ),
    M(
        "core/records.py",
        '    elif verdict.rule == "same_error":\n        out["errors"] = verdict.cycle_repeats\n',
        "",
        RULES,
        "docs/policies.md: a same_error deny line says how many errors (errors)",
    ),
    M(
        "core/records.py",
        'if verdict.denied and verdict.rule == "streak":',
        'if verdict.rule == "streak":',
        PROGRESS + RULES,
        "docs/policies.md: identicalResults is on a progress-mode denial only, not on its passes",
    ),
    M(
        "core/table.py",
        "            slots.move_to_end(session)\n",
        "",
        ("test_max_sessions.py", "test_brake.py"),
        "max_sessions keeps the least recently used: a session used again is kept over a "
        "newer one that was not",
    ),
    M(
        "core/table.py",
        "            if used[oldest] > cutoff:",
        "            if used[oldest] >= cutoff:",
        GATEWAY_LIMITS + ("test_max_sessions.py",),
        "expire forgets a session unused for exactly idle seconds (a test clock)",
    ),
    M(
        "mcp_gateway/keys.py",
        '    if "meta" in believe:\n',
        "    if True:\n",
        GATEWAY_KEYS,
        "--session-from authorization: a _meta name never picks the streak",
    ),
    M(
        "mcp_gateway/keys.py",
        'if "header" in believe and SESSION_HEADER in headers:',
        "if SESSION_HEADER in headers:",
        GATEWAY_KEYS,
        "--session-from authorization: a Loop-Brake-Session header never picks the streak",
    ),
    M(
        "mcp_gateway/keys.py",
        'if mcp_session and "mcp-session-id" in believe:',
        "if mcp_session:",
        GATEWAY_KEYS,
        "--session-from authorization: an Mcp-Session-Id under one credential is its streak",
    ),
    M(
        "mcp_gateway/keys.py",
        'if auth and "authorization" in believe:',
        "if auth:",
        GATEWAY_KEYS,
        "--session-from meta: a call with Authorization and no name is anonymous",
    ),
    M(
        "mcp_gateway/keys.py",
        'return SessionKey(f"{scope}conn:{peer}", "connection")',
        'return SessionKey(f"conn:{peer}", "connection")',
        GATEWAY_KEYS,
        "--session-from meta --anonymous connection: a credential scopes its connection",
    ),
    M(
        "mcp_gateway/keys.py",
        "    return tuple(source for source in NAMING_SOURCES if source in given)",
        "    return tuple(source for source in given if source)",
        GATEWAY_KEYS,
        "--session-from authorization,meta: the fixed order, whatever order is written",
    ),
    M(
        "mcp_gateway/keys.py",
        "    if not any(given):",
        "    if not given:",
        GATEWAY_KEYS,
        "--session-from '': name at least one source (not: an empty source)",
    ),
    M(
        "mcp_gateway/decide.py",
        "    if believe == NAMING_SOURCES:\n        return NO_KEY",
        "    if False:\n        return NO_KEY",
        SESSION_FROM,
        "--session-from not given: the refusal of a call naming no session is unchanged",
    ),
    M(
        "mcp_gateway/decide.py",
        "key = session_key(value, headers, peer, self.anonymous, self.session_from)",
        "key = session_key(value, headers, peer, self.anonymous)",
        SESSION_FROM,
        "--session-from authorization: one token, a fresh _meta name a call, denied at 3",
    ),
    M(
        "mcp_gateway/tenants.py",
        "        if prefixes and not client_names:",
        "        if False:",
        TENANTS,
        "--session-from without meta and header: session_prefixes are refused, located",
    ),
    M(
        "commands/mcp_gateway.py",
        '        names = "meta" in session_from or "header" in session_from',
        "        names = True",
        TENANTS,
        "--session-from mcp-session-id --tenants with session_prefixes: exit 2",
    ),
    M(
        "commands/mcp_gateway.py",
        '        "session_from": session_from,\n',
        "",
        SESSION_FROM,
        "--session-from reaches the gateway's brake (denied at the third call)",
    ),
    M(
        "mcp_gateway/tenants.py",
        "        for tenant in self.tenants:\n",
        "        for tenant in reversed(self.tenants):\n",
        TENANTS,
        "the first tenant whose selector matches wins (two tenants matching one call)",
    ),
    M(
        "mcp_gateway/tenants.py",
        "self.header = header.lower() if header else None",
        "self.header = header if header else None",
        TENANTS,
        'header = "X-Team": the header chooses a tenant whatever its case',
    ),
    M(
        "mcp_gateway/tenants.py",
        "return name[5:21]",
        "return name[5:20]",
        TENANTS,
        "a credential digest (16 hex digits) selects its tenant",
    ),
    M(
        "mcp_gateway/tenants.py",
        'if key.source not in ("meta", "header"):',
        'if key.source not in ("meta",):',
        TENANTS,
        "a session named by the Loop-Brake-Session header is matched by session_prefixes",
    ),
    M(
        "mcp_gateway/tenants.py",
        'return SessionKey(f"{TENANT_PREFIX}{tenant.name}/{key.name}", key.source), tenant',
        "return key, tenant",
        TENANTS,
        "two tenants never share a streak: a tenant's sessionId is tenant:NAME/...",
    ),
    M(
        "mcp_gateway/tenants.py",
        "if pattern is not None and not all(pattern.fullmatch(v) for v in value):",
        "if pattern is not None and not all(pattern.match(v) for v in value):",
        TENANTS,
        "credentials longer than 16 hex digits (a credential pasted) are a located error",
    ),
    M(
        "mcp_gateway/tenants.py",
        "if type(repeats) is not int or repeats < 1:",
        "if type(repeats) is not int or repeats < 0:",
        TENANTS,
        "max_repeats = 0 in a tenant is a located error",
    ),
    M(
        "mcp_gateway/tenants.py",
        "        seen.add(name)\n",
        "",
        TENANTS,
        "two [[tenant]] entries with one name: a located error",
    ),
    M(
        "mcp_gateway/tenants.py",
        "tenant.max_repeats, tenant.policy = default.max_repeats, default.policy",
        "tenant.max_repeats, tenant.policy = 3, None",
        TENANTS,
        "a tenant without policy or max_repeats takes [default]'s (max_repeats = 5)",
    ),
    M(
        "mcp_proxy/process.py",
        "return 128 - returncode if returncode < 0 else returncode",
        "return 128 + returncode if returncode < 0 else returncode",
        PROXY_PROCESS,
        "docs/mcp-proxy.md: a server killed by signal N: the proxy exits 128 + N",
    ),
    M(
        "mcp_proxy/process.py",
        'raise SpawnError(f"{command[0]}: command not found", 127)',
        'raise SpawnError(f"{command[0]}: command not found", 126)',
        PROXY_PROCESS,
        "docs/mcp-proxy.md: a server command not found is exit 127",
    ),
    M(
        "mcp_proxy/process.py",
        "for action in (proc.terminate, proc.kill):",
        "for action in (proc.kill, proc.kill):",
        PROXY_PROCESS,
        "client EOF: a server that stays gets SIGTERM (its handler runs) before SIGKILL",
    ),
    M(
        "mcp_proxy/process.py",
        "                os.kill(proc.pid, signum)\n",
        "                os.kill(proc.pid, signal.SIGTERM)\n",
        PROXY_PROCESS,
        "SIGINT and SIGHUP sent to the proxy reach the server as themselves",
    ),
    M(
        "mcp_proxy/process.py",
        'for name in ("SIGINT", "SIGTERM", "SIGHUP")',
        'for name in ("SIGINT", "SIGTERM")',
        PROXY_PROCESS,
        "SIGHUP sent to the proxy is forwarded to the server",
    ),
    M(
        "mcp_proxy/process.py",
        "        if self.output_error is not None:\n            return OUTPUT_FAILED\n",
        "",
        PROXY_PROCESS,
        "a full stdout (/dev/full): the proxy exits 5, not the server's status",
    ),
    M(
        "mcp_proxy/streams.py",
        '        return "it is open for reading only"\n',
        "        return None\n",
        PROXY_PROCESS,
        "a stdout open read-only: exit 5, the server never starts",
    ),
    M(
        "commands/mcp_proxy.py",
        "fill_closed((0, 2))",
        "fill_closed((0,))",
        PROXY_PROCESS,
        "a closed stderr: the --log file never takes descriptor 2",
    ),
    M(
        "mcp_shared/pipes.py",
        '            if pending:\n                yield b"".join(pending)\n            return\n',
        "            return\n",
        PROXY_PROCESS,
        "a last line without its newline is still forwarded",
    ),
    M(
        "mcp_shared/pipes.py",
        "            select.select([fd], [], [])\n            continue\n",
        "            return\n",
        PROXY_PROCESS,
        "a non-blocking stdin from the client is waited on, not taken for end of input",
    ),
    M(
        "mcp_gateway/serve.py",
        "if not colon or not port.isdigit() or not host or int(port) > 65535:",
        "if not colon or not port.isdigit() or int(port) > 65535:",
        GATEWAY_SERVE,
        "docs/mcp-proxy.md: --listen :8808 (no host) is a usage error, not every interface",
    ),
    M(
        "mcp_gateway/serve.py",
        "return ipaddress.ip_address(host).is_loopback",
        "return ipaddress.ip_address(host).is_private",
        GATEWAY_SERVE + GATEWAY_EDGES,
        "docs/mcp-proxy.md: a private, not loopback, --listen address (10.x) gets the "
        "not-a-loopback line and no Host/Origin guard",
    ),
    M(
        "mcp_gateway/serve.py",
        "previous = {signum: signal.signal(signum, _stopped) for signum in STOP_SIGNALS}",
        "previous: dict[Any, Any] = {}",
        GATEWAY_SERVE,
        "docs/mcp-proxy.md: SIGINT or SIGTERM stops the gateway with exit status 0",
    ),
    M(
        "mcp_gateway/stdio_upstream.py",
        "    threading.Thread(target=_stop_with_the_gateway, daemon=True).start()\n",
        "",
        GATEWAY_SERVE,
        "--upstream -- CMD: no stdio server outlives its gateway (a gateway ended by SIGKILL)",
    ),
    M(
        "mcp_gateway/store_calls.py",
        "brake = self.brake if brake is None else brake  # not ``or``",
        "brake = self.brake  # not ``or``",
        TENANTS + GATEWAY_STORE_WAIT,
        "with --store each tenant keeps its own limits",
    ),
    M(
        "mcp_gateway/store_calls.py",
        "            self.counters.fail_open_deadline += 1\n",
        "",
        GATEWAY_STORE_WAIT + ("test_mcp_gateway_metrics.py",),
        "a decision past --store-deadline is counted (the fail-open counter of /metrics)",
    ),
    M(
        "mcp_proxy/remote.py",
        "        if self.session_id:\n            headers[SESSION_HEADER] = self.session_id\n",
        "",
        BRIDGE,
        "the session id the server issued on initialize is sent back on every later request",
    ),
    M(
        "mcp_proxy/remote.py",
        "            follow_redirects=False,\n",
        "            follow_redirects=True,\n",
        BRIDGE,
        "a redirect from the remote server is not followed (the --header credentials "
        "would go to another address)",
    ),
    M(
        "mcp_proxy/remote.py",
        "        elif self.protocol_version:\n"
        "            headers[MCP_PROTOCOL_VERSION_HEADER] = self.protocol_version\n",
        "",
        BRIDGE,
        "Streamable HTTP: the negotiated MCP-Protocol-Version header on every request "
        "after initialize",
    ),
    M(
        "mcp_proxy/remote.py",
        '            self.session_id = None\n            text = f"{self.where} ended the session',
        '            text = f"{self.where} ended the session',
        BRIDGE,
        "a 404 ends the session: the next request carries no stale Mcp-Session-Id",
    ),
    M(
        "mcp_proxy/remote.py",
        "deliver(line.replace(b'\"id\":null', b'\"id\":' + id_bytes, 1))",
        "deliver(line)",
        BRIDGE,
        "the server's own JSON-RPC error in an HTTP error answer reaches the client with "
        "the request's id",
    ),
    M(
        "mcp_proxy/remote.py",
        "        return self.modern\n",
        "        return False\n",
        BRIDGE,
        "a 2026-07-28 client's cancellation closes the request's stream, never a POST",
    ),
    M(
        "mcp_proxy/remote.py",
        "        if session is not None:\n            try:\n",
        "        if False:\n            try:\n",
        BRIDGE,
        "docs/mcp-proxy.md: the client leaves: the session is ended (DELETE)",
    ),
    M(
        "core/brake.py",
        "raise LoopBrakeStop(verdict) if verdict.stop else LoopBrakeError(verdict)",
        "raise LoopBrakeError(verdict)",
        ("test_policy.py",),
        "docs/library.md: a policy's stop raises LoopBrakeStop (a host tells it from a denial)",
    ),
    M(
        "core/brake.py",
        "self.policy = None if found is None or found.empty else found",
        "self.policy = found",
        ("test_policy.py", "test_brake.py"),
        "an empty policy file is no policy: the seed's verdicts, byte for byte",
    ),
    M(
        "core/brake.py",
        "if warning is None or verdict.duplicate or not isinstance(result, str):",
        "if warning is None or not isinstance(result, str):",
        WRAPPERS,
        "a warned call passing two seams (one call id) is warned once",
    ),
    M(
        "core/brake.py",
        'return f"{result}\\n\\n{warning}" if result else warning',
        'return f"{result}\\n\\n{warning}"',
        WRAPPERS,
        "a warned call's empty str result becomes the warning alone",
    ),
    M(
        "core/brake.py",
        "        self.failure = None\n        began, before = self._outage",
        "        began, before = self._outage",
        BRAKE,
        "the store answers again: said once, not at every later call",
    ),
    M(
        "core/brake.py",
        "        copy = dict(definition)\n",
        "        copy = definition\n",
        ("test_api.py",),
        "docs/library.md: decorate_tool leaves the original definition untouched",
    ),
    M(
        "core/brake.py",
        "            verdict = brake.enforce(\n"
        '                tool, args, session_id=session_id, call_id=kwargs.get("call_id")\n'
        "            )\n",
        "            verdict = brake.enforce(tool, args, session_id=session_id)\n",
        WRAPPERS,
        "an async tool's call_id keyword de-duplicates a call seen at two seams",
    ),
    M(
        "core/brake.py",
        "        if not self.user_turns:\n            return False\n",
        "",
        USER_TURN,
        "without reset_on_user_turn a user turn changes nothing",
    ),
    M(
        "mcp_proxy/bridge.py",
        'if id_bytes is not None and method != "initialize":',
        "if id_bytes is not None:",
        BRIDGE,
        "initialize is answered before anything after it is sent (the session id it "
        "issues is on the next request)",
    ),
    M(
        "mcp_proxy/bridge.py",
        "new = text is not None and text != self.last_problem",
        "new = text is not None",
        BRIDGE,
        "a server that cannot be reached is said once, not at every request",
    ),
    M(
        "mcp_proxy/bridge.py",
        "thread.join(max(0.0, deadline - time.monotonic()))",
        "thread.join(0)",
        BRIDGE,
        "docs/mcp-proxy.md: at the client's end the calls in flight get --shutdown-timeout "
        "to finish (their answers are written)",
    ),
    M(
        "mcp_proxy/bridge.py",
        "return OUTPUT_FAILED if self.output_error is not None else 0",
        "return 0",
        BRIDGE,
        "mcp-proxy --url with a full stdout (/dev/full): exit 5",
    ),
    # -- metrics (issue 37 item 6): telemetry/ counts once for /metrics and --otel,
    # written from docs/metrics.md (the families, their labels, the opt-ins)
    M(
        "telemetry/counts.py",
        'return "shadowed"',
        'return "denied"',
        METRICS,
        "--shadow: a call that would have been denied is outcome shadowed, not denied",
    ),
    M(
        "telemetry/counts.py",
        'return "stopped" if verdict.stop else "denied"',
        'return "denied"',
        METRICS,
        "a policy's [stop] is outcome stopped",
    ),
    M(
        "telemetry/counts.py",
        'return "warned" if verdict.warned else "passed"',
        'return "passed"',
        METRICS,
        "a policy's warn_at: the warned call is outcome warned",
    ),
    M(
        "telemetry/counts.py",
        "if verdict.duplicate and not shadow:",
        "if verdict.duplicate:",
        METRICS,
        "under --shadow a duplicate id is forwarded: outcome passed, not duplicate",
    ),
    M(
        "telemetry/counts.py",
        'rule = verdict.rule or "streak"',
        "rule = verdict.rule",
        METRICS,
        "without a policy the rule label is streak",
    ),
    M(
        "telemetry/counts.py",
        "if len(self.seen) < self.limit:",
        "if len(self.seen) <= self.limit:",
        METRICS,
        "at most max_labels distinct tools get a label; one more is overflow",
    ),
    M(
        "telemetry/counts.py",
        'return labels if tenant is None else (("tenant", tenant), *labels)',
        "return labels",
        ("test_mcp_gateway_tenants.py",),
        "--tenants: a tenant's calls carry its tenant label",
    ),
    M(
        "telemetry/brake_metrics.py",
        "failures = 0 if brake is None or brake.fail_closed else brake.store_failures",
        "failures = 0 if brake is None else brake.store_failures",
        OTEL_LIBRARY,
        "fail_closed: a call the store did not decide is a denial, not a fail-open",
    ),
    M(
        "telemetry/brake_metrics.py",
        "held = [] if brake is None or brake.store is not None else [((), len(brake))]",
        "held = [] if brake is None else [((), len(brake))]",
        OTEL_LIBRARY,
        "a brake counting in a store holds no sessions: no sessions_held point",
    ),
    M(
        "telemetry/brake_metrics.py",
        'evicted = {"cap": brake.evictions, "idle": brake.expired}',
        'evicted = {"cap": brake.expired, "idle": brake.evictions}',
        OTEL_LIBRARY,
        "max_sessions 1, a second session: reason cap",
    ),
    M(
        "telemetry/otel.py",
        'base = family.removeprefix("loop_brake_").removesuffix("_total")',
        'base = family.removeprefix("loop_brake_")',
        OTEL_LIBRARY,
        "an instrument is named without _total (a Collector adds it back)",
    ),
    M(
        "telemetry/otel.py",
        "return metrics.Observation(value, {key: visible(text) for key, text in labels})",
        "return metrics.Observation(value, dict(labels))",
        OTEL_LIBRARY,
        "a tool name holding ESC and U+202E is exported escaped, as /metrics shows it",
    ),
    M(
        "telemetry/otel.py",
        'if family.kind == "counter":',
        'if family.kind == "gauge":',
        OTEL,
        "sessions_held is a gauge, calls a monotonic sum",
    ),
    M(
        "telemetry/otel.py",
        "hooks.append(histogram.record)",
        "histogram.record(0.0)",
        OTEL,
        "with --store every round trip is in loop_brake.store_seconds (4 calls: 4 or more)",
    ),
    M(
        "telemetry/otel.py",
        'resource = resource.merge(Resource({"service.name": service}))',
        "pass",
        OTEL,
        "without OTEL_SERVICE_NAME the service is loop-brake-mcp-gateway",
    ),
    M(
        "telemetry/otel.py",
        "out.append(ConsoleMetricExporter(out=sys.stderr))",
        "out.append(ConsoleMetricExporter())",
        OTEL,
        "OTEL_METRICS_EXPORTER=console writes to stderr: a proxy's stdout is its client's",
    ),
    M(
        "telemetry/otel.py",
        "if name not in EXPORTERS:",
        "if name not in (*EXPORTERS, 'prometheus'):",
        OTEL,
        "OTEL_METRICS_EXPORTER=prometheus is a usage error (exit 2), not ignored",
    ),
    M(
        "core/brake.py",
        "        if self.counts is not None:\n            self.counts.judged(verdict)",
        "        pass",
        OTEL_LIBRARY,
        "export_metrics: what check and enforce decide is counted",
    ),
    M(
        "mcp_proxy/routing.py",
        "self.counts.judged(verdict, self.shadow)",
        "self.counts.judged(verdict)",
        OTEL,
        "mcp-proxy --shadow --otel: outcome shadowed, never denied",
    ),
    M(
        "mcp_proxy/client_end.py",
        "options.metrics.watch(self.router.brake)",
        "pass",
        OTEL,
        "mcp-proxy --otel: the sessions it holds are exported (sessions_held 1)",
    ),
    # -- the gateway's Redis round trips on its event loop (stores/redis_loop.py), from its
    # docstring: replies in the order sent, the deadline a loop timer, the store's timeout,
    # the breaker told every outcome, NOSCRIPT loaded again, the login, the policy read
    M(
        "stores/redis_loop.py",
        "            waiter = waiting.popleft()\n",
        "            waiter = waiting[0]\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "each reply answers the command it follows: a count after another gets its own slot",
    ),
    M(
        "stores/redis_loop.py",
        "            if not waiter.future.done():  # else past its deadline: dropped\n",
        "            if True:  # else past its deadline: dropped\n",
        REDIS_LOOP,
        "a reply that comes after its command's deadline is dropped, the connection kept",
    ),
    M(
        "stores/redis_loop.py",
        "        if waiter.deadline_at < waiter.timeout_at:\n",
        "        if False:\n",
        REDIS_LOOP + GATEWAY_STORE_WAIT,
        "--store-deadline 0.05 with socket_timeout=120 and a frozen server: the call is "
        "decided uncounted at the deadline (TimeoutError), not at the store's timeout",
    ),
    M(
        "stores/redis_loop.py",
        "            waiter.timer = self.link.loop.call_at(waiter.timeout_at, self._expired, "
        "waiter)\n",
        "",
        REDIS_LOOP,
        "past the deadline the store's timeout still fails the connection and tells the breaker",
    ),
    M(
        "stores/redis_loop.py",
        "        self.link.forget(self)\n",
        "",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "a connection that failed is not used again (the next command opens a new one)",
    ),
    M(
        "stores/redis_loop.py",
        "        if best is None or len(self.pool) < self.connections:\n",
        "        if True:\n",
        REDIS_LOOP,
        "--store-workers bounds the connections: 64 counts at once on 2 connections",
    ),
    M(
        "stores/redis_loop.py",
        "            if not connection.waiting and not connection.held:\n"
        "                return connection\n",
        "",
        REDIS_LOOP,
        "a connection with nothing waiting is used before another is opened",
    ),
    M(
        "stores/redis_loop.py",
        "        except resp.RespUnavailable as exc:\n            breaker.failed()\n",
        "        except resp.RespUnavailable as exc:\n            pass\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "an unreachable server opens the breaker after three failures (circuit open)",
    ),
    M(
        "stores/redis_loop.py",
        "            if trial:\n                breaker.release()\n            raise\n",
        "            raise\n",
        REDIS_LOOP,
        "a half-open trial that misses its deadline does not wedge the breaker",
    ),
    M(
        "stores/redis_loop.py",
        '(str(error))}")\n        breaker.succeeded()\n        return reply\n',
        '(str(error))}")\n        return reply\n',
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "an answer closes the breaker: denials resume within 1 s of the server's return",
    ),
    M(
        "stores/redis_loop.py",
        '        await self._ask(resp.pack(("SCRIPT", "LOAD", script[0])), deadline_at)\n',
        "",
        REDIS_LOOP_SUITE,
        "SCRIPT FLUSH is transparent: the script is loaded again and run once more",
    ),
    M(
        "stores/redis_loop.py",
        "            self.close()\n            self.loop = loop\n",
        "            self.loop = loop\n",
        REDIS_LOOP,
        "a second event loop does not use the first one's connections",
    ),
    M(
        "stores/redis_loop.py",
        "        if connection.failed is None:\n            connection.write_held()\n",
        "",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "what was asked while the connection opened is written once it is open",
    ),
    M(
        "stores/redis_loop.py",
        "                login.insert(0, where.username)\n",
        "                pass\n",
        REDIS_LOOP,
        "redis://user:password@: AUTH names the user (an ACL user logs in)",
    ),
    M(
        "stores/redis_loop.py",
        "        if where.db:\n",
        "        if False:\n",
        REDIS_LOOP,
        "redis://.../3: the counts go to database 3 (SELECT)",
    ),
    M(
        "stores/redis_loop.py",
        '            if reply != b"OK":\n'
        '                raise resp.RespUnavailable("authentication failed")\n',
        "",
        REDIS_LOOP,
        "a wrong password is 'authentication failed' (unavailable), the password not said",
    ),
    M(
        "stores/redis_loop.py",
        "        return store._stepped(reply, ((session, tool, digest, call_id),))[0]\n",
        "        return store._stepped(reply, ((session, tool, digest, None),))[0]\n",
        REDIS_LOOP_SUITE,
        "a counted call's slot keeps its id (the duplicate rule, the seed's verdicts)",
    ),
    # one write a turn, an end held for the next count (at most end_hold), from the
    # module docstring: every command still goes out, in order, and each is answered
    M(
        "stores/redis_loop.py",
        "            if connection.unsent is not None:\n                return connection\n",
        "            pass\n",
        REDIS_LOOP,
        "four counts asked in one turn ride one connection and one write (one server read)",
    ),
    M(
        "stores/redis_loop.py",
        "            if urgent:\n                if not self.soon:\n",
        "            if True:\n                if not self.soon:\n",
        REDIS_LOOP,
        "an end asked alone is held until the next count, the two in one write",
    ),
    M(
        "stores/redis_loop.py",
        "                self.hold = loop.call_later(link.end_hold, self.flush)\n",
        "                pass\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "an end with no count after it still goes out (end_hold later): its id counts again",
    ),
    M(
        "stores/redis_loop.py",
        '            self.transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))\n',
        "            self.transport.write(unsent[0])\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "every command of a turn's write goes out, not only the first",
    ),
    M(
        "stores/redis_loop.py",
        "args, deadline_at, False))\n",
        "args, deadline_at, True))\n",
        REDIS_LOOP,
        "an end is not urgent: it waits for the next count",
    ),
    # a write waits one more turn of the loop (the requests read then ride it), and the
    # EVALSHA command's fixed part is packed once: every command still goes out whole
    M(
        "stores/redis_loop.py",
        "                    loop.call_soon(loop.call_soon, self.flush)  # the next turn's end\n",
        "                    loop.call_soon(loop.call_soon, lambda: None)\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "a count asked is written (at the next turn's end), not left unsent",
    ),
    M(
        "stores/redis_loop.py",
        "(len(args) + 4, script[1], resp.bulks((key, *args)))\n",
        "(len(args) + 3, script[1], resp.bulks((key, *args)))\n",
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "the script's command counts all its parts (EVALSHA, sha, 1, the key, its arguments)",
    ),
    M(
        "stores/redis_loop.py",
        'resp.bulks(("EVALSHA", sha1(script.encode("utf-8")).hexdigest(), 1))\n',
        'resp.bulks(("EVALSHA", sha1(script.encode("utf-8")).hexdigest(), 0))\n',
        REDIS_LOOP + REDIS_LOOP_SUITE,
        "the script is run on the session's key (one key named)",
    ),
    M(
        "stores/resp.py",
        "for data in map(_arg, args)])\n",
        "for data in map(_arg, args[1:])])\n",
        REDIS_LOOP,
        "every argument of a script's command is written (the key first)",
    ),
    M(
        "mcp_gateway/store_calls.py",
        "if self.on_loop is not None and policy is None and table is self.on_loop.store:",
        "if self.on_loop is not None and table is self.on_loop.store:",
        REDIS_LOOP + TENANTS,
        "with --store redis:// a policy's count goes through the store's policy_step (the "
        "loop counts only without a policy)",
    ),
    M(
        "mcp_gateway/store_calls.py",
        "                asyncio.get_running_loop().run_in_executor(self.pool, "
        "self._read_eviction)\n",
        "                pass\n",
        REDIS_LOOP,
        "a server not up at the gateway's start: its maxmemory-policy is read at the first answer",
    ),
)


def _files() -> list[str]:
    """The tree as the tests see it: tracked and new files (not ignored ones), plus the
    built C reader."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    built = [str(p.relative_to(ROOT)) for p in (ROOT / BUILT).glob("_event_scan*.so")]
    return [name for name in listed if (ROOT / name).is_file()] + built


def _copy_tree(dest: Path, files: list[str]) -> None:
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


class Worker:
    """One scratch copy of the tree; breaks are applied in it and undone after."""

    def __init__(self, base: Path, index: int, files: list[str]) -> None:
        self.tree = base / f"tree{index}"
        _copy_tree(self.tree, files)
        modules = ROOT / NODE_MODULES  # ignored by git, too big to copy: read where it is
        if modules.is_dir():
            (self.tree / NODE_MODULES).symlink_to(modules, target_is_directory=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOP_BRAKE_")}
        self.env.update(
            PYTHONPATH=str(self.tree),
            PYTHONDONTWRITEBYTECODE="1",  # a stale .pyc could hide a break (same size, mtime)
            # the shared folder the tests read: as given, else beside the checkout
            LOOP_BRAKE_SHARED=os.environ.get("LOOP_BRAKE_SHARED", str(ROOT.parent / "shared")),
            # only the plugins the selections use: langsmith's costs a second a run
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        self.so_bytes = {
            path: path.read_bytes() for path in (self.tree / BUILT).glob("_event_scan*.so")
        }
        found = subprocess.run(
            [sys.executable, "-c", "import loop_brake_cli; print(loop_brake_cli.__file__)"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not found.startswith(str(self.tree)):
            raise SystemExit(f"the scratch copy is not what is imported: {found}")

    def pytest(self, tests: tuple[str, ...], timeout: float) -> tuple[str, float]:
        """'pass', 'fail', 'timeout' or 'error' (the tests could not run), and seconds."""
        args = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
        args += ["-p", "_hypothesis_pytestplugin", "-p", "anyio.pytest_plugin"]
        args += [f"tests/{name}" for name in tests]
        started = time.monotonic()
        proc = subprocess.Popen(
            args,
            cwd=self.tree,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group: a hang is ended with its servers
        )
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "timeout", time.monotonic() - started
        took = time.monotonic() - started
        return {0: "pass", 1: "fail"}.get(returncode, "error"), took

    def build(self) -> bool:
        done = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=self.tree,
            env=self.env,
            capture_output=True,
        )
        return done.returncode == 0

    def run(self, mutant: Mutant, timeout: float) -> tuple[str, float]:
        """'killed' (a test failed), 'hung' (past its timeout: killed, but on a loaded
        machine perhaps only slow, so listed to rerun), 'survived', 'stale' (original not
        found once), 'error'."""
        path = self.tree / PKG / mutant.module
        text = path.read_text(encoding="utf-8")
        if text.count(mutant.original) != 1:
            return "stale", 0.0
        try:
            path.write_text(text.replace(mutant.original, mutant.replacement), encoding="utf-8")
            if path.suffix in (".c", ".h") and not self.build():
                return "error", 0.0
            outcome, took = self.pytest(mutant.tests, timeout)
        finally:
            path.write_text(text, encoding="utf-8")
            if path.suffix in (".c", ".h"):  # the reader as built before the break, and only it
                for so in (self.tree / BUILT).glob("_event_scan*.so"):
                    if so not in self.so_bytes:
                        so.unlink()
                for so, data in self.so_bytes.items():
                    so.write_bytes(data)
        verdict = {"fail": "killed", "timeout": "hung", "pass": "survived"}.get(outcome, "error")
        return verdict, took


class Pool:
    """The workers, each lent to one job at a time."""

    def __init__(self, workers: list[Worker]) -> None:
        self.free = list(workers)
        self.lock = threading.Lock()

    def map(self, job: Callable[[Worker, Any], Any], items: list[Any]) -> list[Any]:
        def one(item: Any) -> Any:
            with self.lock:
                worker = self.free.pop()
            try:
                return job(worker, item)
            finally:
                with self.lock:
                    self.free.append(worker)

        with ThreadPoolExecutor(max_workers=len(self.free)) as executor:
            return list(executor.map(one, items))


def _score(results: list[tuple[Mutant, str]], which: str) -> tuple[int, int]:
    counted = [(m, r) for m, r in results if r in ("killed", "hung", "survived")]
    if which == "core":
        counted = [(m, r) for m, r in counted if m.core]
    elif which.startswith("area "):
        counted = [(m, r) for m, r in counted if m.area == which.removeprefix("area ")]
    elif which != "all":
        counted = [(m, r) for m, r in counted if m.label == which]
    return sum(r != "survived" for _, r in counted), len(counted)


def _percent(killed: int, total: int) -> str:
    return f"{killed}/{total} ({100 * killed / total:.0f}%)" if total else "0/0"


def _check(chosen: list[Mutant]) -> int:
    bad = 0
    for mutant in chosen:
        text = (ROOT / PKG / mutant.module).read_text(encoding="utf-8")
        if text.count(mutant.original) != 1:
            bad += 1
            print(f"stale: {mutant.module}: {mutant.original!r}")
        for name in mutant.tests:
            if not (ROOT / "tests" / name.split("::")[0]).is_file():
                bad += 1
                print(f"no such test file: {name} ({mutant.module})")
    equivalent = sum(bool(m.equivalent) for m in chosen)
    print(f"{len(chosen)} breaks, {equivalent} equivalent, {bad} problems")
    return 1 if bad else 0


def _report(results: list[tuple[Mutant, str]], equivalent: list[Mutant]) -> None:
    print("\nkilled per module (non-equivalent breaks):")
    for label in dict.fromkeys(m.label for m, _ in results):
        print(f"  {label:24} {_percent(*_score(results, label))}")
    print(f"  {'not formats/, analysis/':24} {_percent(*_score(results, 'core'))}")
    print(f"  {'overall':24} {_percent(*_score(results, 'all'))}")
    print("\nkilled per area (issue 42's targets: 95% for the first three, 85% overall):")
    for area in ("core/", "stores/", "MCP front-ends", "other"):
        print(f"  {area:24} {_percent(*_score(results, 'area ' + area))}")
    headings = {
        "survived": "survived",
        "hung": "killed only by a hang (counted as killed; rerun them on a quieter machine)",
        "stale": "stale",
        "error": "error",
        "unrun": "not run (their tests fail unbroken; not counted)",
    }
    for kind, heading in headings.items():
        listed = [m for m, r in results if r == kind]
        if listed:
            print(f"\n{heading}:")
            for m in listed:
                print(f"  {m.module}: {m.original!r} -> {m.replacement!r}\n    {m.note}")
    if equivalent:
        print("\nequivalent (not run):")
        for m in equivalent:
            print(f"  {m.module}: {m.original!r} -> {m.replacement!r}\n    {m.equivalent}")


class _Tee:
    """Standard output that is also written to a results file, line by line."""

    def __init__(self, *streams: Any) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def _save_output(args: list[str]) -> None:
    """From here on, print to bench/results/mutants-DATE-COMMIT.txt too, after a header
    (the command, the commit, the start time and load; the end is added at exit)."""
    import atexit

    def git(*words: str) -> str:
        done = subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() or "unknown"

    commit = git("rev-parse", "--short", "HEAD")
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "-uno") else ""
    now = time.gmtime()
    path = ROOT / "bench" / "results" / f"mutants-{time.strftime('%Y-%m-%d', now)}-{commit}.txt"
    handle = path.open("w", encoding="utf-8")
    console = sys.stdout
    sys.stdout = _Tee(console, handle)  # type: ignore[assignment]

    def load() -> str:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())

    print(f"$ python bench/mutants.py {' '.join(args)}")
    print(f"commit {commit}{dirty}, {os.cpu_count()} cores")
    print(f"start {time.strftime('%Y-%m-%d %H:%M UTC', now)}, load average {load()}")

    def end() -> None:
        print(f"\nend {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load()}")
        sys.stdout = console
        handle.close()

    atexit.register(end)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-j", type=int, default=1, help="breaks tested at once (default 1)")
    parser.add_argument(
        "--only", default="", help="only modules whose path contains this (or these: a,b)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=900,
        help="seconds a test selection may take unbroken (default 900); a break's run may "
        "take 4 times its selection's unbroken time (at least 60 s): longer is a hang",
    )
    parser.add_argument(
        "--note", default="", help="only breaks whose note contains this (or these: a,b)"
    )
    parser.add_argument("--check", action="store_true", help="check the originals, run nothing")
    parser.add_argument(
        "--save",
        action="store_true",
        help="also write the whole output, with the commit, the times and the load, to "
        "bench/results/mutants-DATE-COMMIT.txt (where a run's table is kept)",
    )
    options = parser.parse_args(argv)
    if options.save and not options.check:
        _save_output(argv if argv is not None else sys.argv[1:])

    wanted = options.only.split(",")
    chosen = [m for m in MUTANTS if any(part in m.module for part in wanted)]
    if options.note:
        notes = options.note.split(",")
        chosen = [m for m in chosen if any(part in m.note for part in notes)]
    if options.check:
        return _check(chosen)
    equivalent = [m for m in chosen if m.equivalent]
    to_run = [m for m in chosen if not m.equivalent]
    files = _files()
    results: list[tuple[Mutant, str]] = []
    lock = threading.Lock()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="loop-brake-mutants-") as base:
        pool = Pool([Worker(Path(base), i, files) for i in range(options.j)])
        # every selection unbroken first: a failing one would "kill" every break it runs
        selections = list(dict.fromkeys(m.tests for m in to_run))
        outcomes = pool.map(lambda w, tests: w.pytest(tests, options.timeout), selections)
        unbroken = dict(zip(selections, outcomes, strict=True))
        failing = [tests for tests, (outcome, _) in unbroken.items() if outcome != "pass"]
        for tests in failing:
            print(f"unbroken run {unbroken[tests][0]}: {' '.join(tests)}")
        if failing and len(failing) == len(selections):
            print("the tests fail without a break: fix them first")
            return 1
        took = sum(t for _, t in outcomes)
        passing = len(selections) - len(failing)
        print(f"{passing} test selections pass unbroken ({took:.0f} s)", flush=True)
        if failing:  # the others still tell something: a long run is not thrown away
            print(f"{len(failing)} fail unbroken: their breaks are not run", flush=True)
            for mutant in to_run:
                if mutant.tests in failing:
                    results.append((mutant, "unrun"))
            to_run = [m for m in to_run if m.tests not in failing]

        def one(worker: Worker, mutant: Mutant) -> None:
            timeout = max(60.0, 4 * unbroken[mutant.tests][1])
            result, took = worker.run(mutant, timeout)
            with lock:
                results.append((mutant, result))
                # a deletion's replacement is empty: name the line it deletes
                shown = mutant.replacement.strip() or "(deleted) " + mutant.original.strip()
                first_line = shown.splitlines()[0]
                print(f"{result:9} {took:5.0f}s  {mutant.module}: {first_line}", flush=True)

        pool.map(one, to_run)
    elapsed = time.monotonic() - started
    print(f"\n{len(to_run)} breaks run in {elapsed / 60:.0f} min, {len(equivalent)} equivalent")
    results.sort(key=lambda pair: MUTANTS.index(pair[0]))
    _report(results, equivalent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
