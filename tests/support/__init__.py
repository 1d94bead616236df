"""Test and benchmark infrastructure that is not part of the installed package."""
