"""Griffe extension (mkdocs.yml): the API reference shows a parameter's default as its value.

The code names its defaults once, as module constants (`db_name: str = DEFAULT_DB_NAME`),
which the reference would show as the constant's name. Once the package is loaded, each
parameter default and attribute value that is the name of a module-level constant with a
literal value (a string, a number, a product of numbers) is shown as that value:
`"checkpointing_db"`, `64 * 1024 * 1024`.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


def _literal(value: object) -> bool:
    """Whether `value` (the constant's source) is a literal or arithmetic on literals."""
    try:
        tree = ast.parse(str(value), mode="eval")
    except SyntaxError:
        return False
    allowed = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)
    return all(isinstance(node, allowed) for node in ast.walk(tree))


class ConstantDefaults(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        self._visit(pkg, set())

    def _visit(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        for member in obj.members.values():
            if member.is_alias:
                continue
            if isinstance(member, griffe.Function):
                for parameter in member.parameters:
                    parameter.default = self._value(member, parameter.default)
            elif isinstance(member, griffe.Attribute):
                member.value = self._value(member, member.value)
            elif isinstance(member, griffe.Module | griffe.Class):
                self._visit(member, seen)

    @staticmethod
    def _value(owner: griffe.Object, value: Any) -> Any:
        """`value`, or the literal value of the module constant it names."""
        if not isinstance(value, griffe.ExprName):
            return value
        try:
            constant = owner.module[value.name].value
        except (KeyError, AttributeError, griffe.AliasResolutionError):
            return value
        return str(constant) if constant is not None and _literal(constant) else value
