"""Import a memory system's exports (memories with source links, search results) as a bundle.

A mapping file (:mod:`tiap.traces.imports.mapping`; built in: ``mem0``,
``jsonl``) says which fields hold what; :func:`import_bundle` joins the exports
with a benchmark read by its adapter into a bundle with one store per system
and one run per search export, counting every link that does not resolve.
"""

from tiap.traces.imports.assemble import SystemExport, import_bundle
from tiap.traces.imports.mapping import ImportMapping, builtin_mappings, load_mapping

__all__ = ["ImportMapping", "SystemExport", "builtin_mappings", "import_bundle", "load_mapping"]
