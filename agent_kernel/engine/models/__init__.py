"""The models a run talks to, behind one seam: :class:`Model`'s ``async complete``.

:class:`LitellmModel` for every provider, :class:`DemoModel` for the offline ``demo``,
:class:`FunctionModel` for a test or a script. :func:`resolve` turns a model's name
into one, once, when an agent is given a name. Importing this package imports no
litellm: that happens on a litellm model's first turn.
"""

from __future__ import annotations

from agent_kernel.core.config import DEMO_MODEL
from agent_kernel.engine.models.base import Model, ModelTurn, ToolCallRequest
from agent_kernel.engine.models.demo_model import DemoModel
from agent_kernel.engine.models.function import FunctionModel, ModelRequest, call
from agent_kernel.engine.models.llm import LitellmModel
from agent_kernel.engine.models.names import check_model

__all__ = ["DemoModel", "FunctionModel", "LitellmModel", "Model", "ModelRequest", "ModelTurn",
           "ToolCallRequest", "call", "resolve"]


def resolve(model: str | Model) -> Model:
    """``model`` itself, or the model its name names: ``demo`` → :class:`DemoModel`, any
    other → :class:`LitellmModel` once :func:`~.names.check_model` accepts it (a
    ValueError naming close names if not)."""
    if isinstance(model, Model):
        return model
    if check_model(model) == DEMO_MODEL:
        return DemoModel()
    return LitellmModel(model)
