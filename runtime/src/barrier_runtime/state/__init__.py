"""Keyed state: key groups, stable hashing, snapshot and restore across parallelisms."""
