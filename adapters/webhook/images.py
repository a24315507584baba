"""Images sent with a webhook message: decoded or fetched, then saved like any download.

Each image of ``attachments`` is saved under the home's cache
(``adapters.attachments.save_attachment``, named by its content hash, so a client's
retry writes the same file) before the message is stored: the inbox keeps only a path,
and the intake shows the image to a vision model at turn time, as it does a photo from
a chat platform. An image that cannot be fetched is a line in the message's text, as a
download that failed is on the other platforms.

A ``url`` is fetched by the gateway (``fetch_image``): http and https only, every
redirect checked again (at most ``MAX_REDIRECTS``, never to another scheme), the whole
fetch within ``FETCH_SECONDS``, at most ``MAX_IMAGE_BYTES``, no proxy from the
environment. Unless ``webhook.fetch_private_urls`` is on, a host that resolves to a
private, loopback, link-local or otherwise non-public address is refused (a request
forged through the gateway could otherwise read services only it can reach), and the
connection goes to the address that was checked, so a second DNS answer cannot swap it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import ipaddress
import logging
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.attachments import save_attachment
from adapters.webhook.schema import MAX_IMAGE_BYTES, WebhookAttachment
from core.media.images import Refused
from core.messages import Attachment, InboundMessage
from core.record import record

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

FETCH_SECONDS = 10.0
MAX_REDIRECTS = 3
SUFFIXES = {"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp"}
PRIVATE = "it points at a private, loopback or link-local address (webhook.fetch_private_urls)"


@record
class _Redirect:
    location: str


async def with_images(
    msg: InboundMessage,
    images: Sequence[WebhookAttachment],
    folder: Path,
    *,
    fetch_private: bool,
) -> InboundMessage:
    """``msg`` carrying ``images``, each saved under ``folder`` and named in its text."""
    attachments: list[Attachment] = []
    notes: list[str] = []
    for number, image in enumerate(images, 1):
        name = f"image-{number}{SUFFIXES[image.mime]}"
        data = await _image_bytes(image, fetch_private=fetch_private)
        if isinstance(data, Refused):
            log.warning("webhook: image %d not fetched: %s", number, data.reason)
            notes.append(f"[{name} from {_shown(image.url)} could not be fetched: {data.reason}]")
            continue
        unique = hashlib.sha256(data).hexdigest()[:16]
        attachment, note = await save_attachment(folder, unique, name, image.mime, data, "image")
        attachments.append(attachment)
        notes.append(note)
    text = "\n".join(part for part in (msg.text, *notes) if part)
    return dataclasses.replace(msg, text=text, attachments=tuple(attachments))


async def _image_bytes(image: WebhookAttachment, *, fetch_private: bool) -> bytes | Refused:
    if image.data_base64:
        return base64.b64decode(image.data_base64, validate=True)  # the schema checked it
    return await fetch_image(image.url, fetch_private=fetch_private)


def _shown(url: str) -> str:
    """``url`` without its query (signed URLs carry their tokens there)."""
    return url.split("?", 1)[0].split("#", 1)[0]


async def fetch_image(url: str, *, fetch_private: bool = False) -> bytes | Refused:
    """The body ``url`` answers (see the module docstring), or why there is none."""
    import httpx  # with the first image URL: a gateway without one never needs it

    try:
        async with (
            asyncio.timeout(FETCH_SECONDS),
            httpx.AsyncClient(trust_env=False, timeout=FETCH_SECONDS) as client,
        ):
            target = httpx.URL(url)
            for _ in range(MAX_REDIRECTS + 1):
                got = await _get(client, target, fetch_private=fetch_private)
                if not isinstance(got, _Redirect):
                    return got
                target = target.join(got.location)
    except TimeoutError:
        return Refused(f"no answer within {FETCH_SECONDS:g} seconds")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return Refused(f"the request failed ({type(exc).__name__})")
    return Refused(f"more than {MAX_REDIRECTS} redirects")


async def _get(
    client: httpx.AsyncClient, url: httpx.URL, *, fetch_private: bool
) -> bytes | Refused | _Redirect:
    """One request: the body, why there is none, or where it redirects."""
    if url.scheme not in ("http", "https") or not url.raw_host:
        return Refused("only http and https URLs are fetched")
    request_url, headers, extensions = url, {}, {}
    if not fetch_private:
        # To the address checked, naming the host for HTTP and for TLS (its certificate
        # is still checked against the host's name).
        host = url.raw_host.decode("ascii")
        address = await public_address(host, url.port or (443 if url.scheme == "https" else 80))
        if isinstance(address, Refused):
            return address
        request_url = url.copy_with(host=address)
        headers = {"Host": url.netloc.decode("ascii")}
        if url.scheme == "https":
            extensions = {"sni_hostname": host}
    async with client.stream("GET", request_url, headers=headers, extensions=extensions) as answer:
        if answer.is_redirect:
            return _Redirect(answer.headers["location"])
        if answer.status_code != 200:
            return Refused(f"the server answered {answer.status_code}")
        return await _capped(answer)


async def _capped(answer: httpx.Response) -> bytes | Refused:
    too_big = Refused(f"it is larger than {MAX_IMAGE_BYTES:,} bytes")
    declared = answer.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_IMAGE_BYTES:
        return too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in answer.aiter_bytes():
        size += len(chunk)
        if size > MAX_IMAGE_BYTES:
            return too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def public_address(host: str, port: int) -> str | Refused:
    """An address of ``host`` to connect to, when every address it has is public."""
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return Refused(f"the host {host} is not known")
    addresses = [_address(str(info[4][0])) for info in found]
    if not addresses or not all(_public(address) for address in addresses):
        return Refused(PRIVATE)
    return str(addresses[0])


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    address = ipaddress.ip_address(text.split("%", 1)[0])  # an IPv6 scope is no part of it
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return address


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_global and not address.is_multicast
