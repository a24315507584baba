"""The background review: after a reply, a fork of the session may save what it learned."""
