"""Lesson material built on the translator: the exercises and the worksheet a class works through.

    exercises.py   questions in the walk's order, one small registered function each, every answer computed from
                   the model and the measurements shipped beside its checkpoint; `check` judges an answer
    worksheet.py   `python -m lesson.worksheet`: the exercises as a printable worksheet and its answer key
    qti.py         the exercises as an IMS QTI 2.1 package, for a learning platform's quiz import
    classroom.py   a class, live: its questions, seats and votes in SQLite or PostgreSQL (SQLAlchemy)

It reads model/ (the translator, its checkpoints, cli.py for the command); the page (views/exercises.py,
views/classroom.py) reads it.
Nothing here imports views/, viz/ or app.py.
"""

import sys

# `python -m lesson.worksheet` imports this package first, with sys.argv[0] set to "-m" meanwhile: Ctrl-C while the
# command's imports load torch is one line too, as for model's commands (model/__init__.py).
if getattr(sys, "argv", [])[:1] == ["-m"]:
    from model.cli import catch_early_interrupts

    catch_early_interrupts()
