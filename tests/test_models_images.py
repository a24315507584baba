"""Images in model requests, through the real openai and anthropic clients against the
fakes: parts and blocks hold the stored bytes, the same every turn; a file gone from the
store, or a model without vision, gets a line of text instead."""

from __future__ import annotations

import json
from pathlib import Path

from core.media.refs import MediaRef
from core.media.store import MediaStore
from core.models.anthropic_client import AnthropicModel
from core.models.base import ChatMessage, ModelConfig, ModelRequest
from core.models.image_data import ImageData
from core.models.offline import OfflineModel
from core.models.openai_client import OpenAIChatModel
from tests.fakes.anthropic_server import FakeAnthropicServer, image_blocks
from tests.fakes.openai_server import FakeOpenAIServer, image_parts
from tests.image_files import jpeg, png


def openai_config(fake: FakeOpenAIServer, media: Path, *, vision: bool = True) -> ModelConfig:
    return ModelConfig(
        provider="openai",
        model="fake-model",
        base_url=fake.base_url,
        api_key="sk-test",
        media_dir=media,
        vision=vision,
    )


def anthropic_config(fake: FakeAnthropicServer, media: Path) -> ModelConfig:
    return ModelConfig(
        provider="anthropic",
        model="claude-test",
        base_url=fake.base_url,
        api_key="sk-ant-test",
        media_dir=media,
    )


def asking(text: str, *refs: MediaRef) -> list[ChatMessage]:
    return [ChatMessage("user", text, images=refs)]


async def test_an_openai_request_carries_the_stored_bytes_the_same_every_turn(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    store = MediaStore(tmp_path / "media")
    photo = await store.put(jpeg(), "image/jpeg", kind="image", name="cat.jpg")
    model = OpenAIChatModel(openai_config(fake_openai, store.root))
    history = asking("what is this?", photo)
    try:
        first = await model.complete(ModelRequest(system="s", messages=history))
        store.path(photo).unlink()  # read once: the next turn sends it from memory
        await model.complete(ModelRequest(system="s", messages=history, on_text=_ignore))
    finally:
        await model.aclose()

    sent, again = fake_openai.requests
    content = sent["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    [part] = image_parts(sent)
    assert (part.mime, part.data) == ("image/jpeg", jpeg())
    assert json.dumps(again["messages"]) == json.dumps(sent["messages"])
    assert first.content == "echo: what is this?"


async def test_a_file_gone_from_the_store_or_no_vision_is_a_line_of_text(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    store = MediaStore(tmp_path / "media")
    kept = await store.put(png(), "image/png", kind="image", name="kept.png")
    gone = MediaRef("ab" * 32, "image/jpeg", "image", "gone.jpg", 10)
    seeing = OpenAIChatModel(openai_config(fake_openai, store.root))
    blind = OpenAIChatModel(openai_config(fake_openai, store.root, vision=False))
    try:
        await seeing.complete(ModelRequest(system="", messages=asking("both", kept, gone)))
        await seeing.complete(ModelRequest(system="", messages=asking("lost", gone)))
        await blind.complete(ModelRequest(system="", messages=asking("blind", kept)))
    finally:
        await seeing.aclose()
        await blind.aclose()

    mixed, lost, unseen = (r["messages"][-1]["content"] for r in fake_openai.requests)
    assert mixed[0]["text"] == "both\n[gone.jpg: an image that is no longer stored]"
    assert [p.data for p in image_parts(fake_openai.requests[0])] == [png()]
    assert lost == "lost\n[gone.jpg: an image that is no longer stored]"  # plain text
    assert unseen == "blind\n[kept.png is an image; this model is not shown images]"


async def test_the_cache_is_bounded_and_reads_again_what_it_dropped(tmp_path: Path) -> None:
    store = MediaStore(tmp_path / "media")
    refs = [await store.put(jpeg(seed=n), "image/jpeg", kind="image") for n in range(3)]
    one_image = len((await ImageData(store.root).load(asking("", refs[0]))).data[refs[0].sha256])
    images = ImageData(store.root, budget=one_image * 2)

    await images.load(asking("", *refs))
    store.path(refs[0]).unlink()  # the oldest was dropped from the cache: read again
    store.path(refs[2]).unlink()  # the newest is still cached

    loaded = await images.load(asking("", *refs))
    assert sorted(loaded.data) == sorted(r.sha256 for r in refs[1:])


async def test_anthropic_gets_image_blocks_before_the_text(
    fake_anthropic: FakeAnthropicServer, tmp_path: Path
) -> None:
    store = MediaStore(tmp_path / "media")
    photo = await store.put(jpeg(), "image/jpeg", kind="image", name="cat.jpg")
    model = AnthropicModel(anthropic_config(fake_anthropic, store.root))
    try:
        reply = await model.complete(ModelRequest(system="", messages=asking("what?", photo)))
        alone = await model.complete(ModelRequest(system="", messages=asking("", photo)))
    finally:
        await model.aclose()

    asked, only = fake_anthropic.requests
    blocks = asked["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert image_blocks(asked) == [("image/jpeg", jpeg())]
    assert [b["type"] for b in only["messages"][-1]["content"]] == ["image"]
    assert reply.content == "echo: what?"
    assert alone.content is not None  # accepted: no empty text block was sent


async def test_the_offline_model_names_the_images_it_got() -> None:
    photo = MediaRef("cd" * 32, "image/jpeg", "image", "cat.jpg", 23_570)

    reply = await OfflineModel().complete(ModelRequest(system="", messages=asking("hi", photo)))

    assert reply.content is not None
    assert reply.content.endswith("You sent 1 image: cat.jpg (image/jpeg, 23,570 bytes).")


async def _ignore(text: str) -> None:
    return None
