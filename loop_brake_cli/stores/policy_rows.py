"""The hook store's policy rows: the part of a session's state only a policy needs.

One row per session in ``policy_state`` (created on the first call under a
policy): JSON text holding the consecutive denials, the last decision (a
duplicate call gets it), the cycle window (digests in hex, tool names, run
counters) and ``u``, the ``updated`` stamp of the session's streak row it goes
with. A row whose stamp is not its streak row's is stale (the streak was
reset, expired or rewritten without a policy) and starts afresh. Without
``[cycles]`` the window is empty; with it a row holds max_period digests.

The progress mode adds the result digests of the streak (``e``: the earlier
calls' result, ``k``: how many earlier calls had one, ``l``: the latest call's;
hex, or null) and two more decision fields. That is the layout's only change,
and it is additive: a row written before it (no ``e``/``k``/``l``, a shorter
decision) reads as one without results, so an existing state file keeps its
streaks; no SQL schema changes. Results are never stored, only digests.

``[window]`` adds ``w`` (the window's digests, hex) and ``[same_error]`` adds
``x`` (identical errors in a row, their digest in hex or null, and whether the
latest call awaits its result), and the decision one more field (the window's
size); both are left out when their rule is off, so a row without them reads
as an empty window and no errors, as before. A warned decision (policy
``warn_at``) adds ``a``, its threshold, so a duplicate of it is warned too; no
other row changes.

``args_ignore`` adds ``h`` (true) to a decision counted on a policy hash, so a
duplicate of it says so too.

The progress mode's ceiling (``progress_max``) adds ``m``, the identical calls in a
row, only while a changed result has restarted the streak's count (else it is the
count); ``[same_result]`` adds ``y`` (identical results in a row, their digest in
hex or null, and whether the latest call awaits its result). Both are left out when
they hold nothing, so every other row is as before.
"""

from __future__ import annotations

from ..core.streak import Decision, PolicySlot, Slot

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "POLICY_PRUNE",
    "POLICY_SCHEMA",
    "POLICY_SELECT",
    "POLICY_UPSERT",
    "decode_policy_state",
    "encode_policy_state",
]

POLICY_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS policy_state (session TEXT PRIMARY KEY, state TEXT NOT NULL)"
)
POLICY_SELECT = "SELECT state FROM policy_state WHERE session = ?"
POLICY_UPSERT = (
    "INSERT INTO policy_state (session, state) VALUES (?, ?)"
    " ON CONFLICT (session) DO UPDATE SET state = excluded.state"
)
POLICY_PRUNE = "DELETE FROM policy_state WHERE session NOT IN (SELECT session FROM streaks)"


def encode_policy_state(state: PolicySlot, updated: float) -> str:
    """The policy part of a session's state as stored: JSON text (digests in hex)."""
    d = state.decision
    import json  # a policy's state only: the hook without a policy does not import json

    row = {
        "u": updated,
        "d": [d.denied, d.rule, d.limit, d.max_repeats, d.exempt, d.match]
        + [d.period, d.repeats, d.denials, d.progress, d.results]
        + ([d.window] if d.window else []),
        "r": [digest.hex() for digest in state.recent],
        "t": list(state.recent_tools),
        "n": list(state.runs),
        "e": _hex(state.earlier_result),
        "k": state.earlier_results,
        "l": _hex(state.latest_result),
    }
    if state.seen:
        row["w"] = [digest.hex() for digest in state.seen]
    if state.errors or state.awaiting:
        row["x"] = [state.errors, _hex(state.error_digest), state.awaiting]
    if d.warn_at is not None:  # only a warned decision: other rows are as before
        row["a"] = d.warn_at
    if d.policy_hash:  # only under args_ignore: other rows are as before
        row["h"] = True
    if state.identical:  # only after a progress restart: other rows are as before
        row["m"] = state.identical
    if state.sames or state.same_awaiting:  # only under [same_result]
        row["y"] = [state.sames, _hex(state.same_digest), state.same_awaiting]
    return json.dumps(row, separators=(",", ":"))


def _hex(digest: bytes | None) -> str | None:
    return None if digest is None else digest.hex()


def _digest(text: Any) -> bytes | None:
    """A stored digest (hex) back as 32 bytes; anything else is no digest."""
    if not isinstance(text, str) or len(text) != 64:
        return None
    return bytes.fromhex(text)


def decode_policy_state(slot: Slot, updated: float, text: Any, policy: Any) -> PolicySlot:
    """A stored policy row back as a ``PolicySlot`` for ``slot``. A missing, unreadable or
    stale row (its stamp is not the streak row's), or a cycle window of another size
    (the policy changed), starts that part afresh: no denials, an empty window."""
    fresh = PolicySlot(slot, Decision(False, "streak", None, 0))
    if not isinstance(text, str):
        return fresh
    try:
        import json

        data = json.loads(text)
        if data["u"] != updated:
            return fresh
        decision = Decision(*data["d"])
        warn_at = data.get("a")
        if type(warn_at) is int:
            decision = decision._replace(warn_at=warn_at)
        if data.get("h") is True:
            decision = decision._replace(policy_hash=True)
        recent = tuple(bytes.fromhex(h) for h in data["r"])
        tools = tuple(data["t"])
        runs = tuple(int(n) for n in data["n"])
        earlier, latest = _digest(data.get("e")), _digest(data.get("l"))
        earlier_results = data.get("k", 0)
        if type(earlier_results) is not int:
            earlier_results = 0
        seen = tuple(bytes.fromhex(h) for h in data.get("w", ()))
        errors, error_digest, awaiting = data.get("x", (0, None, False))
        error_digest = _digest(error_digest)
        if type(errors) is not int or type(awaiting) is not bool:
            errors, awaiting = 0, False
        identical = data.get("m", 0)
        if type(identical) is not int or identical < 0:
            identical = 0
        sames, same_digest, same_awaiting = data.get("y", (0, None, False))
        same_digest = _digest(same_digest)
        if type(sames) is not int or type(same_awaiting) is not bool:
            sames, same_awaiting = 0, False
    except (ValueError, KeyError, TypeError, AttributeError):
        return fresh
    cycles = policy.cycles
    if cycles is None or len(runs) != cycles.max_period - 1 or len(recent) != len(tools):
        recent, tools, runs = (), (), ()
    window = policy.window
    seen = () if window is None else seen[-window.calls :]
    if policy.same_error is None:
        errors, error_digest, awaiting = 0, None, False
    if policy.same_result is None:
        sames, same_digest, same_awaiting = 0, None, False
    return PolicySlot(
        slot,
        decision,
        recent,
        tools,
        runs,
        earlier,
        earlier_results,
        latest,
        seen,
        error_digest,
        errors,
        awaiting,
        identical,
        same_digest,
        sames,
        same_awaiting,
    )
