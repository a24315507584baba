"""One person's rows in the SessionDB (``SessionDB.people``) and retention."""
