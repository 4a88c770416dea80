"""The optional C reader (``_event_scan.c``) as the type checker sees it: mypy does not
read a built extension, so the signatures its method table documents are stated here."""

from typing import Any

from typing_extensions import Self

SHA_INSTRUCTIONS: str
SHA_NI: int

def digest_json(head: bytes, data: bytes, /) -> bytes | None: ...
def scan_claude_lines(
    data: bytes, number: int, /
) -> tuple[
    list[
        tuple[int, bytes]
        | tuple[
            int,
            str,
            str | None,
            str | None,
            tuple[int | None, int | None, int | None, int | None] | None,
            tuple[tuple[str, str, str | None, bytes], ...],
        ]
    ],
    int,
]: ...
def policy_digest(line: bytes, head: bytes, names: tuple[bytes, ...], /) -> bytes | None: ...
def scan_event(line: bytes, /) -> tuple[str, str, str, bytes, bytes, bytes, bytes] | None: ...
def sha256(data: bytes, /) -> bytes: ...

class SessionSlots:
    """filter's session table in C (``_session_slots.h``): the seed's rule, or with
    ``policy`` (``policy_table.c_rules``) a policy's rules (``_policy_slots.h``)."""

    def __new__(
        cls,
        slot_type: type,
        max_sessions: int | None = None,
        policy: tuple[int, int, int, int, int] | None = None,
    ) -> Self: ...
    def __len__(self) -> int: ...
    @property
    def evictions(self) -> int: ...
    @property
    def max_sessions(self) -> int | None: ...
    def count_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any = None,
        max_repeats: int = 0,
        policy: Any = None,
        now: float | None = None,
    ) -> tuple[Any, bool]: ...
    def end_call(self, session: str, call_id: Any, now: float | None = None, /) -> bool: ...
    def reset(self, session: str | None = None, /) -> int: ...
    def get(self, session: str, /) -> Any: ...
    def sessions(self) -> list[str]: ...
    def policy_call(
        self,
        session: str,
        tool: str,
        digest: bytes,
        call_id: Any,
        plan: tuple[int, bool, int | None],
        /,
    ) -> int: ...
    def policy_state(self, session: str, /) -> tuple[Any, ...] | None: ...
