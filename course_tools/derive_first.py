"""Derive first (source/README.md convention 7): no task's own code in what a student reads before its check.

A formula, a recipe or the exact calls for what a task asks may come *after* the task's check
(the graded cell whose ``grade_id`` is the task: the worked answer) or inside a collapsed
``<details>`` hint the student opens on purpose. ``hits`` looks for the task's own code in the
reading before that check: every markdown cell with its ``<details>...</details>`` blocks cut out,
and the source of every code cell (the release's solution cells are stubs there, so a stub's
docstring is reading too).

The task's own code is a set of *distinctive expressions* of its solution (its course_lib
regions, or a notebook task's solution cell): ``ast.unparse`` normalises spacing, parentheses
and quotes; ``return`` is dropped; reading and expressions are compared with all whitespace
removed (``squeeze``), so ``a.maximum( 0 )`` in a markdown table is ``a.maximum(0)``.
Most expressions of a solution mean nothing on their own, so one counts only when:

* it **does work**: at least one call, subscript with a computed index or slice, arithmetic,
  comparison or comprehension. A name, a constant, an attribute (``self.scalar``) or a plain
  lookup (``r["losses"]``, ``node.inputs[0]``) names a thing the text must be free to name.
* it is **at least 7 characters** squeezed. The shortest answers that give a task away are
  returned method calls, ``a.log()`` and ``a.exp()`` (7); below that only ``len(x)``-sized
  fragments remain, which any text contains.
* it is **not plumbing**: a builtin or array-constructor call on plain arguments
  (``range(ndim)``, ``tuple(shape)``, ``np.zeros(shape)``, ``np.random.default_rng(seed)``) or a
  comparison of plain operands (``axes is None``: naming a case).
* a **line** (a returned value, an assignment, an expression statement) counts with one
  operation, but a call on plain arguments that is *not returned* (``seed_everything(seed)``,
  ``mask = _first_max_mask(a, k, s, p)``, ``NormalDist().inv_cdf``) picks up a tool that the text
  names on purpose; the work is what the solution does with it. Returned, such a call is the
  whole answer (``return a.maximum(0)``). A tuple of two or more entries as an argument
  (``a.pad(((0, 0), (p, p), (p, p), (0, 0)))``) is worked out, not named: such a call counts.
* a **part** of a line counts with two operations or more (``abs(lhs - rhs)``,
  ``a_pad[i, :, rows, cols]``); one operation on plain operands (``lhs - rhs``, ``alpha / 2``)
  names a quantity that prose and math must be free to name.
* the release does not **give** it anyway: an expression in the code of the task's own release
  cell (its signature, the checks a stub keeps) or of the release's course_lib (reference code
  the student may read) is not the task's answer (the docstrings are left out of that: a
  docstring that states the code is a leak).

What this cannot see: prose and mathematics that describe a recipe in words ("the stride
changes sign") and written answers' model answers. Those stay with a reader.
"""
from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

import nbformat

MIN_CHARS = 7
DETAILS = re.compile(r"<details\b.*?</details\s*>", re.DOTALL | re.IGNORECASE)
_SPACE = re.compile(r"\s+")
GENERIC_CALLS = {
    "len", "range", "tuple", "list", "dict", "set", "int", "float", "str", "bool", "enumerate", "zip", "isinstance",
    "sorted", "reversed", "print", "type", "super", "getattr", "hasattr", "iter", "next", "abs", "min", "max",
    "sum", "all", "any", "map", "repr", "round",
    "np.asarray", "np.array", "np.zeros", "np.ones", "np.empty", "np.arange", "np.float64", "np.float32",
    "np.random.default_rng", "nd.array", "math.prod", "math.sqrt",
}
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try, ast.Match)
_OPS = (ast.Call, ast.Subscript, ast.Slice, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.ListComp, ast.GeneratorExp,
        ast.SetComp, ast.DictComp, ast.IfExp)


def squeeze(text: str) -> str:
    """``text`` with all whitespace removed and double quotes made single (``ast.unparse``'s):
    the form expressions and reading are compared in."""
    return _SPACE.sub("", text).replace('"', "'")


