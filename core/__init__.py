"""Platform-free agent core: messages, sessions, turns, model clients and the SessionDB."""
