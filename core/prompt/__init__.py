"""Building the session's frozen system prompt."""
