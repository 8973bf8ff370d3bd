"""The exceptions of `lpu`, one per exit class of the CLI (docs/cli.md): the message is the
one `lpu` prints after `error:`, `check failed:`, `simulation stuck:` or `internal error`."""


class LpuError(Exception):
    """Any error of a job; `exit_code` is the CLI's exit code for it."""
    exit_code = None


class InputError(LpuError, ValueError):
    """Bad input (exit 2): a file, a key, a value, a flag; the message names it."""
    exit_code = 2


class CheckFailed(LpuError):
    """A functional check failed (exit 1); `result` holds the run's statistics all the same."""
    exit_code = 1

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class SimulationStuck(LpuError):
    """A simulation that cannot finish (exit 3): deadlock, sim.max_us or the wall-clock limit."""
    exit_code = 3


class InternalError(LpuError):
    """A bug in the workbench (exit 4)."""
    exit_code = 4
