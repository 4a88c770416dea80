"""The floor of ``loop-brake filter`` in CPython: the least work per event line.

    python bench/paired.py --rounds 3 --input sessions --check \\
        "lb=loop-brake filter {input}" \\
        "floor=python $PWD/bench/floor.py {input}" \\
        "node=node $PWD/bench/reference.mjs {input}"

For every line: orjson parse, the sorted orjson dump of the arguments, the
float/exponent/non-ASCII looks, sha256 of ``tool + "\\n" + canonical`` (a copy of
a per-tool hasher), the session's slot (a new tuple in a dict), and the verdict
line as one ``%`` format, written in 64 KiB batches. Nothing else: no exact path,
no caches, no error handling, no duplicate call ids, no file label, no policy, so
it is only right for well-formed common-shape lines without floats or non-ASCII
text (``bench/gen.py``'s sessions input is such). Its output is then byte-identical
to filter's (``--check``), which shows it does the whole job there: the distance
between it and filter is what the fast path's safety costs, and its distance to
Node is what CPython costs.
"""

from __future__ import annotations

import sys
from binascii import hexlify
from hashlib import sha256
from json.encoder import encode_basestring

import orjson

MAX_REPEATS = 3
PASS = b'{"verdict":"pass","line":%d,"toolName":%b,"sessionId":%b,"callId":%b,"count":%d'
PASS += b',"maxRepeats":%d,"hashPrefix":"%%b"}\n' % MAX_REPEATS


def main(path: str) -> None:
    loads, dumps, options = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS
    slots: dict[str, tuple] = {}
    tools: dict[str, tuple] = {}
    out: list[bytes] = []
    write = sys.stdout.buffer.write
    number = 0
    with open(path, "rb") as handle:
        rest = b""
        while chunk := handle.read(1 << 16):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                number += 1
                obj = loads(line)
                tool, args = obj["tool"], obj["args"]
                session, call_id = obj["sessionId"], obj["callId"]
                canonical = dumps(args, option=options)
                if (
                    canonical.replace(b".0", b"") is not canonical
                    or canonical.replace(b"e+", b"") is not canonical
                    or canonical.replace(b"e-", b"") is not canonical
                    or not canonical.isascii()
                ):
                    sys.exit(f"floor.py: line {number} needs the exact path")
                known = tools.get(tool)
                if known is None:
                    head = sha256((tool + "\n").encode())
                    known = tools[tool] = (head, encode_basestring(tool).encode())
                hasher = known[0].copy()
                hasher.update(canonical)
                digest = hasher.digest()
                prev = slots.get(session)
                count = prev[1] + 1 if prev is not None and prev[0] == digest else 1
                if count >= MAX_REPEATS:
                    sys.exit(f"floor.py: line {number} is a deny: not the sessions input")
                slots[session] = (digest, count, call_id, tool)
                out.append(
                    PASS
                    % (
                        number,
                        known[1],
                        encode_basestring(session).encode(),
                        encode_basestring(call_id).encode(),
                        count,
                        hexlify(digest[:6]),
                    )
                )
            write(b"".join(out))
            out.clear()


if __name__ == "__main__":
    main(sys.argv[1])
