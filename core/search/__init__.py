"""Full-text search over stored messages: query sanitizing and the search engine."""
