"""The brake itself: the hash contract, the streak rule, verdicts, policies, progress.

Everything a verdict depends on is decided here, and nothing here imports click,
rich, a reader or a front-end. Empty on purpose: the hook imports single modules
of this package at start-up, and an import here would be paid by every call.
"""
