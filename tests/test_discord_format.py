"""Markdown → Discord chunks: sizes in UTF-16, fences carried across, tables as lists."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.discord.format import MAX_MESSAGE_CHARS, render, tables_to_lists

FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


def u16(text: str) -> int:
    """UTF-16 length computed independently of the module under test."""
    return len(text.encode("utf-16-le")) // 2


def fence_roles(text: str) -> tuple[list[bool], bool]:
    """Which lines open or close a code block, and whether a block is left open.

    A small CommonMark-style fence parser written for the tests: a fence is 3+
    backticks or tildes indented at most 3 spaces; a backtick fence's info string
    has no backtick; a closer uses the same character, is at least as long, and
    carries nothing else.
    """
    roles: list[bool] = []
    opened: tuple[str, int] | None = None
    for line in text.split("\n"):
        match = FENCE_LINE.fullmatch(line)
        if match is None:
            roles.append(False)
            continue
        run, info = match.group(1), match.group(2)
        if opened is None:
            is_opener = not (run[0] == "`" and "`" in info)
            opened = (run[0], len(run)) if is_opener else None
            roles.append(is_opener)
        else:
            closes = run[0] == opened[0] and len(run) >= opened[1] and not info.strip()
            opened = None if closes else opened
            roles.append(closes)
    return roles, opened is not None


def content(text: str) -> str:
    """The text without fence lines and without any whitespace."""
    roles, _ = fence_roles(text)
    kept = [line for line, is_fence in zip(text.split("\n"), roles, strict=True) if not is_fence]
    return "".join("".join(kept).split())


def assert_valid(chunks: list[str], limit: int) -> None:
    for chunk in chunks:
        assert chunk.strip(), "empty chunk"
        assert u16(chunk) <= limit, f"chunk of {u16(chunk)} units over {limit}"
        assert not fence_roles(chunk)[1], f"unbalanced fences in {chunk!r}"


def assert_lossless(source: str, chunks: list[str]) -> None:
    """Dropping the added fences, the chunks hold exactly the source's content, in order."""
    expected = content(tables_to_lists(source))
    assert "".join(content(chunk) for chunk in chunks) == expected


# --- Hypothesis strategies -----------------------------------------------------------

WORD_CHARS = st.sampled_from(
    list("abcdefxyz0123456789*_#>-.,|`~\\") + ["é", "e\u0301", "😀", "❤️", "👩\u200d👩\u200d👧", "𝔸"]
)
WORDS = st.lists(WORD_CHARS, min_size=1, max_size=12).map("".join)
LINES = st.lists(WORDS, min_size=0, max_size=20).map(" ".join)
PARAGRAPHS = st.lists(LINES, min_size=1, max_size=6).map("\n".join)
LONG_WORDS = st.integers(min_value=1, max_value=400).map(lambda n: "x" * n)


@st.composite
def code_blocks(draw: st.DrawFn) -> str:
    char = draw(st.sampled_from(["`", "~"]))
    size = draw(st.integers(min_value=3, max_value=4))
    language = draw(st.sampled_from(["", "python", "js", "c++"]))
    indent = draw(st.sampled_from(["", " ", "   "]))
    body = draw(st.lists(st.one_of(LINES, LONG_WORDS, st.just("```"), st.just("")), max_size=30))
    closed = draw(st.booleans())
    fence = char * size
    lines = [indent + fence + language, *body] + ([fence] if closed else [])
    return "\n".join(lines)


@st.composite
def tables(draw: st.DrawFn) -> str:
    columns = draw(st.integers(min_value=1, max_value=4))
    cell = st.lists(st.sampled_from(list("abc xyz😀")), max_size=8).map("".join)
    header = draw(st.lists(cell, min_size=columns, max_size=columns))
    rows = draw(st.lists(st.lists(cell, min_size=columns, max_size=columns), max_size=6))
    lines = [header, ["---"] * columns, *rows]
    return "\n".join("| " + " | ".join(row) + " |" for row in lines)


BLOCKS = st.one_of(PARAGRAPHS, code_blocks(), tables(), LONG_WORDS)
REPLIES = st.lists(BLOCKS, min_size=0, max_size=8).map("\n\n".join)


# --- Properties ---------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=REPLIES, limit=st.integers(min_value=40, max_value=400))
def test_chunks_fit_balance_fences_and_lose_nothing(text: str, limit: int) -> None:
    chunks = render(text, limit=limit)
    assert_valid(chunks, limit)
    assert_lossless(text, chunks)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=600), limit=st.integers(min_value=8, max_value=60))
