"""The SQL behind ``session_search`` and ``chatgate sessions search``.

``matches`` finds messages by text (FTS5 on SQLite, tsvector and trigrams on
PostgreSQL), ``access`` is the privacy rule as a ``WHERE`` clause, ``catalog`` and
``windows`` read session rows and message rows, and ``reader`` puts them behind one
repository whose reads share one transaction. Shaping results for the model stays in
``core.search``.
"""
