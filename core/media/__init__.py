"""Media: files a person sends (images, voice notes, documents) and files sent back.

``refs`` names a stored file (``MediaRef``); ``store`` keeps each file's bytes once
under the home's ``media/`` folder, addressed by content hash; ``intake`` turns a
message's attachments into what a turn stores and sends to the model.
"""
