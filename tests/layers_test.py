#!/usr/bin/env python3
"""The layer check (layers.txt, scripts/check_layers.py) catches what it is for.

  layers_test.py check SRC [MANIFEST]
      the repository passes; then, in copies of the layered trees, apps/ and layers.txt, each planted
      include against the DAG (a back-edge, an include of a layer not depended on, the same
      in <...> spelling, a header including a private layer, a layer seen only through a
      private one, a file in no layer), a layers file with a cycle, with a dependency nothing
      uses or a public one only .cpp files use, and a manifest that puts a source in the
      wrong library each fail with the message that names the file, the line and the layers
      -- and with nothing else. The programs (apps/, a `client` of layers.txt) too: an include
      of a layer they do not use, a SystemC header included directly, and one reached through
      a simulator header each fail.
  layers_test.py build SRC CMAKE GENERATOR
      a copy of the project configures and its layer check builds; with a back-edge planted,
      `cmake --build` of a layer library fails with the checker's message before that
      library compiles anything.
Standard library only; everything happens in a temporary directory.
"""
import os
import shutil
import subprocess
import sys
import tempfile

FAILED = []


def expect(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILED.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def copy_tree(src, dst, parts):
    for p in parts:
        s, d = os.path.join(src, p), os.path.join(dst, p)
        if os.path.isdir(s):
            shutil.copytree(s, d, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copy2(s, d)


def plant(root, rel, text, after_line=None):
    """Inserts `text` as a line of root/rel (after line `after_line`, else at the end);
    returns the planted line's number."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    at = len(lines) if after_line is None else after_line
    lines.insert(at, text)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return at + 1


def checker(script, root, *extra):
    return run([sys.executable, script, "--root", root, *extra])


def case(src, script, name, mutate, message, rc=1, extra=()):
    """A fresh copy, one mutation, and the checker must fail with `message` and one problem."""
    tmp = tempfile.mkdtemp(prefix="lpu-layers-")
    failed_before = len(FAILED)
    try:
        copy_tree(src, tmp, ["layers.txt", "compiler", "sim", "tuner", "workbench", "apps", "bindings"])
        message = mutate(tmp, message)
        r = checker(script, tmp, *[e.replace("@TMP@", tmp) for e in extra])
        expect(r.returncode == rc, f"{name}: exit status {rc} (got {r.returncode})")
        expect(message in r.stdout, f"{name}: says {message!r}")
        if rc == 1:
            expect("check_layers: 1 problem(s)" in r.stdout, f"{name}: finds exactly one problem")
        if len(FAILED) > failed_before:
            print(r.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_mode(src, manifest):
    script = os.path.join(src, "scripts", "check_layers.py")
    extra = ["--manifest", manifest] if manifest else []
    r = checker(script, src, *extra)
    expect(r.returncode == 0, "the repository itself passes: " + r.stdout.strip().splitlines()[-1])

    def back_edge(tmp, msg):
        n = plant(tmp, "compiler/loopir/index.h", '#include "schedule/schedule.h"')
        return msg.format(n)
    case(src, script, "back-edge loopir -> schedule", back_edge,
         "compiler/loopir/index.h:{}: layer 'loopir' includes \"schedule/schedule.h\" (compiler/schedule/schedule.h) "
         "of layer 'schedule', a layer above it ('schedule' depends on 'loopir')")

    def isa_sees_loopir(tmp, msg):
        n = plant(tmp, "compiler/isa/program.h", '#include "loopir/loop_ir.h"', after_line=40)
        return msg.format(n)
    case(src, script, "isa -> loopir (not a dependency)", isa_sees_loopir,
         "compiler/isa/program.h:{}: layer 'isa' includes \"loopir/loop_ir.h\" (compiler/loopir/loop_ir.h) "
         "of layer 'loopir', which 'isa' does not depend on")

    def sim_sees_loopir(tmp, msg):
        n = plant(tmp, "sim/model/vxe.cpp", '#include "loopir/reduce.h"', after_line=4)
        return msg.format(n)
    case(src, script, "sim -> loopir", sim_sees_loopir,
         "sim/model/vxe.cpp:{}: layer 'sim' includes \"loopir/reduce.h\" (compiler/loopir/reduce.h) "
         "of layer 'loopir', which 'sim' does not depend on")

    def angle(tmp, msg):
        n = plant(tmp, "compiler/handlers/counting.cpp", "#  include <schedule/schedule.h>", after_line=2)
        return msg.format(n)
    case(src, script, "handlers -> schedule in <...> spelling", angle,
         "compiler/handlers/counting.cpp:{}: layer 'handlers' includes <schedule/schedule.h> "
         "(compiler/schedule/schedule.h) of layer 'schedule', which 'handlers' does not depend on")

    def private_in_header(tmp, msg):
        n = plant(tmp, "compiler/codegen/lpu_codegen.h", '#include "handlers/ops_handler.h"', after_line=8)
        return msg.format(n)
    case(src, script, "header includes a private layer", private_in_header,
         "compiler/codegen/lpu_codegen.h:{}: layer 'codegen' includes \"handlers/ops_handler.h\" "
         "(compiler/handlers/ops_handler.h) of layer 'handlers', a private dependency of 'codegen'")

    def through_private(tmp, msg):
        n = plant(tmp, "compiler/driver/compile.cpp", '#include "handlers/ops_handler.h"', after_line=2)
        return msg.format(n)
    case(src, script, "a layer seen only through a private dependency", through_private,
         "compiler/driver/compile.cpp:{}: layer 'driver' includes \"handlers/ops_handler.h\" "
         "(compiler/handlers/ops_handler.h) of layer 'handlers', which 'driver' reaches only through private "
         "dependencies of its layers")

    def no_layer(tmp, msg):
        os.makedirs(os.path.join(tmp, "compiler/newstage"))
        with open(os.path.join(tmp, "compiler/newstage/stage.h"), "w") as f:
            f.write("#pragma once\n")
        return msg
    case(src, script, "a file in no layer", no_layer, "compiler/newstage/stage.h: belongs to no layer")

    def app_sees_handlers(tmp, msg):
        n = plant(tmp, "apps/lpu/cmd_run.cpp", '#include "handlers/counting.h"', after_line=2)
        return msg.format(n)
    case(src, script, "apps -> a layer below the top ones", app_sees_handlers,
         "apps/lpu/cmd_run.cpp:{}: client 'apps' includes \"handlers/counting.h\" (compiler/handlers/counting.h) "
         "of layer 'handlers', which it does not use (apps -> uses: jobs generate sweep servesim)")

    def app_includes_systemc(tmp, msg):
        n = plant(tmp, "apps/lpu/main.cpp", "#include <systemc>", after_line=4)
        return msg.format(n)
    case(src, script, "apps include a SystemC header", app_includes_systemc,
         "apps/lpu/main.cpp:{}: client 'apps' includes <systemc>, a header 'apps' must never include")

    def app_reaches_systemc(tmp, msg):
        n = plant(tmp, "apps/lpu/cmd_sim.cpp", '#include "model/host.h"', after_line=2)
        return msg.format(n)
    case(src, script, "apps reach SystemC through a simulator header", app_reaches_systemc,
         # (which simulator header names SystemC first is the simulator's business)
         "apps/lpu/cmd_sim.cpp:{}: client 'apps' includes \"model/host.h\" (sim/model/host.h), which brings in <")

    def edit_layers(old, new):
        def mutate(tmp, msg):
            path = os.path.join(tmp, "layers.txt")
            with open(path) as f:
                text = f.read()
            assert text.count(old) == 1, f"layers.txt: {old!r} changed; update this test"
            with open(path, "w") as f:
                f.write(text.replace(old, new))
            return msg
        return mutate
    case(src, script, "a cycle in layers.txt", edit_layers("public: types tensor  private: ops support",
                                                           "public: types tensor  private: ops support loopir"),
         "layer 'graph' depends on 'loopir', which is not a layer defined above it", rc=2)
    case(src, script, "a dependency nothing uses", edit_layers("public: types ops  private: support",
                                                               "public: types ops  private: io support"),
         "layer 'isa' depends on 'io', but no file of 'isa' includes one of its headers (drop it)")
    case(src, script, "a public dependency only .cpp files use",
         edit_layers("public: isa loopir schedule  private: handlers support",
                     "public: isa loopir schedule handlers  private: support"),
         "layer 'codegen' lists 'handlers' as public, but only its .cpp files include it (make it private)")

    def wrong_library(tmp, msg):
        with open(os.path.join(tmp, "manifest.txt"), "w") as f:
            f.write("isa compiler/isa/program.cpp\nloopir compiler/isa/encoding.cpp\n")
        return msg
    case(src, script, "a source compiled into the wrong layer's library", wrong_library,
         "compiler/isa/encoding.cpp: compiled into lpu_loopir, but layers.txt puts it in layer 'isa'",
         extra=["--manifest", "@TMP@/manifest.txt"])


def build_mode(src, cmake, generator):
    tmp = tempfile.mkdtemp(prefix="lpu-layers-build-")
    try:
        tree, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
        # workbench/jobs compiles in the op-class table of the reports (reports/op_classes.json).
        copy_tree(src, tree, ["CMakeLists.txt", "cmake", "layers.txt", "scripts/check_layers.py", "compiler", "sim", "tuner",
                              "workbench", "apps", "bindings", "reports/op_classes.json"])
        r = run([cmake, "-S", tree, "-B", build, "-G", generator, "-DLPU_BUILD_TESTS=OFF", "-DLPU_WITH_RTL=OFF",
                 "-DCMAKE_BUILD_TYPE=Release"])
        expect(r.returncode == 0, "a copy of the project configures")
        if r.returncode != 0:
            print(r.stdout)
            return
        r = run([cmake, "--build", build, "--target", "lpu_layers"])
        expect(r.returncode == 0, "its layer check passes")
        if r.returncode != 0:
            print(r.stdout)
        n = plant(tree, "compiler/isa/encoding.h", '#include "codegen/lpu_codegen.h"')
        r = run([cmake, "--build", build, "--target", "lpu_ops"])
        expect(r.returncode != 0, "with a back-edge planted, `cmake --build --target lpu_ops` fails")
        msg = (f"compiler/isa/encoding.h:{n}: layer 'isa' includes \"codegen/lpu_codegen.h\" "
               "(compiler/codegen/lpu_codegen.h) of layer 'codegen', a layer above it ('codegen' depends on 'isa')")
        expect(msg in r.stdout, f"... with the checker's message {msg!r}")
        built = [f for f in os.listdir(build) if f.endswith(".a")] + \
            [f for d, _, fs in os.walk(os.path.join(build, "compiler")) for f in fs if f.endswith((".o", ".a"))]
        expect(not built, "... before lpu_ops compiled anything")
        if FAILED:
            print(r.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        check_mode(argv[1], argv[2] if len(argv) > 2 else None)
    elif len(argv) == 4 and argv[0] == "build":
        build_mode(*argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"layers_test: {len(FAILED)} failure(s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# pytest (ctest layers_check and layers_build run these; docs/python.md):
#   pytest tests/layers_test.py::test_check_mode [--layer-sources BUILD/layer_sources.txt]
#   pytest tests/layers_test.py::test_build_mode [--cmake CMAKE] [--generator GENERATOR]
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_check_mode(option):
    FAILED.clear()
    check_mode(SRC, option("--layer-sources"))
    assert not FAILED, "%d failure(s):\n  " % len(FAILED) + "\n  ".join(FAILED)


def test_build_mode(option):
    FAILED.clear()
    build_mode(SRC, option("--cmake"), option("--generator"))
    assert not FAILED, "%d failure(s):\n  " % len(FAILED) + "\n  ".join(FAILED)
