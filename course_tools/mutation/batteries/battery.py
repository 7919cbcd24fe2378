"""Battery: what one task's equivalence battery is (see the package's docstring); its own module
so that the per-assignment modules, which the package imports, never import the package back."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Battery:
    run: Callable[[dict, Any], tuple]
    cases: Any = None            # a Hypothesis strategy of cases (None: the fixed ones only)
    fixed: tuple = ()            # cases tried first, in order
    cells: tuple[str, ...] = ()  # grade ids of the notebook cells to run after the setup cell
    names: dict | Callable = field(default_factory=dict)  # set in the namespace (or namespace -> dict):
    #   in place of cells too costly to run, or smaller sizes
    select: Callable | None = None  # mutant -> (its fixed cases, whether to generate more): by region
