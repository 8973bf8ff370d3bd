"""A torch.compile backend: `torch.compile(model, backend=lpu_frontend.lpu_backend)`.

Dynamo hands a backend an FX GraphModule and example inputs and expects a callable back. This
one exports the graph (capture to ATen, sidecar with PyTorch's outputs) and returns the graph
module's own forward, so the program keeps running eagerly in PyTorch; the exported files are
what the workbench compiles and simulates. Files go to $LPU_EXPORT_DIR (default:
<tmp>/lpu_export) as graph_<n>.json, or wherever make_backend(out_dir) says.
"""

import itertools
import os
import tempfile
from typing import Callable, List

import torch

from .export import export

exported_paths: List[str] = []  # every graph exported by a backend in this process
_counter = itertools.count()


def make_backend(out_dir: str, prefix: str = "graph", method: str = "make_fx") -> Callable:
    """A backend writing <out_dir>/<prefix>_<n>.json. Dynamo graphs are re-traced with make_fx
    by default (their parameters are the graph module's own)."""

    def backend(gm: torch.fx.GraphModule, example_inputs):
        path = os.path.join(out_dir, f"{prefix}_{next(_counter)}.json")
        export(gm, tuple(example_inputs), path, method=method)
        exported_paths.append(path)
        return gm.forward

    return backend


def lpu_backend(gm: torch.fx.GraphModule, example_inputs):
    out_dir = os.environ.get("LPU_EXPORT_DIR") or os.path.join(tempfile.gettempdir(), "lpu_export")
    return make_backend(out_dir)(gm, example_inputs)
