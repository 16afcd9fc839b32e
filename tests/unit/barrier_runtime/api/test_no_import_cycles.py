"""The user API's modules import each other without a cycle (type-checking imports count).

The streams, the event-time steps and the window fields see their dataflow through the
``building.StepGraph`` protocol, and the event-time steps are generic in the stream types
they return, so ``dataflow -> streams -> keyed_time -> window_fields`` never leads back.
"""

from __future__ import annotations

import grimp


def test_no_module_of_the_user_api_imports_itself_back() -> None:
    graph = grimp.build_graph("barrier_runtime")
    api = sorted(m for m in graph.modules if m.startswith("barrier_runtime.api"))
    cycles = sorted(
        (module, imported)
        for module in api
        for imported in graph.find_modules_directly_imported_by(module)
        if imported in api and graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []
