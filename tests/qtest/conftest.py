"""The suite's pytest settings: the sdqtest plugin (``--sdq-qemu``,
``--sdq-machine``, the ``qemu_build`` and ``machine`` fixtures), asked for here
since it is not loaded into every pytest session of the environment."""

pytest_plugins = ["harness.pytest_plugin"]
