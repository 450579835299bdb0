"""The unit tier: tiny models only, so one torch thread per test.

A tiny model gains nothing from a second thread, which only waits for the first: on a busy machine for long (25x was
measured in tests/unit/test_marian.py), and under `-n 2` two workers' second threads would fight over the same two
cores. tests/conftest.py's torch_threads puts the count back after each test.
"""
import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)
