"""``session_search``: query sanitizing, argument checks and the payloads the model reads.

The SQL behind it (matching, the privacy rule, session and message reads) lives in
``core.store.search``.
"""
