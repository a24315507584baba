"""The FTS query sanitizer: user text in, a query FTS5 always accepts out."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.search.sanitize import MAX_QUERY_CHARS, parse_query, sanitize_fts_query


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(content)")
    conn.executemany(
        "INSERT INTO docs(content) VALUES (?)",
        [("the foo-bar release v1.2 is out",), ("deploying chatgate today",), ("AND OR NOT",)],
    )
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, text: str) -> list[str]:
    query = sanitize_fts_query(text)
    if query is None:
        return []
    rows = conn.execute("SELECT content FROM docs WHERE docs MATCH ? ORDER BY rowid", (query,))
    return [row[0] for row in rows]


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=300))
def test_any_text_runs_without_error(fts: sqlite3.Connection, text: str) -> None:
    search(fts, text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                '"',
                "*",
                "-",
                ".",
                "(",
                ")",
                ":",
                "^",
                "+",
                "AND",
                "OR",
                "NOT",
                "NEAR",
                "foo",
                "ab",
                " ",
                "{",
                "}",
                "_",
                "'",
                "\\",
            ]
        )
    )
)
def test_operator_soup_runs_without_error(fts: sqlite3.Connection, parts: list[str]) -> None:
    search(fts, "".join(parts))


def test_nothing_searchable_is_none() -> None:
    assert sanitize_fts_query("") is None
    assert sanitize_fts_query(' "" ** -- () AND OR ___ ') is None


def test_balanced_quotes_are_phrases(fts: sqlite3.Connection) -> None:
    assert sanitize_fts_query('"release v1.2" out') == '"release v1 2" "out"'
    assert search(fts, '"foo-bar release"') == ["the foo-bar release v1.2 is out"]
    assert search(fts, '"release foo-bar"') == []


def test_a_stray_quote_is_dropped() -> None:
    assert sanitize_fts_query('say "hello') == '"say" "hello"'


def test_hyphenated_and_dotted_terms_are_quoted(fts: sqlite3.Connection) -> None:
    assert sanitize_fts_query("foo-bar v1.2") == '"foo-bar" "v1.2"'
    assert search(fts, "v1.2") == ["the foo-bar release v1.2 is out"]


def test_operators_and_specials_are_dropped(fts: sqlite3.Connection) -> None:
    assert sanitize_fts_query("cats OR dogs NOT (birds) ^x: {y}") == (
        '"cats" "dogs" "birds" "x" "y"'
    )
    assert search(fts, "and or not") == ["AND OR NOT"]


def test_prefix_needs_three_characters(fts: sqlite3.Connection) -> None:
    assert sanitize_fts_query("dep* ch*") == '"dep"* "ch"'
    assert search(fts, "depl*") == ["deploying chatgate today"]
    assert [term.prefix for term in parse_query("foo-bar* abc*")] == [False, True]


def test_terms_are_anded(fts: sqlite3.Connection) -> None:
    assert search(fts, "release today") == []
    assert search(fts, "chatgate today") == ["deploying chatgate today"]


def test_input_is_capped() -> None:
    query = sanitize_fts_query("a" * (MAX_QUERY_CHARS - 1) + " zzz")
    assert query == '"' + "a" * (MAX_QUERY_CHARS - 1) + '"'
