"""Fitting text to a narrow terminal, for render.py: never split a word, shorten it.

A word (a file name, a session id, a tool name, a location) wider than the line
is shortened in its middle (``stuck-a…t.jsonl``), keeping both ends; lines are
broken only between words. Widths are terminal cells (rich's measure), so wide
characters count twice.
"""

from __future__ import annotations

__all__ = ["middle", "wrap"]


def middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: shortened in its middle (``abc…xyz``) if wider."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    keep = max(width - 1, 0)
    front, back = (keep + 1) // 2, keep // 2

    def take(chars: str, cells: int) -> str:
        out = ""
        for char in chars:
            if cell_len(out + char) > cells:
                break
            out += char
        return out

    return (take(text, front) + "\u2026" + take(text[::-1], back)[::-1])[: max(width, 1)]


def wrap(text: str, width: int, indent: int, hanging: int) -> list[str]:
    """Lines of at most ``width`` cells, broken only between words; a word wider than a
    line is shortened in its middle rather than split."""
    from rich.cells import cell_len

    lines: list[str] = []
    line = " " * indent
    bare = True  # nothing but the indent on this line yet
    for word in text.split():
        room = width - cell_len(line) - (0 if bare else 1)
        if not bare and cell_len(word) > room:
            lines.append(line)
            line, bare = " " * hanging, True
            room = width - hanging
        word = middle(word, max(room, 1))
        line = line + word if bare else f"{line} {word}"
        bare = False
    lines.append(line)
    return lines
