"""Deterministic offline replays."""
