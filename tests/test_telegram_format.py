"""Markdown → Telegram chunks: sizes in UTF-16, entities never cut, nothing lost."""

from __future__ import annotations

import pytest
import telegram
import telegramify_markdown
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.telegram.format import TELEGRAM_LIMIT, Chunk, plain, plain_chunk, render

LANGUAGES = ["python", "bash", "json"]


def u16(text: str) -> int:
    """UTF-16 length computed independently of the module under test."""
    return len(text.encode("utf-16-le")) // 2


def entity_text(text: str, entity: telegram.MessageEntity) -> str:
    """The characters an entity covers, sliced in UTF-16 units like Telegram does."""
    data = text.encode("utf-16-le")
    return data[2 * entity.offset : 2 * (entity.offset + entity.length)].decode("utf-16-le")


def locate(source: str, chunks: list[Chunk]) -> list[int]:
    """Find each chunk in the source, in order, with only whitespace between them."""
    starts = []
    position = 0
    for chunk in chunks:
        found = source.find(chunk.text, position)
        assert found >= 0, f"chunk not found in order: {chunk.text[:40]!r}"
        assert source[position:found].strip() == "", "text dropped between chunks"
        starts.append(found)
        position = found + len(chunk.text)
    assert source[position:].strip() == "", "text dropped after the last chunk"
    return starts


def assert_valid_chunk(chunk: Chunk, limit: int) -> None:
    """Size, non-emptiness, entity bounds and Telegram's nesting rule."""
    size = u16(chunk.text)
    assert chunk.text.strip()
    assert size <= limit
    spans = []
    for entity in chunk.entities:
        assert entity.length > 0
        assert entity.offset >= 0
        assert entity.offset + entity.length <= size
        spans.append((entity.offset, entity.offset + entity.length))
    for index, (a_start, a_end) in enumerate(spans):
        for b_start, b_end in spans[index + 1 :]:
            disjoint = a_end <= b_start or b_end <= a_start
            nested = (a_start <= b_start and b_end <= a_end) or (
                b_start <= a_start and a_end <= b_end
            )
            assert disjoint or nested, f"overlapping entities {spans}"


def assert_links_intact(
    source: str,
    entities: list[telegramify_markdown.MessageEntity],
    chunks: list[Chunk],
    starts: list[int],
) -> None:
    """Every link in a chunk is a whole link from the single-message conversion."""
    links = {(e.offset, e.length, e.url) for e in entities if e.type == "text_link"}
    seen = 0
    for chunk, start in zip(chunks, starts, strict=True):
        base = u16(source[:start])
        for entity in chunk.entities:
            if entity.type == telegram.constants.MessageEntityType.TEXT_LINK:
                assert (base + entity.offset, entity.length, entity.url) in links
                seen += 1
    assert seen == len(links)


def assert_pre_whole_lines(chunk: Chunk) -> None:
    """A code block starts at a line start and ends at a line end."""
    for entity in chunk.entities:
        if entity.type != telegram.constants.MessageEntityType.PRE:
            continue
        data = chunk.text.encode("utf-16-le")
        before = data[: 2 * entity.offset].decode("utf-16-le")
        after = data[2 * (entity.offset + entity.length) :].decode("utf-16-le")
        inside = entity_text(chunk.text, entity)
        assert before == "" or before.endswith("\n")
        assert after == "" or after.startswith("\n") or inside.endswith("\n")


def long_reply() -> str:
    """A realistic 10k+ reply: headings, prose with many links, fenced code."""
    parts = []
    for section in range(14):
        parts.append(f"## Section {section}: setting things up")
        links = " ".join(
            f"see [the docs page {section}.{n}](https://example.com/docs/{section}/{n}) and"
            for n in range(4)
        )
        parts.append(f"Here is **important** prose for part {section}, {links} *more* text 🎉.")
        language = LANGUAGES[section % len(LANGUAGES)]
        body = "\n".join(f"    value_{section}_{i} = compute({i})  # step {i}" for i in range(12))
        parts.append(f"```{language}\n{body}\n```")
    return "\n\n".join(parts)


