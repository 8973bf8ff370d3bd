"""scripts/check_funclen.py, the function-length check of scripts/format-check.sh (ctest
check_funclen): a function of 100 lines passes, one of 101 fails naming file, line and length,
a `// funclen: table` marker exempts a data table, and what is not a function (a class, a
namespace, an initialiser list, a lambda inside a function) is not measured on its own."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_funclen.py")


def function(name, lines, before=""):
    """A C++ function of exactly `lines` lines, signature to closing brace."""
    body = ["  x += %d;  // a { brace in a comment, \"}\" in a string: \"}\"" % i for i in range(lines - 2)]
    return before + "int %s(int x) {\n" % name + "\n".join(body) + ("\n" if body else "") + "}\n"


def run(tmp_path, text, *extra):
    src = tmp_path / "f.cpp"
    src.write_text(text)
    return subprocess.run([sys.executable, SCRIPT, *extra, str(src)], capture_output=True, text=True)


def test_100_lines_pass(tmp_path):
    r = run(tmp_path, function("ok", 100))
    assert r.returncode == 0, r.stderr
    assert "1 functions, 0 over 100 lines" in r.stdout


def test_101_lines_fail(tmp_path):
    r = run(tmp_path, "// header\n" + function("too_long", 101))
    assert r.returncode == 1
    assert "f.cpp:2: function too_long is 101 lines (limit 100)" in r.stderr


def test_the_limit_is_an_option(tmp_path):
    assert run(tmp_path, function("f", 41), "--max", "40").returncode == 1
    assert run(tmp_path, function("f", 40), "--max", "40").returncode == 0


def test_a_marked_data_table_is_exempt(tmp_path):
    r = run(tmp_path, function("table", 150, before="// funclen: table\n"))
    assert r.returncode == 0, r.stderr
    assert "1 data tables exempt" in r.stdout
    # the marker must be on the line right above the signature
    r = run(tmp_path, function("table", 150, before="// funclen: table\n\n"))
    assert r.returncode == 1


def test_what_is_not_a_function(tmp_path):
    rows = "\n".join("  {%d, %d}," % (i, i) for i in range(150))
    text = ("namespace big {\nstruct S {\n  int a;\n};\n"
            "const int kTable[][2] = {\n" + rows + "\n};\n"
            "int f() {\n  auto g = [](int y) {\n    return y;\n  };\n  return g(1);\n}\n}  // namespace big\n")
    r = run(tmp_path, text)
    assert r.returncode == 0, r.stderr
    assert "1 functions, 0 over 100 lines" in r.stdout


def test_member_functions_and_constructors(tmp_path):
    body = "\n".join("  v += %d;" % i for i in range(101))
    text = ("struct A {\n  A(int v) : v_(v) {\n" + body + "\n  }\n  int v_;\n};\n"
            "int A_get(const A& a) const {\n  return a.v_;\n}\n")
    r = run(tmp_path, text)
    assert r.returncode == 1
    assert "function A is 103 lines" in r.stderr
