"""Where streaks live between processes: one interface, several backends.

``sqlite_store.StateStore`` is the default: one SQLite file per machine
(``sqlite_file`` decides which file may be used, ``rows`` and ``policy_rows``
what a row holds). Nothing here imports click or rich: the hook imports this
package before every tool call.
"""
