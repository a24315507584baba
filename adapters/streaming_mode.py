"""``streaming: auto | off``, the setting each chat platform's section has.

YAML 1.1 (PyYAML) reads a bare ``off`` as the boolean false, and ``on`` as true, so
``streaming: off`` written in config.yaml arrives as ``False``: it means ``off`` here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator


def _from_yaml(value: object) -> object:
    if value is False:
        return "off"
    if value is True:
        return "auto"
    return value


StreamingMode = Annotated[Literal["auto", "off"], BeforeValidator(_from_yaml)]
