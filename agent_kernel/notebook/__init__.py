"""Everything that imports IPython, ipywidgets or comm: the magics, live outputs, the
frontend channel, the triggers panel and the team board. Nothing below imports it."""
