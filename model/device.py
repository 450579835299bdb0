"""Which device the model runs on: CUDA, then Apple MPS, then CPU; overridable."""

import os

import torch

DEVICE_ENV = "TRANSFORMER_DEVICE"


def pick_device(requested: str | None = None) -> torch.device:
    """The requested device (argument, else $TRANSFORMER_DEVICE), else the best available one."""
    requested = requested or os.environ.get(DEVICE_ENV) or "auto"
    if requested != "auto":
        dev = torch.device(requested)  # raises on a malformed name
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {requested!r} asked for, but CUDA is not available here")
        if dev.type == "mps" and not torch.backends.mps.is_available():
            raise ValueError(f"device {requested!r} asked for, but MPS is not available here")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def describe(device: torch.device) -> str:
    """A human-readable name, e.g. 'cuda (NVIDIA H200)' or 'cpu (2 threads)'."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return device.type
