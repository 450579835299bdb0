"""Which device the model runs on: CUDA, then Apple MPS, then CPU; overridable."""

import os
import re

import torch

from .errors import InputError

DEVICE_ENV = "TRANSFORMER_DEVICE"
DEVICE_NAMES = "auto, cpu, cuda, cuda:N, mps"  # what pick_device accepts, exactly, lower case


def pick_device(requested: str | None = None) -> torch.device:
    """The requested device (argument, else $TRANSFORMER_DEVICE), else the best available one.

    Accepts exactly auto, cpu, cuda, cuda:N or mps. An unset or empty $TRANSFORMER_DEVICE
    means auto; an explicit empty argument is an error. Raises InputError for any other
    name, or for a device that is not available here.
    """
    where = ""
    if requested is None:
        requested, where = os.environ.get(DEVICE_ENV) or "auto", f" (from ${DEVICE_ENV})"
    if not isinstance(requested, str) or not re.fullmatch(r"auto|cpu|cuda(:[0-9]+)?|mps", requested):
        # Checked here, not left to torch.device: it accepts names we cannot run on ("tpu",
        # "meta") and raises a RuntimeError for others, which the tools would show as a traceback.
        raise InputError(f"unknown device {requested!r}{where}: use one of {DEVICE_NAMES}")
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    dev = torch.device(requested)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {requested!r}{where} asked for, but CUDA is not available here "
                         f"(use one of {DEVICE_NAMES}; auto picks the best one there is)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        n = torch.cuda.device_count()
        raise InputError(f"device {requested!r}{where} asked for, but there are only {n} CUDA devices here "
                         f"(cuda:0 to cuda:{n - 1})")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"device {requested!r}{where} asked for, but MPS is not available here "
                         f"(use one of {DEVICE_NAMES}; auto picks the best one there is)")
    return dev


def describe(device: torch.device) -> str:
    """A human-readable name, e.g. 'cuda (NVIDIA H200)' or 'cpu (2 threads)'."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return device.type
