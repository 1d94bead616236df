"""tiap: audit how conversational-memory benchmarks give retrieval credit."""

__version__ = "0.1.0"
