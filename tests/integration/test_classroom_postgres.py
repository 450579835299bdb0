"""Every test of the classes' database (tests/unit/test_classroom.py) again on PostgreSQL: a server of the test's own,
started with initdb and pg_ctl on a free local port (Debian's postgresql package, which .ci/run installs)."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from appserver import free_port
from lesson import classroom
from lesson.classroom import Store
from unit.test_classroom import *  # noqa: F401,F403  (the same tests, with the db fixture below)


def postgres_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return versions[-1].parent if versions else None


@pytest.fixture(scope="module")
def postgres():
    """The URL of a fresh PostgreSQL server, stopped after the module (run as the postgres user when we are root:
    the server refuses root)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="classes-postgres-"))  # in /tmp itself: pytest's folders are root's only
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(root, "postgres")
    data, port = root / "data", free_port()
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                    "--no-sync"], check=True, capture_output=True)
    subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                    f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True)
    yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                   capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def db(postgres, monkeypatch):  # noqa: F811  (replaces the SQLite one)
    monkeypatch.setattr(classroom, "VOTE_GAP", 0.0)
    store = Store(postgres)
    with store.engine.begin() as c:  # each test starts from empty tables
        for table in (*classroom.TABLES, classroom.meta):
            c.execute(table.delete())
    store = Store(postgres)  # writes the schema version again
    assert store.engine.dialect.name == "postgresql"
    yield store
    store.engine.dispose()
