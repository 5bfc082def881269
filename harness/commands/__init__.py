"""The ``sdqtest`` commands, one module each (:mod:`harness.cli` dispatches).

The convention every module keeps: ``register(subparsers) -> None`` adds the
command's parser (and its subcommands'); each parser it adds sets ``func`` to
a function of the module that takes the parsed arguments and returns the
exit status (``run``, or ``run_<subcommand>``).  Options more than one
command takes, the progress line and the exit status of each error are in
:mod:`harness.commands.common`.
"""
