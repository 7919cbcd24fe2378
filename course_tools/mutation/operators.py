"""The mutation operators: small, systematic changes to one piece of reference code.

    mutations(code) -> [Mutation(kind, line, before, after, code), ...]

``code`` is a solution region's body (dedented Python). Each mutation changes one node of its
syntax tree and splices ``ast.unparse`` of the changed node over that node's own span, so the
rest of the region keeps its text and a mutant's diff is one expression or statement.

Operators (the usual ones, plus the mistakes array code invites):
    arithmetic      + - * / // % ** @ swapped for a neighbour; a - b -> b - a (non-commutative)
    comparison      < <= > >= == != is / is not, in / not in
    unary           -x -> x, not x -> x
    constant        n -> n + 1, n - 1; 0 <-> 1; True <-> False (strings are never mutated)
    slice           a bound or the step dropped
    axis            an ``axis=`` / ``axes=`` argument dropped; a tuple of axes reversed
    arguments       two positional arguments of a call swapped
    statement       a statement replaced by ``pass``; a ``.compact()`` call removed
    reduction       sum <-> mean, max <-> min, argmax <-> argmin, maximum <-> minimum
    dtype           float64 <-> float32, int64 -> int32, an ``.astype(...)`` call removed
Docstrings, f-strings and the messages of ``raise`` are left alone: changing a message is not
a mistake a hidden suite should grade.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

_ARITHMETIC = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult, ast.FloorDiv],
               ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult], ast.MatMult: [ast.Mult]}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Pow, ast.MatMult, ast.Mod)
_COMPARISON = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
               ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_NAME_SWAPS = {"sum": "mean", "mean": "sum", "max": "min", "min": "max", "argmax": "argmin", "argmin": "argmax",
               "amax": "amin", "amin": "amax", "maximum": "minimum", "minimum": "maximum",
               "float64": "float32", "float32": "float64", "int64": "int32"}
_AXIS_KEYWORDS = ("axis", "axes")


@dataclass(frozen=True)
class Mutation:
    kind: str     # the operator's family (the module docstring's first column)
    line: int     # 1-based line of ``code`` where the change starts
    before: str   # the changed node's text in the original
    after: str    # its text in the mutant
    code: str     # the whole mutated region


class _Sites(ast.NodeVisitor):
    """Every (kind, node, replacement node or text) of one region, in source order."""

    def __init__(self):
        self.sites: list[tuple[str, ast.AST, object]] = []
        self._quiet = 0  # inside a docstring, an f-string or a raise: no mutations

    def add(self, kind, node, replacement):
        if not self._quiet and hasattr(node, "lineno"):
            self.sites.append((kind, node, replacement))

    def _muted(self, node):
        self._quiet += 1
        self.generic_visit(node)
        self._quiet -= 1

    visit_JoinedStr = _muted

    def visit_Raise(self, node):
        self.add("statement", node, "pass")
        self._muted(node)

    def _statement(self, node):
        is_docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
            isinstance(node.value.value, str)
        if is_docstring:
            return
        self.add("statement", node, "pass")
        self.generic_visit(node)

    visit_Assign = visit_AnnAssign = visit_Return = visit_Expr = _statement

    def visit_AugAssign(self, node):
        for other in _ARITHMETIC.get(type(node.op), []):
            self.add("arithmetic", node, ast.AugAssign(node.target, other(), node.value))
        self._statement(node)

    def visit_BinOp(self, node):
        for other in _ARITHMETIC.get(type(node.op), []):
            self.add("arithmetic", node, ast.BinOp(node.left, other(), node.right))
        if isinstance(node.op, _NON_COMMUTATIVE):
            self.add("arithmetic", node, ast.BinOp(node.right, node.op, node.left))
        self.generic_visit(node)

    def visit_Compare(self, node):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARISON:
                ops = list(node.ops)
                ops[i] = _COMPARISON[type(op)]()
                self.add("comparison", node, ast.Compare(node.left, ops, node.comparators))
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, (ast.USub, ast.Not)):
            self.add("unary", node, node.operand)
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and \
                type(node.operand.value) in (int, float):
            self.add("constant", node, ast.UnaryOp(ast.USub(), ast.Constant(node.operand.value + 1)))
            return  # the operand's own +-1 would repeat these
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, bool):
            self.add("constant", node, ast.Constant(not value))
        elif type(value) in (int, float):
            for new in dict.fromkeys([value + 1, value - 1, 1 if value == 0 else 0 if value == 1 else None]):
                if new is not None and new != value:
                    self.add("constant", node, ast.Constant(type(value)(new)))

    def visit_Slice(self, node):
        for part in ("lower", "upper", "step"):
            if getattr(node, part) is not None:
                changed = copy.copy(node)
                setattr(changed, part, None)
                self.add("slice", node, changed)
        self.generic_visit(node)

    def visit_Call(self, node):
        for i, keyword in enumerate(node.keywords):
            if keyword.arg in _AXIS_KEYWORDS:
                self.add("axis", node, ast.Call(node.func, node.args, node.keywords[:i] + node.keywords[i + 1:]))
                if isinstance(keyword.value, ast.Tuple) and len(keyword.value.elts) > 1:
                    self.add("axis", keyword.value, ast.Tuple(keyword.value.elts[::-1], ast.Load()))
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if len(positional) == len(node.args):
            for i in range(len(node.args) - 1):
                if ast.dump(node.args[i]) != ast.dump(node.args[i + 1]):
                    args = list(node.args)
                    args[i], args[i + 1] = args[i + 1], args[i]
                    self.add("arguments", node, ast.Call(node.func, args, node.keywords))
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("compact", "astype") and \
                (node.func.attr == "astype" or not node.args):
            self.add("statement" if node.func.attr == "compact" else "dtype", node, node.func.value)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in _NAME_SWAPS:
            kind = "dtype" if "float" in node.attr or "int" in node.attr else "reduction"
            self.add(kind, node, ast.Attribute(node.value, _NAME_SWAPS[node.attr], node.ctx))
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in _NAME_SWAPS:
            kind = "dtype" if "float" in node.id or "int" in node.id else "reduction"
            self.add(kind, node, ast.Name(_NAME_SWAPS[node.id], node.ctx))


def _offset(lines: list[str], line: int, col: int) -> int:
    """The character offset in the joined text of (1-based line, UTF-8 byte column)."""
    before = sum(len(l) + 1 for l in lines[:line - 1])
    return before + len(lines[line - 1].encode()[:col].decode())


def mutations(code: str) -> list[Mutation]:
    """Every mutant of the region ``code`` (dedented Python), in source order, without duplicates
    and without mutants that do not parse. SyntaxError if ``code`` itself does not."""
    tree = ast.parse(code)
    finder = _Sites()
    finder.visit(tree)
    lines = code.split("\n")
    found, seen = [], {code}
    for kind, node, replacement in finder.sites:
        start = _offset(lines, node.lineno, node.col_offset)
        end = _offset(lines, node.end_lineno, node.end_col_offset)
        before = code[start:end]
        after = replacement if isinstance(replacement, str) else ast.unparse(ast.fix_missing_locations(replacement))
        if isinstance(node, ast.expr) and not isinstance(node, ast.Tuple) and " " in after.strip():
            after = f"({after})"  # a spliced expression keeps its precedence
        mutated = code[:start] + after + code[end:]
        if mutated in seen:
            continue
        try:
            ast.parse(mutated)
        except SyntaxError:
            continue
        seen.add(mutated)
        found.append(Mutation(kind, node.lineno, before, after, mutated))
    return found
