"""Where output for people is drawn: the replay summary, the waste and fit tables,
the HTML report, and the escaping of identifiers shown on a terminal.

Empty on purpose: the hook imports ``render.visible`` alone, without rich.
"""
