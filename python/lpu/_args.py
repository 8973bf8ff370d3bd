"""Python arguments to the plain ones the compiled module takes: a workload as (name or path,
YAML text, source), overrides as `key=value` strings. Only types are checked here (TypeError
naming the argument or key); every key and value goes through the workbench's own readers,
the ones the YAML files and --set go through (InputError naming the key)."""
import json
import math
import numbers
import os
from collections.abc import Mapping

WORKLOAD_DICT = "workload dict"  # how messages name a workload given as a dict


def _type_name(v):
    return type(v).__name__


def text_arg(name, value):
    if not isinstance(value, str):
        raise TypeError("%s: expected a str, got %s" % (name, _type_name(value)))
    return value


def workload_arg(workload):
    if isinstance(workload, (str, os.PathLike)):
        return (os.fspath(workload), "", "")
    if isinstance(workload, Mapping):
        lines = []
        for key, value in workload.items():
            if not isinstance(key, str):
                raise TypeError("workload: key %r is not a str" % (key,))
            try:
                lines.append("%s: %s" % (json.dumps(key), json.dumps(value, allow_nan=False)))
            except (TypeError, ValueError) as e:
                raise TypeError("workload: %s: %s" % (key, e)) from None
        # One key a line: a message's line number points at the key.
        return ("", "\n".join(lines) + "\n" if lines else "{}\n", WORKLOAD_DICT)
    raise TypeError("workload: expected a name, a path or a dict of workload keys, got %s" % _type_name(workload))


def _yaml_value(key, v):
    """A value as --set takes it (YAML): what the readers then check as they check the files."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return ".nan"
        if math.isinf(f):
            return ".inf" if f > 0 else "-.inf"
        return repr(f)
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple, Mapping)):
        try:
            return json.dumps(v, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError("overrides: %s: %s" % (key, e)) from None
    raise TypeError("overrides: %s: expected a number, a bool, a str, a list or a dict, got %s" % (key, _type_name(v)))


def sets_arg(overrides):
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        raise TypeError("overrides: expected a dict of config keys, e.g. {'hbm.bandwidth_gbps': 1600}, got %s"
                        % _type_name(overrides))
    out = []
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise TypeError("overrides: key %r is not a str" % (key,))
        out.append("%s=%s" % (key, _yaml_value(key, value)))
    return out


def list_arg(name, value):
    """A list of names, or the CLI's comma-separated spelling of one."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            text_arg(name, v)
        return ",".join(value)
    raise TypeError("%s: expected a list of str or a comma-separated str, got %s" % (name, _type_name(value)))


def policies_arg(fusion):
    return list_arg("fusion", fusion)


def emit_arg(emit):
    return list_arg("emit", emit)


def int_or_none(name, value):
    """None (not given) or an int; its range is the readers' to check, as for the CLI's flag."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s: expected an int, got %s" % (name, _type_name(value)))
    return int(value)


def tp_arg(tp):
    """--tp N: 0 to the module is `not given`."""
    from .errors import InputError
    tp = int_or_none("tp", tp)
    if tp is None:
        return 0
    if not 1 <= tp <= 1024:  # the CLI's range for --tp
        raise InputError("--tp: value %d not in range [1 - 1024]" % tp)
    return tp


def common(native, workload, arch, overrides, fusion, on_unsupported, unsupported_ops, tp):
    arch = "" if arch is None else os.fspath(arch) if isinstance(arch, os.PathLike) else text_arg("arch", arch)
    tp = tp_arg(tp)
    return native._Common(workload_arg(workload), arch, text_arg("fusion", fusion), sets_arg(overrides),
                          text_arg("on_unsupported", on_unsupported), list_arg("unsupported_ops", unsupported_ops), tp)


def serve_args(native, options):
    """serve's keywords onto the module's options object: an unknown keyword or a value of the
    wrong type is a TypeError naming it; ranges are the library's to check (InputError)."""
    args = native._ServeArgs()
    for key, value in options.items():
        if key.startswith("_") or not hasattr(args, key):
            known = sorted(k for k in dir(args) if not k.startswith("_"))
            raise TypeError("serve: unknown keyword %r (expected one of: %s)" % (key, ", ".join(known)))
        current = getattr(args, key)
        if isinstance(current, bool) != isinstance(value, bool) and isinstance(current, bool):
            raise TypeError("serve: %s: expected a bool, got %s" % (key, _type_name(value)))
        if isinstance(current, int) and not isinstance(current, bool) and (
                isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise TypeError("serve: %s: expected an int, got %s" % (key, _type_name(value)))
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        try:
            setattr(args, key, value)
        except TypeError:
            raise TypeError("serve: %s: expected a %s, got %s" % (key, _type_name(current), _type_name(value))) from None
    return args
