"""The two kinds of user-facing failure the library raises at its public entry points."""


class InputError(ValueError):
    """A sentence (or option) that the model cannot work with; the message says why."""


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt, unsafe or does not fit its config; the message says what to do."""
