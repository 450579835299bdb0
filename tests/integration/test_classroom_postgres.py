"""Every test of the classes' database (tests/unit/test_classroom.py) again on PostgreSQL: a server of the test's own,
started with initdb and pg_ctl on a free local port (Debian's postgresql package, which .ci/run installs)."""

import os

import pytest

from appserver import postgres_bin, start_postgres
from lesson import classroom
from lesson.classroom import Store
from unit.test_classroom import *  # noqa: F401,F403  (the same tests, with the db fixture below)


@pytest.fixture(scope="module")
def postgres():
    """The URL of a fresh PostgreSQL server, stopped after the module (tests/appserver.py start_postgres)."""
    if postgres_bin() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed: .ci/run installs Debian's postgresql")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    url, stop = start_postgres()
    yield url
    stop()


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
