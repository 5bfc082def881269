"""Replaying qtest traces on QEMU builds and the model.

:mod:`harness.replay.field` reads the forms reproducers arrive in (bug
reports' shell lines, fuzzers' trace headers, ``-qtest-log`` transcripts)
and rewrites their command lines for today's builds;
:mod:`harness.replay.engine` runs a trace on QEMU (``-qtest stdio``) and on
the model, and says what happened.
"""
