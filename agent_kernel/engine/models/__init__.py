"""The models a run talks to, behind one seam: :class:`Model`'s ``async complete``.

:class:`LitellmModel` for every provider, :class:`DemoModel` for the offline ``demo``,
:class:`FunctionModel` for a test or a script. :func:`resolve` turns a model's name
into one, once, when an agent is given a name. Importing this package imports no
litellm: that happens on a litellm model's first turn. Nor does it import the models
themselves (the demo's answers, the litellm seam): ``%load_ext`` reaches this package
through :mod:`.base` and uses none of them, so each is imported on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from agent_kernel.core.config import DEMO_MODEL
from agent_kernel.engine.models.base import Model, ModelTurn, ToolCallRequest

if TYPE_CHECKING:
    from agent_kernel.engine.models.demo_model import DemoModel
    from agent_kernel.engine.models.function import FunctionModel, ModelRequest, call
    from agent_kernel.engine.models.llm import LitellmModel
    from agent_kernel.engine.models.names import check_model as check_model

__all__ = ["DemoModel", "FunctionModel", "LitellmModel", "Model", "ModelRequest", "ModelTurn",
           "ToolCallRequest", "call", "resolve"]

_LAZY = {"DemoModel": "demo_model", "FunctionModel": "function", "ModelRequest": "function",
         "call": "function", "LitellmModel": "llm", "check_model": "names"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def resolve(model: str | Model) -> Model:
    """``model`` itself, or the model its name names: ``demo`` → :class:`DemoModel`, any
    other → :class:`LitellmModel` once :func:`~.names.check_model` accepts it (a
    ValueError naming close names if not)."""
    from agent_kernel.engine.models.names import check_model as check_model

    if isinstance(model, Model):
        return model
    if check_model(model) == DEMO_MODEL:
        from agent_kernel.engine.models.demo_model import DemoModel

        return DemoModel()
    from agent_kernel.engine.models.llm import LitellmModel

    return LitellmModel(model)