def test_any_text_fits_even_tiny_limits(text: str, limit: int) -> None:
    """Arbitrary Unicode and very small limits: still within limits, still lossless."""
    chunks = render(text, limit=limit)
    for chunk in chunks:
        assert chunk.strip()
        assert u16(chunk) <= limit
    assert "".join(content(chunk) for chunk in chunks) == content(
        tables_to_lists(text.replace("\r\n", "\n").replace("\r", "\n"))
    )


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.one_of(PARAGRAPHS, LONG_WORDS), max_size=6).map("\n\n".join))
def test_prose_without_tables_or_fences_is_only_split(text: str) -> None:
    text = text.replace("|", "").replace("`", "").replace("~", "")
    chunks = render(text, limit=100)
    assert "".join("".join(chunks).split()) == "".join(text.split())


# --- Basics -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_blank_reply_gives_no_chunks(text: str) -> None:
    assert render(text) == []


def test_short_markdown_is_sent_unchanged() -> None:
    text = "# Title\n\n**bold** and *it* and `code`\n\n> quote\n\n- a\n- b\n\n```py\nx = 1\n```"
    assert render(text) == [text]


def test_limit_too_small_is_rejected() -> None:
    with pytest.raises(ValueError, match="limit"):
        render("hello", limit=3)


def test_default_limit_is_discords() -> None:
    chunks = render("word " * 1000)
    assert MAX_MESSAGE_CHARS == 2000
    assert len(chunks) == 3
    assert all(u16(chunk) <= 2000 for chunk in chunks)


# --- Split points -------------------------------------------------------------------


def test_prefers_a_blank_line_in_the_second_half() -> None:
    text = "A" * 60 + "\n\n" + "B" * 20 + "\n" + "C" * 50
    assert render(text, limit=100) == ["A" * 60, "B" * 20 + "\n" + "C" * 50]


def test_early_blank_line_loses_to_a_later_line_break() -> None:
    text = "A" * 20 + "\n\n" + "B" * 50 + "\n" + "C" * 50
    assert render(text, limit=100) == ["A" * 20 + "\n\n" + "B" * 50, "C" * 50]


def test_long_line_splits_at_spaces_not_inside_words() -> None:
    words = [f"w{i:03d}" for i in range(400)]
    chunks = render(" ".join(words), limit=100)
    assert len(chunks) > 1
    assert [w for chunk in chunks for w in chunk.split(" ")] == words


def test_single_long_line_without_spaces_is_hard_cut() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    chunks = render(text)
    assert [len(chunk) for chunk in chunks] == [2000, 2000, 1000]
    assert "".join(chunks) == text


# --- Astral characters and graphemes ------------------------------------------------


def test_astral_characters_are_counted_as_two_units() -> None:
    text = "😀" * 1500  # 3000 UTF-16 units, 1500 code points
    chunks = render(text)
    assert chunks == ["😀" * 1000, "😀" * 500]


def test_astral_character_straddling_the_limit_moves_to_the_next_chunk() -> None:
    text = "a" * 1999 + "😀" + "b"
    assert render(text) == ["a" * 1999, "😀b"]


@pytest.mark.parametrize("cluster", ["❤️", "e\u0301", "👍🏽"])
def test_cluster_stays_whole_at_a_hard_cut(cluster: str) -> None:
    """Heart + variation selector, e + combining acute, thumb + skin tone."""
    text = "a" * (2000 - u16(cluster[0])) + cluster + "b"  # the base alone would just fit
    assert render(text) == ["a" * (2000 - u16(cluster[0])), cluster + "b"]


def test_zwj_family_emoji_is_not_split() -> None:
    family = "👩\u200d👩\u200d👧"  # 8 UTF-16 units
    chunks = render(family * 30, limit=20)
    assert all(chunk == family * 2 for chunk in chunks[:-1])
    assert "".join(chunks) == family * 30


# --- Code blocks --------------------------------------------------------------------


def mixed_reply() -> str:
    prose = " ".join(f"Sentence number {i} explains a detail." for i in range(50))
    code = "\n".join(f"    value_{i} = compute({i}, scale=2)  # step {i}" for i in range(120))
    return f"{prose}\n\n```python\n{code}\n```\n\n{prose}"


def test_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    text = mixed_reply()
    assert len(text) >= 7000
    chunks = render(text)
    assert len(chunks) >= 4
    assert_valid(chunks, MAX_MESSAGE_CHARS)
    assert_lossless(text, chunks)
    code_chunks = [chunk for chunk in chunks if "value_" in chunk]
    assert len(code_chunks) >= 3
    for chunk in code_chunks:
        if "value_0 " not in chunk:  # continues the block opened in an earlier chunk
            assert chunk.startswith("```python\n")
        if "value_119 " not in chunk:  # the block goes on in the next chunk
            assert chunk.endswith("\n```")


