"""Usage as people read it: one line per scope and period (``/usage``, ``chatgate usage``)."""

from __future__ import annotations

from core.store.usage import Total


def tokens_line(total: Total | None) -> str:
    """``3 calls, 1,234 tokens (1,000 in, 234 out; cache 100 read, 0 written), cost 0.0012``."""
    if total is None or total.calls == 0:
        return "nothing used"
    tokens = total.input_tokens + total.output_tokens
    calls = "1 call" if total.calls == 1 else f"{total.calls:,} calls"
    parts = (
        f"{calls}, {tokens:,} tokens ({total.input_tokens:,} in, {total.output_tokens:,} out; "
        f"cache {total.cache_read_tokens:,} read, {total.cache_write_tokens:,} written)"
    )
    return parts if total.cost is None else f"{parts}, cost {total.cost:.4f}"
