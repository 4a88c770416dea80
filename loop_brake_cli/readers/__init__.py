"""Where input is read: lines, the fast path that proves a line's hash without a
parse, its optional C reader, and the one loop that feeds records to the brake.

Empty on purpose: ``filter`` imports what it needs, and the hook none of it.
"""