def test_code_is_split_only_between_its_lines() -> None:
    text = mixed_reply()
    code_lines = {line for line in text.split("\n") if line.startswith("    value_")}
    seen = [line for chunk in render(text) for line in chunk.split("\n") if "value_" in line]
    assert set(seen) == code_lines
    assert len(seen) == len(code_lines)


def test_code_whitespace_is_preserved() -> None:
    body = "\n".join(f"{' ' * (i % 9)}x{i}  " for i in range(200))
    text = f"```\n{body}\n```"
    chunks = render(text, limit=300)
    assert len(chunks) > 1
    inner = [chunk.split("\n")[1:-1] for chunk in chunks]
    assert "\n".join(line for lines in inner for line in lines) == body


def test_tilde_fence_with_indent_is_reopened_verbatim() -> None:
    body = "\n".join(f"line {i}" for i in range(100))
    chunks = render(f"  ~~~~ruby\n{body}\n  ~~~~", limit=200)
    assert len(chunks) > 1
    assert all(chunk.startswith("  ~~~~ruby\n") for chunk in chunks)
    assert all(chunk.endswith("~~~~") for chunk in chunks)


def test_single_code_line_longer_than_a_chunk_is_hard_cut_inside_fences() -> None:
    text = "```js\n" + "x" * 500 + "\n```"
    chunks = render(text, limit=100)
    assert_valid(chunks, 100)
    assert all(chunk.startswith("```js\n") and chunk.endswith("\n```") for chunk in chunks)
    assert "".join(chunk[len("```js\n") : -len("\n```")] for chunk in chunks) == "x" * 500


def test_unclosed_code_block_is_closed() -> None:
    chunks = render("Look:\n\n```python\nprint('hi')")
    assert chunks == ["Look:\n\n```python\nprint('hi')\n```"]


@pytest.mark.parametrize(
    "text",
    ["a" * 100 + "```" + "b" * 50, "word " * 18 + "wor" + " ```python and more words"],
)
def test_split_never_starts_a_line_with_a_fence(text: str) -> None:
    """Backticks in prose must not turn into an opening fence at a chunk's start."""
    chunks = render(text, limit=100)
    assert len(chunks) == 2
    assert_valid(chunks, 100)
    assert not any(chunk.startswith("```") for chunk in chunks)
    assert "".join("".join(chunks).split()) == "".join(text.split())


# --- Tables -------------------------------------------------------------------------


def test_table_becomes_a_list() -> None:
    text = (
        "People:\n\n| Name | Age | City |\n|---|:--:|--:|\n| Alice | 30 | Paris |\n| Bob | | Rome |"
    )
    assert tables_to_lists(text) == (
        "People:\n\n- **Alice** · Age: 30 · City: Paris\n- **Bob** · City: Rome"
    )
    assert render(text) == [tables_to_lists(text)]


def test_table_without_outer_pipes_and_with_escaped_pipe() -> None:
    text = "Key | Value\n--- | ---\nor | a \\| b\nempty |"
    assert tables_to_lists(text) == "- **or** · Value: a | b\n- **empty**"


def test_one_column_table_becomes_plain_bullets() -> None:
    assert tables_to_lists("| Step |\n|---|\n| boil |\n| eat |") == "- boil\n- eat"


def test_pipes_without_delimiter_row_are_left_alone() -> None:
    text = "a | b | c\nx | y | z\n\nshell: `ls | grep x`"
    assert tables_to_lists(text) == text
    assert render(text) == [text]


def test_table_inside_code_is_not_converted() -> None:
    text = "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```"
    assert tables_to_lists(text) == text
    assert render(text) == [text]


def test_table_after_code_block_is_converted() -> None:
    text = "~~~\ncode\n~~~\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert tables_to_lists(text) == "~~~\ncode\n~~~\n- **1** · b: 2"


def test_column_count_mismatch_is_not_a_table() -> None:
    text = "| a | b |\n|---|\n| 1 | 2 |"
    assert tables_to_lists(text) == text


# --- Size ---------------------------------------------------------------------------


def test_a_hundred_kilobyte_reply_is_sent_whole() -> None:
    text = (mixed_reply() + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n") * 12
    assert len(text) >= 100_000
    chunks = render(text)
    assert_valid(chunks, MAX_MESSAGE_CHARS)
    assert len(chunks) >= len(text) // MAX_MESSAGE_CHARS
