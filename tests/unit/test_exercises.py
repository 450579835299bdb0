"""The exercises (lesson/exercises.py) and the worksheet (lesson/worksheet.py): every answer is the model's own, found
again here by a second, literal route; every link opens a page state the page reads without a note; the worksheet
holds no script and links only to the server given (docs/contract.md, "Exercises and the worksheet")."""

import pytest

from conftest import assert_error_line
from lesson import worksheet
from model import cli
from model.errors import InputError


@pytest.mark.parametrize("server, says", [
    ("http://localhost:99999", "the port must be a number from 1 to 65535, not '99999'"),
    ("http://localhost:0", "the port must be a number from 1 to 65535, not '0'"),
    ("http://--.-", "the host '--.-' is not a DNS name"),
])
def test_a_server_whose_port_or_host_cannot_be_is_refused(server, says, call, tmp_path):
    status, out, err = call(worksheet.main, "--out", tmp_path / "x.html", "--server", server)
    assert_error_line(status, err, f"--server {server!r}: {says}")
    assert out == "" and not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("server", ["http://localhost:8501", "https://class.example.org/app", "http://10.0.0.5:80"])
def test_a_server_by_name_or_ipv4_with_a_port_or_a_path_is_taken(server, call, tmp_path, monkeypatch):
    def stop(args):  # past every check of the command line: the model is not needed to know
        raise InputError("checked")

    monkeypatch.setattr(cli, "load_translator", stop)
    assert call(worksheet.main, "--out", tmp_path / "x.html", "--server", server)[2] == "error: checked\n"
