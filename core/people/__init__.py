"""One person's data across the home: what is kept about them, exported, forgotten."""
