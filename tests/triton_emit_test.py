"""ctest triton_py_compile: `lpu compile W --emit triton,triton-plan,schedule-json` for every
workload file (workloads/*.yaml; on lpu-asic, where the 70B models fit), fusion none and greedy, plus any graph files given with
--graphs (zoo models, fixtures); then, for each module:
  * it byte-compiles (py_compile) and parses (ast), and defines allocate/launch/run;
  * no method is called on a literal (`1.0.to(...)`: valid Python, a Triton CompilationError);
  * its BUFFER_PLAN (the json.loads literal) equals triton_plan.json;
  * the plan's kernels are the schedule's (schedule.json: names, loop nodes, HBM outputs, order);
  * every non-host kernel's function is defined with @triton.jit and launched, in schedule order;
  * torch_graph.py (--emit torch) byte-compiles, defines forward/prepare/run, and its OUTPUTS are the plan's.
Triton itself is not needed (nothing is imported). Usage:
  pytest tests/triton_emit_test.py --lpu LPU [--workdir OUTDIR] [--graphs FILE_OR_DIR ...] [--no-workloads] [--jobs N]
"""
import ast
import concurrent.futures
import glob
import json
import os
import py_compile
import subprocess


def plan_literal(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "BUFFER_PLAN" for t in node.targets):
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.Constant), "BUFFER_PLAN is not json.loads(...)"
            return json.loads(call.args[0].value)
    raise AssertionError("no BUFFER_PLAN")


def check_one(lpu, w, fusion, outdir):
    d = os.path.join(outdir, os.path.basename(w).replace(".", "_"), fusion)
    r = subprocess.run([lpu, "compile", w, "--fusion", fusion, "--arch", "lpu-asic",
                        "--emit", "triton,triton-plan,schedule-json,torch", "-o", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "%s %s: lpu compile exit %d: %s" % (w, fusion, r.returncode, r.stderr.strip()[-400:])
    mod = os.path.join(d, "triton_kernels.py")
    try:
        py_compile.compile(mod, cfile=os.path.join(d, "triton_kernels.pyc"), doraise=True)
        src = open(mod).read()
        tree = ast.parse(src)
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for f in ("allocate", "launch", "run"):
            assert f in funcs, "no def " + f
        plan = plan_literal(tree)
        assert plan == json.load(open(os.path.join(d, "triton_plan.json"))), "BUFFER_PLAN differs from triton_plan.json"
        sched = json.load(open(os.path.join(d, "schedule.json")))
        assert plan["policy"] == fusion, plan["policy"]
        assert len(plan["kernels"]) == len(sched["kernels"]), "kernel count differs from the schedule"
        for pk, sk in zip(plan["kernels"], sched["kernels"]):
            assert pk["name"] == sk["name"], (pk["name"], sk["name"])
            assert pk["nodes"] == sk["loop_nodes"], pk["name"]
            assert pk["hbm_outputs"] == sk["hbm_outputs"], pk["name"]
        names = {b["name"] for b in plan["buffers"]}
        for b in plan["inputs"] + plan["outputs"]:
            assert b in names, "buffer %s missing from the plan" % b
        # launch(): one statement per kernel, in schedule order
        calls = []
        for st in funcs["launch"].body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                f = st.value.func
                calls.append(f.value.id if isinstance(f, ast.Subscript) else f.id)
        want = [k["triton"] if k["mode"] != "host" else "_host_op" for k in plan["kernels"]]
        assert calls == want, "launch() calls %s, the plan %s" % (calls[:5], want[:5])
        # A method called on a literal (`1.0.to(tl.int64)`) parses but fails in Triton's
        # compiler: what a constant operand of a bitwise op once emitted (HF Gemma-3's masks).
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Constant):
                raise AssertionError("line %d: attribute .%s of the literal %r" % (node.lineno, node.attr, node.value.value))
        for k in plan["kernels"]:
            if k["mode"] == "host":
                continue
            fn = funcs.get(k["triton"])
            assert fn is not None, "no def " + k["triton"]
            assert any(ast.unparse(dec) == "triton.jit" for dec in fn.decorator_list), k["triton"] + " is not @triton.jit"
            extra = 1 if k["mode"] == "grid" else 0  # the grid barrier's counter
            assert len(fn.args.args) == len(k["args"]) + extra, k["triton"] + ": parameter count"
        # --emit torch (the same graph as eager torch calls): byte-compiles, same outputs as the plan
        tg = os.path.join(d, "torch_graph.py")
        py_compile.compile(tg, cfile=os.path.join(d, "torch_graph.pyc"), doraise=True)
        ttree = ast.parse(open(tg).read())
        tfuncs = {n.name for n in ttree.body if isinstance(n, ast.FunctionDef)}
        assert {"forward", "prepare", "run"} <= tfuncs, "torch_graph.py lacks forward/prepare/run"
        touts = [n.value for n in ttree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "OUTPUTS"]
        assert touts and ast.literal_eval(touts[0]) == plan["outputs"], "torch_graph.py OUTPUTS differ from the plan's"
    except Exception as e:  # noqa: BLE001 - report which module failed and why
        return "%s %s: %s: %s" % (w, fusion, type(e).__name__, e)
    return None


def test_emitted_triton_modules(lpu, workdir, option):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    items = [] if option("--no-workloads") else sorted(glob.glob(os.path.join(root, "workloads", "*.yaml")))
    for g in option("--graphs"):
        items += sorted(glob.glob(os.path.join(g, "**", "*.json"), recursive=True)) if os.path.isdir(g) else [g]
    items = [i for i in items if not i.endswith("export_log.json") and not os.path.basename(i).startswith("manifest")]
    jobs = [(w, f) for w in items for f in ("none", "greedy")]
    assert jobs, "nothing to check"
    with concurrent.futures.ThreadPoolExecutor(option("--jobs")) as ex:
        errors = [e for e in ex.map(lambda j: check_one(lpu, j[0], j[1], workdir), jobs) if e]
    print("%d of %d Triton modules checked OK (%d graphs x none/greedy)" % (len(jobs) - len(errors), len(jobs), len(items)))
    assert not errors, "%d modules failed:\n" % len(errors) + "\n".join(errors)