def test_long_reply_splits_in_order_without_cutting_links_or_code() -> None:
    markdown = long_reply()
    assert len(markdown) >= 10_000
    source, entities = telegramify_markdown.convert(markdown)
    chunks = render(markdown)
    assert len(chunks) >= 3
    for chunk in chunks:
        assert_valid_chunk(chunk, TELEGRAM_LIMIT)
        assert_pre_whole_lines(chunk)
    starts = locate(source, chunks)
    assert_links_intact(source, entities, chunks, starts)
    pre_blocks = [source_pre for source_pre in entities if source_pre.type == "pre"]
    chunk_pres = [e for chunk in chunks for e in chunk.entities if e.type == "pre"]
    assert len(chunk_pres) == len(pre_blocks) == 14
    assert [e.language for e in chunk_pres] == [e.language for e in pre_blocks]
    link_texts = [
        entity_text(chunk.text, e)
        for chunk in chunks
        for e in chunk.entities
        if e.type == "text_link"
    ]
    assert link_texts[:2] == ["the docs page 0.0", "the docs page 0.1"]


def test_huge_code_block_becomes_closed_parts_keeping_language() -> None:
    lines = [f"    value_{i} = compute({i}, 'x' * {i})  # 😀 step {i}" for i in range(400)]
    markdown = "Intro.\n\n```python\n" + "\n".join(lines) + "\n```"
    chunks = render(markdown)
    assert len(chunks) >= 4
    assert chunks[0] == Chunk(text="Intro.", entities=())  # prose is not glued to the code
    code_parts = []
    for chunk in chunks[1:]:
        assert_valid_chunk(chunk, TELEGRAM_LIMIT)
        assert_pre_whole_lines(chunk)
        pres = [e for e in chunk.entities if e.type == "pre"]
        assert len(pres) == 1
        assert pres[0].language == "python"
        code_parts.append(entity_text(chunk.text, pres[0]))
    assert "\n".join(code_parts) == "\n".join(lines)