def _is_plain(node: ast.AST) -> bool:
    """Names a thing: a name, a constant or arithmetic on constants (``2.0 ** 24``), an attribute
    chain, a subscript of those by plain keys (``r["losses"]``), or a tuple/list of those."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return _is_plain(node.value)
    if isinstance(node, ast.Subscript):
        return _is_plain(node.value) and _is_plain(node.slice)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_plain(e) for e in node.elts)
    if isinstance(node, ast.Starred):
        return _is_plain(node.value)
    if isinstance(node, (ast.UnaryOp, ast.BinOp)):
        return not any(isinstance(n, ast.Name) for n in ast.walk(node))
    return False


def _arguments(call: ast.Call) -> list[ast.AST]:
    return [*call.args, *(k.value for k in call.keywords)]


def _is_generic(node: ast.AST) -> bool:
    """Plumbing: a builtin or array-constructor call on plain arguments (``range(ndim)``,
    ``np.zeros(shape)``), or a comparison of plain operands (``axes is None``: naming a case)."""
    if isinstance(node, ast.Call):
        return ast.unparse(node.func) in GENERIC_CALLS and all(_is_plain(a) for a in _arguments(node))
    if isinstance(node, ast.Compare):
        return all(_is_plain(x) for x in [node.left, *node.comparators])
    if isinstance(node, ast.UnaryOp):
        return _is_generic(node.operand)  # -len(x) is len(x)
    return False


def _names_a_tool(node: ast.AST) -> bool:
    """A call on plain arguments, or an attribute of one (``model.parameters()``,
    ``seed_everything(seed)``, ``NormalDist().inv_cdf``, ``np.finfo(np.float64).tiny``)."""
    if isinstance(node, ast.Attribute):
        return _names_a_tool(node.value)
    return isinstance(node, ast.Call) and all(_is_plain(a) and not _is_structure(a) for a in _arguments(node))


def _is_structure(node: ast.AST) -> bool:
    """A tuple or list of two or more entries (``((0, 0), (p, p), (p, p), (0, 0))``, an axes order):
    an argument the student has to work out, so a call given it is more than a tool's name."""
    return isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) >= 2


def _operations(node: ast.AST) -> int:
    """The operations in ``node``, less those inside plain pieces (``r["losses"]``, ``2.0 ** 24``)."""
    return sum(isinstance(n, _OPS) and not _is_plain(n) for n in ast.walk(node))


def _unparsed(node: ast.AST) -> str:
    return squeeze(ast.unparse(node))


