"""Views render a run's events; the runtime never draws anything itself.

``text`` writes plain text (terminals, the CLI, headless runs), ``terminal``
reads answers typed at a terminal (the CLI and terminal IPython), ``mime``
builds a static HTML/text transcript that needs no kernel, and ``widgets``
(the only module importing ipywidgets) is the live view in a notebook.
Import the submodules directly; this package imports none of them eagerly so
``%load_ext agent_kernel`` stays fast.
"""
