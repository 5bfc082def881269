"""The cross-check: scenarios run on the model and on QEMU in lockstep, the
verdicts, the schedule and the reports (``sdqtest check``)."""