@functools.lru_cache(maxsize=None)
def given_code(code: str) -> str:
    """What ``code`` (a release cell, or a file of the release's course_lib) gives as code: its
    simple statements unparsed and squeezed, one a line, docstrings left out, and each ``def``'s
    ``name(args)`` (so a call that repeats a given signature, ``mixed_step(model, trainer, ...)``,
    is given). Code that is not Python (a cell with a shell escape) gives nothing."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(f"{node.name}({ast.unparse(node.args)})")
        elif isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and not (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            out.append(ast.unparse(node))
        elif isinstance(node, (ast.If, ast.While)):
            out.append(ast.unparse(node.test))
        elif isinstance(node, ast.For):
            out.append(f"{ast.unparse(node.target)} in {ast.unparse(node.iter)}")
    return "\n".join(squeeze(line) for line in out)


def distinctive_expressions(code: str) -> set[str]:
    """The squeezed expressions of ``code`` (a solution region's body) that pass the module's rules.

    *Lines*: a ``return``'s value, an assignment (whole, and its value), an expression statement.
    A line counts with one operation (``a.log()``, ``a ** self.scalar``), except a call on plain
    arguments that is not returned: ``mask = _first_max_mask(a, k, s, p)``,
    ``seed_everything(seed)`` are steps that pick up a tool the text names on purpose (the work is
    what the solution does with it); returned, the call is the whole answer.
    *Parts*: any expression inside a line counts with two operations or more (``abs(lhs - rhs)``,
    ``a_pad[i, :, rows, cols]``): one operation on plain operands names a quantity (``lhs - rhs``,
    ``node.inputs[0]``, ``alpha / 2``) that prose and math must be free to name."""
    lines, returned, parts = [], set(), []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Return) and node.value is not None:
            lines.append(node.value)
            returned.add(id(node.value))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            lines += [node, node.value]
        elif isinstance(node, ast.Expr):
            lines.append(node.value)
        elif isinstance(node, ast.expr):
            parts.append(node)
    found = set()
    for node in lines:
        value = getattr(node, "value", node) if isinstance(node, ast.stmt) else node
        if _is_plain(value) or _is_generic(value) or _operations(value) < 1:
            continue
        if _names_a_tool(value) and id(value) not in returned:
            continue
        found.add(_unparsed(node))
    for node in parts:
        if _operations(node) >= 2 and not _is_generic(node) and any(isinstance(n, ast.Name) for n in ast.walk(node)):
            found.add(_unparsed(node))
    return {text for text in found if len(text) >= MIN_CHARS}


@dataclass(frozen=True)
class Hit:
    """One of ``task``'s expressions in a cell read before the task's check."""
    task: str
    cell: str          # the reading cell's nbgrader grade_id, else its cell id
    index: int         # its position in the notebook
    expression: str    # squeezed

    def __str__(self) -> str:
        return f"task {self.task}: cell #{self.index} {self.cell} shows `{self.expression}` before the task's check"


def reading(cell) -> str:
    """What the student reads of one release cell, squeezed: a markdown cell less its <details>
    blocks, a code cell's source; nothing of a raw cell."""
    if cell.cell_type == "markdown":
        return squeeze(DETAILS.sub("", cell.source))
    return squeeze(cell.source) if cell.cell_type == "code" else ""


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def check_index(notebook, task: str) -> int:
    """The index of the task's graded cell (grade_id == task); KeyError naming the task if absent."""
    for i, cell in enumerate(notebook.cells):
        if _grade_id(cell) == task and cell.metadata.get("nbgrader", {}).get("grade"):
            return i
    raise KeyError(f"no graded cell with grade_id {task!r}")


def hits(notebook, expressions: dict[str, set[str]]) -> list[Hit]:
    """Each (task, cell, expression) where one of the task's expressions appears in the reading
    before the task's check, in task then cell order. ``expressions``: {task: squeezed expressions}."""
    found = []
    for task, wanted in expressions.items():
        for i, cell in enumerate(notebook.cells[:check_index(notebook, task)]):
            text = reading(cell)
            found += [Hit(task, _grade_id(cell) or cell.get("id", "?"), i, e) for e in sorted(wanted) if e in text]
    return found


def _solution_cell(notebook, task: str):
    """The task's solution code cell (grade_id ``<task>_code``), or None (a written answer)."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") \
                and _grade_id(cell) == f"{task}_code":
            return cell
    return None


def task_expressions(assignment: str, release=None) -> dict[str, set[str]]:
    """{task: distinctive expressions} of every code task of ``assignment``: a library task's from
    its course_lib regions, a notebook task's from its source solution cell, less what the release
    (``release``, default the committed one) gives anyway (see the module's last rule)."""
    from course_lib import tasks

    from .paths import RELEASE, SOURCE
    from .regions import library_regions, notebook_region_bodies

    source = nbformat.read(str(SOURCE / assignment / f"{assignment}.ipynb"), as_version=4)
    release = release or read_release(assignment)
    given = [given_code(path.read_text()) for path in sorted((RELEASE / assignment / "course_lib").rglob("*.py"))]
    regions = library_regions()
    bodies = {task: [r.body for r in regions[task]] for task in tasks.LIBRARY_TASKS[assignment]}
    for task in tasks.NOTEBOOK_TASKS[assignment]:
        cell = _solution_cell(source, task)
        if cell is not None:
            bodies[task] = notebook_region_bodies(cell.source, where=f"{assignment} {task}_code")
    out = {}
    for task, codes in bodies.items():
        stub = _solution_cell(release, task)
        texts = [*given, given_code(stub.source) if stub is not None else ""]
        out[task] = {e for code in codes for e in distinctive_expressions(code) if not any(e in t for t in texts)}
    return out


def read_release(assignment: str):
    """The committed student release of ``assignment`` (assignments/<id>/<id>.ipynb)."""
    from .paths import RELEASE

    return nbformat.read(str(RELEASE / assignment / f"{assignment}.ipynb"), as_version=4)


def release_hits(assignment: str) -> list[Hit]:
    """``hits`` of the committed release of ``assignment`` for its tasks' expressions."""
    release = read_release(assignment)
    return hits(release, task_expressions(assignment, release))
