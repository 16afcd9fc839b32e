"""The task engine's modules import each other without a cycle (type-checking imports count).

The chain and the subtask see their attempt through narrow protocols
(``ChainServices``, ``SubtaskServices``), so ``attempt -> subtask -> chain`` never
leads back to ``attempt``.
"""

from __future__ import annotations

import grimp


def test_no_module_of_the_task_engine_imports_itself_back() -> None:
    graph = grimp.build_graph("barrier_runtime")
    task = sorted(m for m in graph.modules if m.startswith("barrier_runtime.task"))
    cycles = sorted(
        (module, imported)
        for module in task
        for imported in graph.find_modules_directly_imported_by(module)
        if imported in task and graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []
