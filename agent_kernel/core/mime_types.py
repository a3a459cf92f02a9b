"""The MIME types of our outputs, named once: every floor that writes or reads them
(the tools that read cells, the views that draw runs and the board, the notebook's
live controls) imports them from here; ``labextension/src`` spells the same strings."""

RUN_MIME = "application/vnd.agent-kernel.run.v1+json"
"""A run's saved form (``views/run_record``)."""
BOARD_MIME = "application/vnd.agent-kernel.board.v1+json"
"""The live board for our JupyterLab extension: ``{"version": 1, "state": snapshot,
"controls": "extension" | "none", "rows": [{"id", "op", "label"}]}``; it draws the
state with each row's Stop or Cancel in the row (labextension/src/board.ts)."""
CONTROLS_MIME = "application/vnd.agent-kernel.controls.v1+json"
"""A live view's controls (the board's and the triggers panel's buttons)."""
