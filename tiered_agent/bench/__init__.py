"""Replay benchmark: importers, replay through context policies, metrics and reports."""
