"""The agent loop: a run's turns, its tool calls (checked, approved, timed, recorded),
questions to a person, the conversation against the model's window, and the models
behind it. Imports only ``core``; it knows no feature, takes its tool sets and
permission hook from whoever builds it."""
