"""Files out: the ``send_file`` tool sends a file from the home's ``outbox/`` folder to
the chat, with the turn's reply.

``folder`` finds and reads a file the model names, refusing anything outside the
folder; ``tool`` is the tool, which copies the file into the media store and attaches
it to its result (``core.tools.ToolContext.attach``), so the turn's last reply carries
it through the outbox like its text.
"""
