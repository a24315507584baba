"""Approvals in the chat: some tool calls wait for a person's yes before they run.

``rules`` says which calls ask (``tools.require_approval`` globs, and tools marked
destructive); ``service`` pauses the turn (durably, with its work so far), waits for a
decision or the timeout and resumes; ``commands`` are ``/approve`` and ``/deny``;
``text`` holds every line a person or the model reads about an approval.
"""
