"""Finding stored interactions: list and search them, delete what a filter matches (our extension: Google's
API has neither)."""
