"""Memory providers shipped in the tree; ``core.memory.provider.BUILTIN_PROVIDERS`` names them."""
