"""Rescoring core: scoring targets, metrics@k, shared subsets, bootstrap, flips, reports."""
