"""Soft checks for end-to-end tests: an expensive run (a sweep killed and resumed, a whole
generation) is checked on many properties at once, and a failing test should name every property
that failed, not only the first. `Checks` is what tests/conftest.py's `check` fixture hands a test;
at the end of the test the fixture fails it, listing the failures."""


class Checks:
    def __init__(self, echo=print):
        self.failures = []
        self.count = 0
        self._echo = echo

    def __call__(self, cond, what):
        """Records one check; returns `cond` so that later checks can depend on it."""
        self.count += 1
        self._echo(("ok   " if cond else "FAIL ") + what)
        if not cond:
            self.failures.append(what)
        return bool(cond)

    def summary(self):
        if not self.failures:
            return "%d checks passed" % self.count
        return "%d of %d checks failed:\n  " % (len(self.failures), self.count) + "\n  ".join(self.failures)
