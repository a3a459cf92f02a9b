"""Model strings checked when they are set, offline and without importing litellm.

A mistyped model (``opnai/gpt-4o``, ``gpt4o-mini``) would otherwise surface
only at the first run, seconds later, as litellm's own error. litellm ships
what it knows as files: its provider enum in ``types/utils.py``, provider and
model tables as JSON. This module reads those files from litellm's installed
folder (found with ``importlib.util.find_spec``, never imported: that takes
seconds) and answers in milliseconds. It only refuses what it can prove
unknown: when the files cannot be read it says nothing, and the call reports.

``provider/model`` is known when litellm has the provider; a bare name when
litellm's model table lists it. A refusal names the closest known names.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

from agent_kernel.core.config import DEMO_MODEL

_ENUM = re.compile(r"^class LlmProviders\(.*?\):\n(.*?)(?=^\S)", re.M | re.S)
_ENUM_VALUE = re.compile(r"^\s+[A-Z][A-Z0-9_]*\s*=\s*[\"']([^\"']+)[\"']", re.M)
_REPLICATE_ID = 64  # litellm sends ``name:<64-character version id>`` to replicate


@functools.cache
def _litellm_dir() -> Path | None:
    """litellm's installed folder, found without importing it."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _read_json(relative: str) -> Any:
    """A JSON file of litellm's, or None when it is missing or unreadable."""
    root = _litellm_dir()
    if root is None:
        return None
    try:
        return json.loads((root / relative).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@functools.cache
def known_providers() -> frozenset[str]:
    """Every provider prefix litellm routes; empty when its files cannot be read.

    The enum in ``types/utils.py`` is ``litellm.provider_list``; the JSON files
    add OpenAI-compatible providers configured by data alone.
    """
    root = _litellm_dir()
    if root is None:
        return frozenset()
    try:
        source = (root / "types" / "utils.py").read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    body = _ENUM.search(source)
    names = set(_ENUM_VALUE.findall(body.group(1))) if body else set()
    if not names:  # without the enum the list is partial: better to refuse nothing
        return frozenset()
    for relative, key in (("provider_endpoints_support_backup.json", "providers"),
                          ("llms/openai_like/providers.json", None)):
        data = _read_json(relative)
        data = data.get(key) if key and isinstance(data, dict) else data
        if isinstance(data, dict):
            names.update(str(name) for name in data)
    return frozenset(names)


@functools.cache
def known_models() -> dict[str, tuple[str, str]]:
    """litellm's model table: name → (provider, mode); empty when it cannot be read."""
    data = _read_json("model_prices_and_context_window_backup.json")
    if not isinstance(data, dict):
        return {}
    return {str(name): (str(info.get("litellm_provider", "")), str(info.get("mode", "")))
            for name, info in data.items()
            if isinstance(info, dict) and name != "sample_spec"}


def _runtime_providers() -> set[str]:
    """Custom providers registered with litellm in this process (only if it is loaded)."""
    litellm = sys.modules.get("litellm")
    items = getattr(litellm, "custom_provider_map", None) or []
    return {str(item.get("provider")) for item in items if isinstance(item, dict)}


def _one_of(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def check_model(model: str) -> str:
    """Return ``model`` if litellm can route it; raise ValueError naming close names if not.

    ``demo`` is always valid. Nothing is refused when litellm's files cannot be read.
    """
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"the model must be a non-empty string like openai/gpt-4o-mini or "
                         f"{DEMO_MODEL}, got {model!r}")
    if model == DEMO_MODEL:
        return model
    providers = known_providers()
    if not providers:
        return model
    prefix, slash, rest = model.partition("/")
    if slash and (prefix in providers or prefix in _runtime_providers()):
        if not rest.strip():
            raise ValueError(f"model '{model}' names no model after the provider; write "
                             f"{prefix}/MODEL")
        return model
    if not slash and model in providers:
        raise ValueError(f"'{model}' is a provider, not a model; write {model}/MODEL")
    if _listed(model):
        return model
    if slash:
        close = [prefix.lower()] if prefix.lower() in providers else \
            difflib.get_close_matches(prefix.lower(), sorted(providers), n=3, cutoff=0.75)
        hint = f"did you mean {_one_of(close)}?" if close else (
            "litellm's providers include openai, anthropic, gemini, mistral, ollama and "
            "openrouter (all of them: https://docs.litellm.ai/docs/providers)")
        raise ValueError(f"unknown provider '{prefix}' in model '{model}'; {hint}")
    raise ValueError(_unknown_bare(model, providers))


def _listed(model: str) -> bool:
    """Does litellm route this name without a known provider in front (its own lists)?"""
    models = known_models()
    if not models or model in models:
        return True
    if "ft:gpt-3.5-turbo" in model or "ft:gpt-4" in model or model.startswith("gpt-image"):
        return True
    if ":" in model and len(model.split(":")[1]) == _REPLICATE_ID:
        return True
    # a few short lists live in litellm's source (baseten's ids, together_ai's, ...)
    return any(f'"{model}"' in text for text in _model_list_sources())


@functools.cache
def _model_list_sources() -> tuple[str, ...]:
    """The text of litellm's modules that spell model lists out (read on a refusal only)."""
    root = _litellm_dir()
    texts = []
    for name in ("constants.py", "__init__.py"):
        try:
            texts.append((root / name).read_text(encoding="utf-8") if root else "")
        except OSError:
            continue
    return tuple(texts)


def _unknown_bare(model: str, providers: frozenset[str]) -> str:
    """Why a bare name is refused, with the closest chat models litellm lists."""
    chat = {name: provider for name, (provider, mode) in known_models().items()
            if mode in ("chat", "responses") and "/" not in name}
    close = difflib.get_close_matches(model, sorted(chat), n=3, cutoff=0.75)
    shown = [f"{chat[name]}/{name}" if chat[name] in providers else name for name in close]
    how = (f"name the provider too, as provider/model (e.g. openai/{model} for an "
           f"OpenAI-compatible server with api_base, or ollama/{model})")
    if shown:
        how = f"did you mean {_one_of(shown)}? Otherwise {how}"
    return f"unknown model '{model}': litellm cannot tell which provider serves it; {how}"


KEY_OF_PROVIDER = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                   "groq": "GROQ_API_KEY", "mistral": "MISTRAL_API_KEY",
                   "deepseek": "DEEPSEEK_API_KEY", "openrouter": "OPENROUTER_API_KEY",
                   "xai": "XAI_API_KEY"}
"""Providers whose one key the model string already names (litellm reads no other), so a
missing key is said before litellm's seconds-long import."""


def missing_key(model: str, api_key: str | None, api_base: str | None) -> str | None:
    """Which variable to set when ``model``'s provider needs a key that is not there, or
    None (a key given, a base URL of the person's own, or a provider we do not name)."""
    import os

    if api_key or api_base:
        return None
    prefix, slash, _rest = model.partition("/")
    provider = prefix if slash else known_models().get(model, ("", ""))[0]
    variable = KEY_OF_PROVIDER.get(provider)
    if variable is None or os.environ.get(variable):
        return None
    return (f"no API key for {provider}: set {variable} in the environment (or pass "
            "api_key), or switch to the offline demo model (`%agent_config --model demo` in "
            "a notebook, `--model demo` on the command line)")
