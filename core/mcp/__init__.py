"""Tools from MCP servers, on the official ``mcp`` SDK.

``servers`` holds what one configured server is (``ServerConfig``) and opens its
transport (stdio or Streamable HTTP); ``connection`` keeps one server connected in the
background, reconnecting with ``core.retry.Backoff``, and bounds every call;
``naming`` maps a server's tool names to the names the model sees
(``mcp_<server>_<tool>``); ``tool`` is one MCP tool as a ``core.tools.Tool``;
``results`` turns a tool result into the capped text the model reads; ``manager``
runs all servers and keeps their tools in the ``ToolRegistry``.
"""
