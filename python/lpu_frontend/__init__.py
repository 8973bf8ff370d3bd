"""PyTorch frontend of the LPU workbench: capture a model as an ATen-level graph and write it
in the workbench's graph format (docs/graph-format.md) with a binary sidecar holding the
weights, the example inputs and PyTorch's own outputs.

    PYTHONPATH=python /usr/bin/python3
    >>> import torch, lpu_frontend
    >>> model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU()).eval()
    >>> lpu_frontend.export(model, (torch.randn(4, 16),), "out/mlp.json")
    then:  build/lpu ref out/mlp.json          (reference executor vs PyTorch)
           build/lpu run out/mlp.json --functional

`lpu_backend` is a `torch.compile(backend=...)` backend that exports every graph it is handed;
`simulate(arch=...)` one that also simulates them in process (the module `lpu`) and prints a summary.
"""

from .backend import ManifestRecorder, exported_paths, lpu_backend, make_backend
from .capture import ExportError
from .export import FORMAT_VERSION, Exported, export
from .simulate import Simulate, Summary, graph_break, simulate

__all__ = [
    "export",
    "Exported",
    "ExportError",
    "lpu_backend",
    "make_backend",
    "exported_paths",
    "ManifestRecorder",
    "FORMAT_VERSION",
    "simulate",
    "Simulate",
    "Summary",
    "graph_break",
]
