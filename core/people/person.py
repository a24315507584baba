"""A person as the gateway knows them: ``platform:user_id``.

User ids are not linked across platforms (an equal id elsewhere may be someone else), so
a person is always one platform's user id.
"""

from __future__ import annotations

import hashlib

from core.errors import ChatgateError
from core.record import record


@record
class Person:
    platform: str
    user_id: str

    @classmethod
    def parse(cls, text: str) -> Person:
        """``"webhook:alice"`` as a person; a ``ChatgateError`` for anything else."""
        platform, sep, user_id = text.strip().partition(":")
        if not sep or not platform or not user_id:
            raise ChatgateError(f"a person is platform:user_id (e.g. webhook:alice), not {text!r}")
        return cls(platform.lower(), user_id)

    def __str__(self) -> str:
        return f"{self.platform}:{self.user_id}"

    def pseudonym(self, salt: bytes) -> str:
        """A salted hash that stands for the person once they are forgotten (the audit's
        ``person_forgotten`` event): the same salt gives the same hash, the id is not kept."""
        return hashlib.sha256(salt + str(self).encode()).hexdigest()
