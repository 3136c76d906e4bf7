"""A helper module beside the builder: the builder imports it as its own folder's module."""

MEMORY_PROPORTIONS = [0.15, 0.25]