def test_astral_characters_count_two_units() -> None:
    chunks = render("😀" * 3000)
    assert all(len(c.text.encode("utf-16-le")) // 2 <= 4096 for c in chunks)
    assert "".join(c.text for c in chunks) == "😀" * 3000
    assert [u16(c.text) for c in chunks] == [4096, 1904]


def test_emoji_just_past_the_boundary_moves_to_next_chunk() -> None:
    text = "a" * 4095 + "😀 tail"
    chunks = render(text)
    assert [c.text for c in chunks] == ["a" * 4095, "😀 tail"]


def test_emoji_words_split_at_spaces_within_limit() -> None:
    words = ["😀👍" for _ in range(1500)]  # 5 units a word with its space: 7,499 units
    chunks = render(" ".join(words))
    assert len(chunks) == 2
    for chunk in chunks:
        assert len(chunk.text.encode("utf-16-le")) // 2 <= 4096
        assert chunk.text.split(" ") == ["😀👍"] * len(chunk.text.split(" "))
    assert sum(len(c.text.split(" ")) for c in chunks) == 1500


def test_hard_cut_keeps_zwj_sequences_whole() -> None:
    family = "👨\u200d👩\u200d👧"
    chunks = render(family * 600, limit=100)
    assert "".join(c.text for c in chunks) == family * 600
    for chunk in chunks:
        assert u16(chunk.text) <= 100
        assert chunk.text.startswith("👨")
        assert chunk.text.endswith("👧")


def test_inline_formatting_maps_to_entity_types() -> None:
    markdown = (
        "😀 **bold** *it* `code` [link](https://example.com/x) ~~gone~~\n\n```bash\nls -l\n```"
    )
    (chunk,) = render(markdown)
    found = {(e.type, entity_text(chunk.text, e)) for e in chunk.entities}
    assert {
        ("bold", "bold"),
        ("italic", "it"),
        ("code", "code"),
        ("text_link", "link"),
        ("strikethrough", "gone"),
        ("pre", "ls -l"),
    } <= found
    (link,) = [e for e in chunk.entities if e.type == "text_link"]
    assert link.url == "https://example.com/x"
    (pre,) = [e for e in chunk.entities if e.type == "pre"]
    assert pre.language == "bash"
    assert all(isinstance(e, telegram.MessageEntity) for e in chunk.entities)


def test_plain_fallbacks_drop_entities() -> None:
    markdown = long_reply()
    chunks = render(markdown)
    assert plain(markdown) == [c.text for c in chunks]
    resent = plain_chunk(chunks[0])
    assert resent == Chunk(text=chunks[0].text, entities=())


def test_conversion_failure_falls_back_to_raw_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(markdown: str) -> tuple[str, list[telegramify_markdown.MessageEntity]]:
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(telegramify_markdown, "convert", broken)
    assert render("**odd** `input") == [Chunk(text="**odd** `input", entities=())]
    long_raw = " ".join(["word"] * 2000)
    chunks = render(long_raw)
    assert len(chunks) == 3
    assert all(not c.entities and u16(c.text) <= TELEGRAM_LIMIT for c in chunks)
    assert " ".join(c.text for c in chunks) == long_raw


def test_empty_and_whitespace_replies_give_no_chunks() -> None:
    assert render("") == []
    assert render("  \n\n ") == []


def test_limit_must_fit_an_astral_character() -> None:
    with pytest.raises(ValueError, match="limit"):
        render("x", limit=1)


# --- property test -------------------------------------------------------------

WORD = st.text(alphabet="abcxyzé中😀🎉", min_size=1, max_size=8)
INLINE = st.one_of(
    WORD,
    WORD.map(lambda w: f"**{w}**"),
    WORD.map(lambda w: f"*{w}*"),
    WORD.map(lambda w: f"`{w}`"),
    st.tuples(st.lists(WORD, min_size=1, max_size=3), st.integers(0, 99)).map(
        lambda pair: f"[{' '.join(pair[0])}](https://e.example/{pair[1]})"
    ),
)
PARAGRAPH = st.lists(INLINE, min_size=1, max_size=40).map(" ".join)
HEADING = st.lists(WORD, min_size=1, max_size=4).map(lambda ws: "# " + " ".join(ws))
CODE_LINE = st.text(alphabet="abc =()😀中", max_size=24).map(str.rstrip)
CODE = st.tuples(st.sampled_from(LANGUAGES), st.lists(CODE_LINE, min_size=1, max_size=30)).map(
    lambda pair: f"```{pair[0]}\n" + "\n".join(pair[1]) + "\n```"
)
MARKDOWN = st.lists(st.one_of(PARAGRAPH, HEADING, CODE), min_size=1, max_size=12).map("\n\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown=MARKDOWN, limit=st.integers(min_value=64, max_value=600))
def test_split_invariants_hold_for_generated_markdown(markdown: str, limit: int) -> None:
    source, entities = telegramify_markdown.convert(markdown)
    chunks = render(markdown, limit=limit)
    for chunk in chunks:
        assert_valid_chunk(chunk, limit)
        assert_pre_whole_lines(chunk)
    starts = locate(source, chunks)
    assert_links_intact(source, entities, chunks, starts)
    assert plain(markdown, limit=limit) == [c.text for c in chunks]


ODD_PIECE = st.sampled_from(
    [*"ab *_[]()`#>-|~\n\t😀👍é\u200d\ufe0f", "```", "](http://x)", "\n\n", "```py\n"]
)


@settings(max_examples=200, deadline=None)
@given(
    markdown=st.lists(ODD_PIECE, max_size=300).map("".join) | st.text(max_size=300),
    limit=st.integers(min_value=2, max_value=200),
)
def test_odd_input_never_raises_and_always_fits(markdown: str, limit: int) -> None:
    for chunk in render(markdown, limit=limit):
        assert_valid_chunk(chunk, limit)
