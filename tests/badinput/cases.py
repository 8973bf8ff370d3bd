"""The bad-input catalogue: one Case per hostile input (run by run_catalogue.py).

A case names its expected exit code, a regex the output must match, the `lpu` arguments and
the input files it needs. In the regex and the arguments, {NAME} is the path of the input
file NAME (made in a fresh temporary directory), {tmp} that directory and {repo} the
repository. Case names start with their input kind: config, set, workload, graph, sidecar,
text, asm, bin, sweep, serve, report, flags."""
import json
import os
import re
import struct


class Case:
    def __init__(self, name, exit, pattern, args, files=None, timeout=60, check=None, open_issue=None):
        self.name, self.exit, self.pattern, self.args = name, exit, pattern, args
        self.files, self.timeout, self.check = files or {}, timeout, check
        # Known still to fail (why, in words): ctest expects the failure (WILL_FAIL), so the
        # fix that makes it pass turns the test red until this mark is removed.
        self.open_issue = open_issue
        if open_issue:
            self.timeout = min(timeout, 20)


# ---- input makers: each returns a function (tmp, key, repo) -> path --------------------------

def text(content, ext=".yaml"):
    def make(tmp, key, repo):
        path = os.path.join(tmp, key + ext)
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        return path
    return make


def sub(src, pattern, repl, ext=None):
    """A repository file with one regex substitution (which must match: the case stays honest)."""
    def make(tmp, key, repo):
        with open(os.path.join(repo, src)) as f:
            s = f.read()
        s2, n = re.subn(pattern, repl, s, count=1, flags=re.M)
        assert n == 1, "%s: /%s/ does not match" % (src, pattern)
        return text(s2, ext or os.path.splitext(src)[1])(tmp, key, repo)
    return make


def append(src, extra):
    def make(tmp, key, repo):
        with open(os.path.join(repo, src)) as f:
            return text(f.read() + extra, os.path.splitext(src)[1])(tmp, key, repo)
    return make


def generated(fn, ext):
    def make(tmp, key, repo):
        data = fn()
        return text(data, ext)(tmp, key, repo)
    return make


def regular_file():
    return text("not a directory\n", ".txt")


def directory():
    def make(tmp, key, repo):
        path = os.path.join(tmp, key)
        os.mkdir(path)
        return path
    return make


CFG = "configs/lpu-small.yaml"


def cfg(pattern, repl):
    return {"f": sub(CFG, pattern, repl)}


# ---- graph JSON -------------------------------------------------------------------------------

def graph_json(nodes, outputs=("y",), name="hand", extra=""):
    body = ",\n".join("  " + n for n in nodes)
    return ('{"format": "lpu-graph", "version": 1, "name": "%s",%s "nodes": [\n%s\n], "outputs": [%s]}\n'
            % (name, extra, body, ", ".join('"%s"' % o for o in outputs)))


X48 = '{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4, 8]}'
RELU = '{"name": "y", "kind": "call", "op": "relu", "inputs": ["x"], "dtype": "f32", "shape": [4, 8]}'


def gj(*nodes, **kw):
    return {"f": text(graph_json(list(nodes), **kw), ".json")}


def relu_chain(n):
    nodes = [X48] + ['{"name": "r%d", "kind": "call", "op": "relu", "inputs": ["%s"], "dtype": "f32", "shape": [4, 8]}' % (i, "x" if i == 0 else "r%d" % (i - 1))
                     for i in range(n)]
    return graph_json(nodes, outputs=("r%d" % (n - 1),))


def with_sidecar(tensors, sidecar_bytes, expected=True):
    """A relu graph whose `x` comes from a sidecar `t.bin` (for `lpu ref`), and PyTorch's output0
    from `e.bin` unless `expected` is False."""
    def make(tmp, key, repo):
        with open(os.path.join(tmp, "t.bin"), "wb") as f:
            f.write(sidecar_bytes)
        with open(os.path.join(tmp, "e.bin"), "wb") as f:
            f.write(b"\0" * 128)
        entries_list = tensors + ([tensor(name="output0", role="expected", file="e.bin")] if expected else [])
        entries = ",\n".join("    " + json.dumps(t) for t in entries_list)
        doc = ('{"format": "lpu-graph", "version": 1, "name": "side", "nodes": [\n  %s,\n  %s\n], "outputs": ["y"],\n'
               '  "tensors": [\n%s\n  ]}\n' % (X48, RELU, entries))
        return text(doc, ".json")(tmp, key, repo)
    return make


def tensor(name="x", role="input", shape=(4, 8), offset=0, file="t.bin", dtype="f32"):
    return {"name": name, "role": role, "dtype": dtype, "shape": list(shape), "file": file, "offset": offset}


# ---- assembly ---------------------------------------------------------------------------------

ASM_HEAD = ".program p\n.buffer x hbm:0x0 f32[4, 8] input\n.buffer y hbm:0x80 f32[4, 8] output\n.kernel 0 k0\n"
PACKED_HEAD = (".program p\n.buffer w hbm:0x0 f16[8, 64] weight int4/g32\n.buffer x hbm:0x1000 f32[1, 64] input\n"
               ".kernel 0 k0\n")
ASM_OK = ASM_HEAD + ("  dma.load f32 [4, 8] lm:0x0 <- hbm:0x0 [8, 1]\n"
                     "  vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]\n"
                     "  dma.store f32 [4, 8] hbm:0x80 [8, 1] <- lm:0x100\n  halt\n")


def asm(body, head=ASM_HEAD):
    return {"f": text(head + body, ".s")}


ASM_RELU = r"vxe.relu \[4, 8\] lm:0x100 <- lm:0x0 \[8, 1\]"  # ASM_OK's vxe.<op>, line 6


def asm_sub(pattern, repl):
    s, n = re.subn(pattern, repl, ASM_OK, count=1)
    assert n == 1
    return {"f": text(s, ".s")}


# ---- binary programs: patched from `lpu compile --emit bin` output ----------------------------

HDR, INSTR, OPND = 48, 64, 16
LOOP_BEGIN, LOOP_END, HALT, VXE_OP, DMA_LOAD = 11, 12, 5, 2, 0  # stable opcode codes (compiler/isa/opcodes.h)


def fnv(b):
    h = 1469598103934665603
    for i, c in enumerate(b):
        if i < 40 or i >= 48:
            h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def instr_offsets(b):
    n_code, n_opnd = struct.unpack_from("<II", b, 24)
    start = len(b) - n_opnd * OPND - n_code * INSTR
    return [start + i * INSTR for i in range(n_code)]


def binary(patch, fix_checksum=True):
    """The binary form of a small looped program, with `patch(bytearray)` applied."""
    def make(tmp, key, repo):
        import subprocess
        lpu = os.environ["LPU_BIN"]
        subprocess.run([lpu, "compile", "ln_gelu_add", "--emit", "bin", "-o", tmp], check=True, cwd=repo,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(tmp, "program.lpubin"), "rb") as f:
            b = bytearray(f.read())
        patch(b)
        if fix_checksum:
            struct.pack_into("<Q", b, 40, fnv(b))
        return text(bytes(b), ".lpubin")(tmp, key, repo)
    return make


def first_with_opcode(b, code):
    for off in instr_offsets(b):
        if b[off] == code:
            return off
    raise AssertionError("no instruction with opcode %d" % code)


def loop_count_zero(b):
    struct.pack_into("<I", b, first_with_opcode(b, LOOP_BEGIN) + 8, 0)


def endloop_to_halt(b):
    b[first_with_opcode(b, LOOP_END)] = HALT


def vxe_dest_row_stride_below_cols(b):
    """The first vxe.<op> of more than one column gets a destination row stride (its record's
    depth slot) one short of its columns."""
    for off in instr_offsets(b):
        cols = struct.unpack_from("<I", b, off + 12)[0]
        if b[off] == VXE_OP and cols > 1:
            struct.pack_into("<I", b, off + 40, cols - 1)
            return
    raise AssertionError("no vxe.<op> of more than one column")


def vxe_chain_byte(offset, value):
    """Byte `offset` (57: the post op, 58: the row reduction) of the first vxe.<op>'s record."""
    def patch(b):
        b[first_with_opcode(b, VXE_OP) + offset] = value
    return patch


def dma_load_post_op(b):
    """The first dma.load's record gets a post op byte, which only vxe.<op> carries."""
    b[first_with_opcode(b, DMA_LOAD) + 57] = 1


# ---- sweeps -----------------------------------------------------------------------------------

SWEEP = "workloads: [ln_gelu_add]\nfusion: [none]\naxes:\n  hbm.bandwidth_gbps: [128, 256]\n"


def sweep(s):
    return {"f": text(s, ".yaml")}


# A serving sweep (command: serve): its `serve.*` keys are `lpu serve` flags.
SERVE_SWEEP = "command: serve\nworkloads: [tiny-llama]\naxes:\n  serve.rate: [10, 20]\n"


def million_points():
    # 1000 x 1000 = 10^6 points, the documented maximum.
    return ("workloads: [ln_gelu_add]\nfusion: [none]\naxes:\n"
            "  hbm.bandwidth_gbps: {start: 1, stop: 1000, step: 1}\n"
            "  hbm.latency_ns: {start: 0, stop: 999, step: 1}\n")


def deep_json(n):
    return "[" * n + "]" * n + "\n"


def alias_bomb(levels=12, fan=9, head=""):
    """A "billion laughs" document: each anchor a list of `fan` aliases of the one before, so
    it is a few hundred bytes that expand to fan**levels nodes (9**12 ~ 2.8e11)."""
    lines = [head + "a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * fan)))
    return "\n".join(lines) + "\n"


def no_file_written(key):
    def check(paths):
        return None
    return check


CASES = [
    # ---- architecture config YAML (check-config) ----
    Case("config_devices_wraps", 2, r"{f}:5: devices: value 4294967297 out of range", ["check-config", "{f}"],
         cfg(r"^devices: .*", "devices: 4294967297")),
    Case("config_lmu_capacity_wraps", 2, r"{f}:\d+: lmu.capacity_kib: value 4294967552 out of range",
         ["check-config", "{f}"], cfg(r"capacity_kib: .*", "capacity_kib: 4294967552")),
    Case("config_vxe_lanes_wraps", 2, r"{f}:\d+: vxe.lanes: value -4294967232 out of range", ["check-config", "{f}"],
         cfg(r"^  lanes: 64", "  lanes: -4294967232")),
    Case("config_duplicate_clock", 2, r"{f}:\d+: clock_ghz: duplicate key \(first given on line \d+\)",
         ["check-config", "{f}"], {"f": append(CFG, "clock_ghz: 2.0\n")}),
    Case("config_duplicate_hbm", 2, r"{f}:\d+: hbm: duplicate key", ["check-config", "{f}"],
         {"f": append(CFG, "hbm:\n  channels: 4\n")}),
    Case("config_duplicate_nested", 2, r"{f}:\d+: hbm.channels: duplicate key", ["check-config", "{f}"],
         cfg(r"^  channels: 8", "  channels: 8\n  channels: 4")),
    Case("config_complex_key", 2, r"{f}:\d+: <root>: a key must be a plain name", ["check-config", "{f}"],
         {"f": append(CFG, "? [a, b]\n: 1\n")}),
    Case("config_misspelled_key", 2, r"{f}:\d+: hbm.chanels: unknown key \(did you mean 'channels'",
         ["check-config", "{f}"], cfg(r"^  channels:", "  chanels:")),
    Case("config_negative_bandwidth", 2, r"{f}:\d+: hbm.bandwidth_gbps: value -256 out of range",
         ["check-config", "{f}"], cfg(r"bandwidth_gbps: 256", "bandwidth_gbps: -256")),
    Case("config_energy_negative", 2, r"{f}:\d+: energy.sxe_pj_per_mac: value -0.5 out of range",
         ["check-config", "{f}"], cfg(r"sxe_pj_per_mac: 0.5", "sxe_pj_per_mac: -0.5")),
    Case("config_energy_nan", 2, r"{f}:\d+: energy.hbm_write_pj_per_bit: must be a finite number",
         ["check-config", "{f}"], cfg(r"hbm_write_pj_per_bit: 3.9", "hbm_write_pj_per_bit: .nan")),
    Case("config_energy_static_missing", 2, r"{f}:\d+: energy.static_mw.lmu: missing required key",
         ["check-config", "{f}"], cfg(r"^    lmu: 20\n", "")),
    Case("config_energy_unknown_class", 2, r"{f}:\d+: energy.vxe_pj_per_op.fma: unknown key",
         ["check-config", "{f}"], cfg(r"^    mov: 0.05", "    mov: 0.05\n    fma: 1")),
    Case("config_clock_not_a_number", 2, r"{f}:\d+: clock_ghz: expected a number, got 'fast'",
         ["check-config", "{f}"], cfg(r"^clock_ghz: .*", "clock_ghz: fast")),
    Case("config_clock_nan", 2, r"{f}:\d+: clock_ghz: must be a finite number", ["check-config", "{f}"],
         cfg(r"^clock_ghz: .*", "clock_ghz: .nan")),
    Case("config_clock_inf", 2, r"{f}:\d+: clock_ghz: must be a finite number", ["check-config", "{f}"],
         cfg(r"^clock_ghz: .*", "clock_ghz: .inf")),
    Case("config_clock_null", 2, r"{f}:\d+: clock_ghz: ", ["check-config", "{f}"], cfg(r"^clock_ghz: .*", "clock_ghz:")),
    Case("config_devices_zero", 2, r"{f}:\d+: devices: value 0 out of range", ["check-config", "{f}"],
         cfg(r"^devices: .*", "devices: 0")),
    Case("config_devices_fraction", 2, r"{f}:\d+: devices: expected an integer, got '1.5'", ["check-config", "{f}"],
         cfg(r"^devices: .*", "devices: 1.5")),
    Case("config_channels_zero", 2, r"{f}:\d+: hbm.channels: value 0 out of range", ["check-config", "{f}"],
         cfg(r"^  channels: 8", "  channels: 0")),
    Case("config_channels_huge", 2, r"{f}:\d+: hbm.channels: value 9223372036854775807 out of range|"
         r"{f}:\d+: hbm.channels: value 9.22337203685478e\+18 out of range", ["check-config", "{f}"],
         cfg(r"^  channels: 8", "  channels: 9223372036854775807")),
    Case("config_channels_beyond_int64", 2, r"{f}:\d+: hbm.channels: expected an integer", ["check-config", "{f}"],
         cfg(r"^  channels: 8", "  channels: 99999999999999999999999")),
    Case("config_missing_hbm", 2, r"{f}:\d+: hbm: missing required section", ["check-config", "{f}"],
         {"f": text("clock_ghz: 1\ndevices: 1\nlmu: {capacity_kib: 64}\nvxe: {lanes: 8}\nsxe: {mac_trees: 1, lanes: 8}\n")}),
    Case("config_missing_capacity", 2, r"{f}:\d+: lmu.capacity_kib: missing required key", ["check-config", "{f}"],
         cfg(r"^  capacity_kib: .*\n", "")),
    Case("config_hbm_is_list", 2, r"{f}:\d+: hbm: expected a mapping", ["check-config", "{f}"],
         {"f": text("clock_ghz: 1\ndevices: 1\nhbm: [1, 2]\n")}),
    Case("config_root_is_list", 2, r"{f}:1: <root>: expected a mapping", ["check-config", "{f}"],
         {"f": text("- a\n- b\n")}),
    Case("config_empty_file", 2, r"{f}.*: <root>: expected a mapping", ["check-config", "{f}"], {"f": text("")}),
    Case("config_syntax_error", 2, r"{f}:\d+:\d+: YAML syntax error", ["check-config", "{f}"],
         {"f": text("clock_ghz: [1, 2\ndevices: 1\n")}),
    Case("config_tab_indent", 2, r"{f}:\d+:\d+: YAML syntax error", ["check-config", "{f}"],
         {"f": text("hbm:\n\tchannels: 8\n")}),
    Case("config_binary_garbage", 2, r"{f}", ["check-config", "{f}"], {"f": text(bytes(range(256)) * 4)}),
    Case("config_undefined_alias", 2, r"{f}:\d+:\d+: YAML syntax error", ["check-config", "{f}"],
         {"f": text("clock_ghz: *nothing\n")}),
    Case("config_no_such_file", 2, r"config '{tmp}/nope.yaml': no such file", ["check-config", "{tmp}/nope.yaml"]),
    Case("config_is_directory", 2, r"config '{d}': it is a directory", ["check-config", "{d}"], {"d": directory()}),
    # the memory section (docs/memory.md) and its technology presets (configs/memory/)
    Case("config_memory_technology_unknown", 2,
         r"{f}:\d+: memory.technology: expected one of hbm2, hbm3, hbm3e, lpddr5x \(configs/memory/\*.yaml\), got 'ddr9'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: ddr9")),
    Case("config_memory_technology_path", 2, r"{f}:\d+: memory.technology: expected one of .*got '../lpu-small'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: ../lpu-small")),
    Case("config_memory_technology_missing", 2, r"{f}:\d+: memory.technology: missing required key",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2\n", "")),
    Case("config_memory_model_bogus", 2, r"{f}:\d+: memory.model: expected bandwidth or banks, got 'fast'",
         ["check-config", "{f}"], cfg(r"^  model: bandwidth", "  model: fast")),
    Case("config_memory_is_list", 2, r"{f}:\d+: memory: expected a mapping", ["check-config", "{f}"],
         cfg(r"^memory:\n  model: bandwidth\n  technology: hbm2", "memory: [hbm2]")),
    Case("config_memory_misspelled_timing", 2, r"{f}:\d+: memory.tRCD: unknown key \(did you mean 'tRCD_ns'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  tRCD: 12")),
    Case("config_memory_timing_nan", 2, r"{f}:\d+: memory.tRP_ns: must be a finite number", ["check-config", "{f}"],
         cfg(r"^  technology: hbm2", "  technology: hbm2\n  tRP_ns: .nan")),
    Case("config_memory_timing_inf", 2, r"{f}:\d+: memory.tREFI_ns: must be a finite number", ["check-config", "{f}"],
         cfg(r"^  technology: hbm2", "  technology: hbm2\n  tREFI_ns: .inf")),
    Case("config_memory_timing_negative", 2, r"{f}:\d+: memory.tRAS_ns: value -28 out of range",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  tRAS_ns: -28")),
    Case("config_memory_timing_not_a_number", 2, r"{f}:\d+: memory.tCL_ns: expected a number, got 'slow'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  tCL_ns: slow")),
    Case("config_memory_banks_zero", 2, r"{f}:\d+: memory.banks_per_group: value 0 out of range",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  banks_per_group: 0")),
    Case("config_memory_bits_fraction", 2, r"{f}:\d+: memory.channel_bits: expected an integer, got '12.5'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  channel_bits: 12.5")),
    Case("config_memory_channels_disagree", 2,
         r"{f}:\d+: memory.channels: 3 channels of hbm2 at 32 GB/s each peak at 96 GB/s, not within 5% of "
         r"hbm.bandwidth_gbps 256", ["check-config", "{f}"],
         cfg(r"^  model: bandwidth\n  technology: hbm2", "  model: banks\n  technology: hbm2\n  channels: 3")),
    Case("config_memory_mapping_bogus", 2, r"{f}:\d+: memory.address_mapping: expected the fields Ro Ba Bg Co Pc Ch",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  address_mapping: RoRoBaCoPcCh")),
    Case("config_memory_page_policy_bogus", 2, r"{f}:\d+: memory.page_policy: expected open or closed, got 'half'",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  page_policy: half")),
    Case("config_memory_refresh_too_long", 2, r"{f}:\d+: memory.tRFC_ns: tRFC_ns 5000 must be shorter than tREFI_ns",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  tRFC_ns: 5000")),
    Case("config_memory_too_many_banks", 2,
         r"{f}:\d+: memory.channels: 65536 channels x 2 pseudo-channels x 256 banks = 33554432 banks; at most 4194304",
         ["check-config", "{f}"], cfg(r"^  model: bandwidth\n  technology: hbm2", "  model: banks\n  technology: hbm2\n  channels: 65536\n  bank_groups: 64")),
    Case("config_memory_row_not_bursts", 2, r"{f}:\d+: memory.row_bytes: row_bytes 1000 must be a multiple",
         ["check-config", "{f}"], cfg(r"^  technology: hbm2", "  technology: hbm2\n  row_bytes: 1000")),
    Case("config_sxe_model_bogus", 2, r"{f}:\d+: sxe.model: expected approx or rtl, got 'magic'",
         ["check-config", "{f}"], cfg(r"^sxe:\n", "sxe:\n  model: magic\n")),
    Case("config_vxe_op_unknown", 2, r"{f}:\d+: vxe.ops.frobnicate: unknown key", ["check-config", "{f}"],
         cfg(r"^vxe:\n", "vxe:\n  ops:\n    frobnicate: {latency: 1}\n")),
    Case("config_vxe_op_negative_latency", 2, r"{f}:\d+: vxe.ops.add.latency: value -1 out of range",
         ["check-config", "{f}"], cfg(r"^vxe:\n", "vxe:\n  ops:\n    add: {latency: -1}\n")),
    Case("config_vxe_op_is_list", 2, r"{f}:\d+: vxe.ops.add: expected a mapping", ["check-config", "{f}"],
         cfg(r"^vxe:\n", "vxe:\n  ops:\n    add: [1, 2]\n")),
    Case("config_double_buffer_maybe", 2, r"{f}:\d+: lmu.double_buffer: expected true or false, got 'maybe'",
         ["check-config", "{f}"], cfg(r"double_buffer: true", "double_buffer: maybe")),
    Case("config_efficiency_above_one", 2, r"{f}:\d+: hbm.efficiency: value 2 out of range", ["check-config", "{f}"],
         cfg(r"efficiency: 0.9", "efficiency: 2")),
    Case("config_max_us_zero", 2, r"{f}:\d+: sim.max_us: value 0 out of range", ["check-config", "{f}"],
         {"f": append(CFG, "sim:\n  max_us: 0\n")}),
    Case("config_deep_nesting", 2, r"{f}", ["check-config", "{f}"], {"f": generated(lambda: deep_json(100000), ".yaml")}),
    # A document that expands past kMaxYamlNodes is refused on load, in every YAML reader.
    Case("config_alias_bomb", 2, r"{f}:\d+: .*expands to more than 1000000 nodes", ["check-config", "{f}"],
         {"f": text(alias_bomb())}, timeout=20),
    Case("workload_alias_bomb", 2, r"{f}:\d+: .*expands to more than 1000000 nodes", ["run", "{f}"],
         {"f": text(alias_bomb(head="model: ln_gelu_add\n"))}, timeout=20),
    Case("sweep_alias_bomb", 2, r"{f}:\d+: .*expands to more than 1000000 nodes",
         ["sweep", "{f}", "-o", "{tmp}/out"], {"f": text(alias_bomb(head="base: lpu-small\n"))}, timeout=20),
    Case("set_alias_bomb", 2, r"--set .*expands to more than 1000000 nodes",
         ["check-config", CFG, "--set", "sim={" + alias_bomb().replace("\n", ", ").rstrip(", ") + "}"],
         timeout=20),
    Case("config_hbm_scalar", 2, r"{f}:\d+: hbm: expected a mapping", ["check-config", "{f}"],
         {"f": text("clock_ghz: 1\ndevices: 1\nhbm: 5\n")}),
    Case("config_value_is_map", 2, r"{f}:\d+: clock_ghz: expected a scalar value", ["check-config", "{f}"],
         cfg(r"^clock_ghz: .*", "clock_ghz: {a: 1}")),

    # ---- --set overrides ----
    Case("set_devices_wraps", 2, r"--set devices=4294967297: devices: value 4294967297 out of range",
         ["check-config", CFG, "--set", "devices=4294967297"]),
    Case("set_lanes_wraps_run", 2, r"--set vxe.lanes=-4294967232: vxe.lanes: value -4294967232 out of range",
         ["run", "ln_gelu_add", "--set", "vxe.lanes=-4294967232"]),
    Case("set_energy_negative", 2, r"--set energy.static_mw.hbm=-1: energy.static_mw.hbm: value -1 out of range",
         ["check-config", CFG, "--set", "energy.static_mw.hbm=-1"]),
    Case("set_memory_technology_unknown", 2, r"--set memory.technology=ddr9: memory.technology: expected one of",
         ["run", "ln_gelu_add", "--set", "memory.technology=ddr9"]),
    Case("set_memory_timing_nan", 2, r"--set memory.tCL_ns=.nan: memory.tCL_ns: must be a finite number",
         ["check-config", CFG, "--set", "memory.tCL_ns=.nan"]),
    Case("set_memory_channels_beyond_int", 2, r"memory.channels: hbm.bandwidth_gbps 1e\+06 needs 1e\+09 channels",
         ["check-config", CFG, "--set", "memory.model=banks", "--set", "hbm.bandwidth_gbps=1e6", "--set", "memory.data_rate_mtps=1",
          "--set", "memory.channel_bits=8", "--set", "memory.pseudo_channels=1"]),
    Case("set_memory_banks_without_section", 2, r"{f}.*memory.technology: missing required key",
         ["run", "ln_gelu_add", "--arch", "{f}", "--set", "memory.model=banks"],
         cfg(r"^memory:\n  model: bandwidth\n  technology: hbm2\n", "")),
    Case("set_no_equals", 2, r"--set devices: expected key.path=value", ["check-config", CFG, "--set", "devices"]),
    Case("set_empty_key", 2, r"--set =5: expected key.path=value", ["check-config", CFG, "--set", "=5"]),
    Case("set_empty_path_part", 2, r"--set hbm..channels=2: empty key in path",
         ["check-config", CFG, "--set", "hbm..channels=2"]),
    Case("set_not_a_number", 2, r"--set hbm.bandwidth_gbps=abc: hbm.bandwidth_gbps: expected a number, got 'abc'",
         ["check-config", CFG, "--set", "hbm.bandwidth_gbps=abc"]),
    Case("set_parent_not_map", 2, r"--set clock_ghz.x=1: parent of 'x' is not a map|--set clock_ghz.x=1: 'clock_ghz' is not inside a map",
         ["check-config", CFG, "--set", "clock_ghz.x=1"]),
    Case("set_unknown_key", 2, r"--set hbm.chanels=2: hbm.chanels: unknown key \(did you mean 'channels'",
         ["check-config", CFG, "--set", "hbm.chanels=2"]),
    Case("set_invalid_yaml", 2, r"--set hbm.bandwidth_gbps=\[1: value is not valid YAML",
         ["check-config", CFG, "--set", "hbm.bandwidth_gbps=[1"]),
    Case("set_negative_capacity", 2, r"--set lmu.capacity_kib=-1: lmu.capacity_kib: value -1 out of range",
         ["run", "ln_gelu_add", "--set", "lmu.capacity_kib=-1"]),
    Case("set_duplicate_in_value", 2, r"--set hbm=.*bandwidth_gbps: duplicate key",
         ["check-config", CFG, "--set", "hbm={bandwidth_gbps: 1, bandwidth_gbps: 2}"]),
    Case("set_overflowing_double", 2, r"--set clock_ghz=1e400: clock_ghz: ", ["check-config", CFG, "--set", "clock_ghz=1e400"]),
    Case("set_section_to_scalar", 2, r"--set hbm=3: hbm: expected a mapping", ["check-config", CFG, "--set", "hbm=3"]),

    # ---- workload YAML ----
    Case("workload_duplicate_seq_len", 2, r"{f}:3: seq_len: duplicate key \(first given on line 2\)", ["run", "{f}"],
         {"f": text("model: gpt2\nseq_len: 4\nseq_len: 8\n")}),
    Case("workload_weight_dtype_unknown", 2, r"{f}:2: weight_dtype: expected int8, int4, fp8_e4m3 or none, got 'int3'",
         ["run", "{f}"], {"f": text("model: tiny-llama\nweight_dtype: int3\n")}),
    Case("workload_group_size_not_dividing", 2, r"{f}:3: group_size: group_size 64 does not divide ffn \(down_proj\) = 96",
         ["run", "{f}"], {"f": text("model: tiny-llama\nweight_dtype: int4\ngroup_size: 64\n")}),
    Case("workload_moe_parallel_unknown", 2, r"{f}:2: moe_parallel: expected tensor or expert, got 'data'",
         ["run", "{f}"], {"f": text("model: tiny-moe\nmoe_parallel: data\n")}),
    Case("workload_moe_parallel_dense", 2, r"{f}:2: moe_parallel: goes with experts",
         ["run", "{f}"], {"f": text("model: tiny-llama\nmoe_parallel: expert\n")}),
    Case("workload_expert_capacity_without_ep", 2, r"{f}:2: expert_capacity: goes with moe_parallel: expert",
         ["run", "{f}"], {"f": text("model: tiny-moe\nexpert_capacity: 2\n")}),
    Case("workload_expert_capacity_nan", 2, r"{f}:3: expert_capacity: must be a finite number",
         ["run", "{f}"], {"f": text("model: tiny-moe\nmoe_parallel: expert\nexpert_capacity: .nan\n")}),
    Case("workload_expert_capacity_zero", 2, r"{f}:3: expert_capacity: value 0 out of range; expected 0.01 .. 1000000",
         ["run", "{f}"], {"f": text("model: tiny-moe\nmoe_parallel: expert\nexpert_capacity: 0\n")}),
    Case("workload_experts_not_dividing_devices", 2, r"moe_parallel: expert over devices = 2 needs .*'s experts \(9\) to be a multiple of 2",
         ["run", "{f}", "--tp", "2"],
         {"f": text("model: tiny-moe\nexperts: 9\nexpert_groups: 3\ngroup_topk: 1\nmoe_parallel: expert\n")}),
    Case("workload_graph_weight_dtype", 2, r"{f}:2: weight_dtype: a graph file stores its weights in the dtypes",
         ["run", "{f}"], {"f": text("graph: g.json\nweight_dtype: int4\n")}),
    Case("workload_unknown_model", 2, r"{f}:1: model: unknown model 'gpt5'", ["run", "{f}"], {"f": text("model: gpt5\n")}),
    Case("workload_misspelled_key", 2, r"{f}:2: d_modle: unknown key", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nd_modle: 64\n")}),
    Case("workload_batch_zero", 2, r"{f}:2: batch: value 0 out of range", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nbatch: 0\n")}),
    Case("workload_batch_huge", 2, r"{f}:2: batch: value 1099511627776 out of range", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nbatch: 1099511627776\n")}),
    Case("workload_seq_len_negative", 2, r"{f}:2: seq_len: value -1 out of range", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nseq_len: -1\n")}),
    Case("workload_dtype_int", 2, r"{f}:2: dtype: expected f32, f16 or bf16, got 'i64'", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\ndtype: i64\n")}),
    Case("workload_phase_bogus", 2, r"{f}:2: phase: expected decode or prefill, got 'sideways'", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nphase: sideways\n")}),
    Case("workload_graph_missing", 2, r"{f}:1: graph: no such file", ["run", "{f}"], {"f": text("graph: nope.json\n")}),
    Case("workload_graph_with_model_keys", 2, r"{f}:2: batch: unknown key", ["run", "{f}"],
         {"f": text("graph: nope.json\nbatch: 2\n")}),
    Case("workload_layers_zero", 2, r"{f}:2: layers: value 0 out of range", ["run", "{f}"],
         {"f": text("model: gpt2\nlayers: 0\n")}),
    Case("workload_shape_wraps", 2, r"{f}:2: d_model: value 4294967297 out of range", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nd_model: 4294967297\n")}),
    Case("workload_root_scalar", 2, r"{f}:1: <root>: expected a mapping", ["run", "{f}"], {"f": text("ln_gelu_add\n")}),
    Case("workload_empty", 2, r"{f}.*<root>: expected a mapping", ["run", "{f}"], {"f": text("")}),
    Case("workload_seed_text", 2, r"{f}:2: seed: expected an integer, got 'abc'", ["run", "{f}"],
         {"f": text("model: ln_gelu_add\nseed: abc\n")}),
    Case("workload_long_name", 2, r"{f}:2: name: .*at most 256 characters", ["run", "{f}"],
         {"f": generated(lambda: "model: ln_gelu_add\nname: " + "w" * 50_000_000 + "\n", ".yaml")}),
    # Found by fuzz_workload_yaml: a path component over 255 bytes (ENAMETOOLONG) is no such file.
    Case("workload_graph_name_too_long", 2, r"{f}:1: graph: no such file .*\(\d+ bytes\)", ["run", "{f}"],
         {"f": text("graph: " + "g" * 3000 + ".json\n")}),
    Case("workload_name_with_slash", 2, r"{f}:2: name: ", ["run", "{f}"], {"f": text("model: ln_gelu_add\nname: a/b\n")}),
    Case("workload_is_directory", 2, r"{d}", ["run", "{d}"], {"d": directory()}),
    Case("workload_model_is_list", 2, r"{f}:1: model: expected a scalar value", ["run", "{f}"],
         {"f": text("model: [gpt2]\n")}),
    Case("workload_too_big_for_lmu", 2, r"bytes of local memory", ["run", "ln_gelu_add", "--set", "lmu.capacity_kib=4"]),
    # `lpu generate` lengths (docs/generate.md): the key, its source and the limit.
    Case("workload_gen_len_zero", 2, r"{f}:2: gen_len: value 0 out of range", ["generate", "{f}"],
         {"f": text("model: tiny-opt\ngen_len: 0\n")}),
    Case("workload_prompt_len_negative", 2, r"{f}:2: prompt_len: value -4 out of range", ["generate", "{f}"],
         {"f": text("model: tiny-opt\nprompt_len: -4\n")}),
    Case("workload_gen_len_on_microbenchmark", 2, r"{f}:2: gen_len: unknown key", ["generate", "{f}"],
         {"f": text("model: ln_gelu_add\ngen_len: 3\n")}),
    Case("workload_gen_len_beyond_max_position", 2,
         r"gen_len \({f}\): prompt_len 200 \+ gen_len 100 = 300 tokens is beyond tiny-opt's max_position 256",
         ["generate", "{f}"], {"f": text("model: tiny-opt\nprompt_len: 200\ngen_len: 100\n")}),
    Case("flags_gen_len_zero", 2, r"--gen-len: expected >= 1, got 0", ["generate", "tiny-opt", "--gen-len", "0"]),
    Case("flags_gen_len_negative", 2, r"--gen-len: expected >= 1, got -1", ["generate", "tiny-opt", "--gen-len", "-1"]),
    # `lpu generate -j`: worker processes (docs/generate.md), 1 .. 1024.
    Case("flags_generate_jobs_zero", 2, r"--jobs: Value 0 not in range 1 to 1024",
         ["generate", "tiny-opt", "--gen-len", "4", "--jobs", "0"]),
    Case("flags_generate_jobs_huge", 2, r"--jobs: Value 100000 not in range 1 to 1024",
         ["generate", "tiny-opt", "--gen-len", "4", "-j", "100000"]),
    Case("flags_gen_len_beyond_max_position", 2, r"gen_len \(--gen-len\): .* beyond gpt2's max_position 1024",
         ["generate", "gpt2", "--prompt-len", "1000", "--gen-len", "25"]),
    Case("flags_prompt_len_at_max_position", 2, r"prompt_len \(--prompt-len\): .* beyond opt-1.3b's max_position 2048",
         ["generate", "opt-1.3b", "--prompt-len", "2048", "--gen-len", "1"]),
    Case("set_kv_cache_beyond_hbm", 2,
         r"gen_len: prompt_len 32 \+ gen_len 2016: the last decode step \(context 2046\) needs \d+ bytes .*KV cache 402259968 bytes"
         r".*hbm.capacity_gib = 2.6 GiB .*it would need 2 devices",
         ["generate", "opt-1.3b", "--prompt-len", "32", "--gen-len", "2016", "--set", "hbm.capacity_gib=2.6"]),
    Case("workload_generate_not_an_llm", 2, r"generate: workload softmax is not a built-in LLM", ["generate", "softmax"]),

    # ---- graph JSON ----
    Case("graph_shape_element_count_wraps", 2, r"{f}: node %x: shape \[4294967296, 4294967296\] has too many elements", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4294967296, 4294967296]}', RELU)),
    Case("graph_zero_size_batch_addmm", 2, r"{f}: node %x: shape \[0, 16\] has a zero-size dimension", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [0, 16]}',
            '{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [16, 8]}',
            '{"name": "b", "kind": "parameter", "dtype": "f32", "shape": [8]}',
            '{"name": "y", "kind": "call", "op": "aten.addmm", "inputs": ["b", "x", "w"], "dtype": "f32", "shape": [0, 8]}')),
    Case("graph_relu_chain_100000", 2, r"{f}: nodes: more than 65536 entries", ["run", "{f}"],
         {"f": generated(lambda: relu_chain(100000), ".json")}),
    Case("graph_name_50MB", 2, r"{f}: name: graph name 'aaaa.*\(50000000 bytes\)' must be .*at most 256",
         ["run", "{f}"], {"f": generated(lambda: graph_json([X48, RELU], name="a" * 50_000_000), ".json")}),
    Case("graph_duplicate_name_key", 2, r"{f}: nodes\[0\].name: duplicate key \"name\"", ["run", "{f}"],
         gj('{"name": "x", "name": "x2", "kind": "placeholder", "dtype": "f32", "shape": [4]}', RELU)),
    Case("graph_duplicate_top_key", 2, r"{f}: nodes: duplicate key \"nodes\"", ["run", "{f}"],
         gj(X48, RELU, extra=' "nodes": [],')),
    Case("graph_meta_nested_100000", 2, r"{f}: meta(\.|\[).*JSON nested deeper than 256 levels", ["run", "{f}"],
         gj(X48, RELU, extra=' "meta": {"a": %s},' % deep_json(100000).strip())),
    # Text in a .json file is refused as not JSON, not with an error of the text format's parser.
    Case("graph_not_json", 2, r"graph file {f}: expected a JSON graph, an object \(the name ends in \.json\), found text starting 'this is not json'",
         ["run", "{f}"], {"f": text("this is not json", ".json")}),
    Case("graph_empty_file", 2, r"{f}:", ["run", "{f}"], {"f": text("", ".json")}),
    Case("graph_truncated", 2, r"{f}: invalid JSON", ["run", "{f}"], {"f": text(graph_json([X48, RELU])[:60], ".json")}),
    Case("graph_top_level_array", 2, r"graph file {f}: expected a JSON graph, an object .*found a JSON list", ["run", "{f}"],
         {"f": text("[1, 2, 3]", ".json")}),
    Case("graph_version_99", 2, r"{f}: version: file has format version 99", ["run", "{f}"],
         {"f": text(graph_json([X48, RELU]).replace('"version": 1', '"version": 99'), ".json")}),
    Case("graph_wrong_format", 2, r"{f}: format: expected \"lpu-graph\"", ["run", "{f}"],
         {"f": text(graph_json([X48, RELU]).replace('"lpu-graph"', '"onnx"'), ".json")}),
    Case("graph_missing_nodes", 2, r"{f}: top level: missing 'nodes'", ["run", "{f}"],
         {"f": text('{"format": "lpu-graph", "version": 1, "name": "g", "outputs": []}', ".json")}),
    Case("graph_nodes_not_list", 2, r"{f}: nodes: must be a list", ["run", "{f}"],
         {"f": text('{"format": "lpu-graph", "version": 1, "name": "g", "nodes": 5, "outputs": []}', ".json")}),
    Case("graph_unknown_op", 2, r"{f}: .*%y.*frobnicate", ["run", "{f}"],
         gj(X48, '{"name": "y", "kind": "call", "op": "frobnicate", "inputs": ["x"], "dtype": "f32", "shape": [4, 8]}')),
    Case("graph_dangling_input", 2, r"{f}: .*%y.*%ghost", ["run", "{f}"],
         gj(X48, '{"name": "y", "kind": "call", "op": "relu", "inputs": ["ghost"], "dtype": "f32", "shape": [4, 8]}')),
    Case("graph_cycle", 2, r"{f}: .*cycle", ["run", "{f}"],
         gj(X48, '{"name": "a", "kind": "call", "op": "relu", "inputs": ["y"], "dtype": "f32", "shape": [4, 8]}',
            '{"name": "y", "kind": "call", "op": "relu", "inputs": ["a"], "dtype": "f32", "shape": [4, 8]}')),
    Case("graph_node_twice", 2, r"{f}: node %x: defined twice", ["run", "{f}"], gj(X48, X48, RELU)),
    Case("graph_bad_dtype", 2, r"{f}: .*%x.*unknown dtype 'f128'", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f128", "shape": [4]}', RELU)),
    Case("graph_negative_dim", 2, r"{f}: .*%x.*", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4, -8]}', RELU)),
    Case("graph_shape_not_list", 2, r"{f}: .*%x.*shape", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": "4x8"}', RELU)),
    # Found by fuzz_graph_json: a number nlohmann cannot hold is out_of_range, not a parse error.
    Case("graph_number_overflows", 2, r"{f}: invalid JSON: .*number overflow parsing '555e7277179'", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [555e7277179]}', RELU)),
    Case("graph_dim_float", 2, r"{f}: .*%x.*", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [1e30]}', RELU)),
    Case("graph_unknown_output", 2, r"{f}: .*nothing", ["run", "{f}"], gj(X48, RELU, outputs=("nothing",))),
    Case("graph_addmm_one_input", 2, r"{f}: .*%y.*", ["run", "{f}"],
         gj(X48, '{"name": "y", "kind": "call", "op": "aten.addmm", "inputs": ["x"], "dtype": "f32", "shape": [4, 8]}')),
    Case("graph_node_name_space", 2, r"{f}: nodes\[0\]: node name 'a b' must be", ["run", "{f}"],
         gj('{"name": "a b", "kind": "placeholder", "dtype": "f32", "shape": [4]}', RELU)),
    Case("graph_node_name_long", 2, r"{f}: nodes\[0\]: node name 'nnnn.*\(100000 bytes\)' must be", ["run", "{f}"],
         gj('{"name": "%s", "kind": "placeholder", "dtype": "f32", "shape": [4]}' % ("n" * 100000), RELU)),
    Case("graph_attrs_not_object", 2, r"{f}: .*%y.*attrs", ["run", "{f}"],
         gj(X48, '{"name": "y", "kind": "call", "op": "relu", "inputs": ["x"], "attrs": 5, "dtype": "f32", "shape": [4, 8]}')),
    Case("graph_unknown_node_key", 2, r"{f}: node %x: .*colour", ["run", "{f}"],
         gj('{"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [4], "colour": "red"}', RELU)),

    # ---- sidecar (lpu ref) ----
    Case("sidecar_missing_file", 2, r"sidecar .*nope.bin \(input x\): cannot open", ["ref", "{f}"],
         {"f": with_sidecar([tensor(file="nope.bin")], b"")}),
    Case("sidecar_too_short", 2, r"sidecar .*t.bin \(input x\): needs bytes \[0, 128\) but the file has 16",
         ["ref", "{f}"], {"f": with_sidecar([tensor()], b"\0" * 16)}),
    Case("sidecar_offset_negative", 2, r"{f}: .*offset", ["ref", "{f}"], {"f": with_sidecar([tensor(offset=-64)], b"\0" * 256)}),
    Case("sidecar_offset_overflows", 2, r"sidecar .*t.bin \(input x\): needs bytes", ["ref", "{f}"],
         {"f": with_sidecar([tensor(offset=9223372036854775807 - 64)], b"\0" * 256)}),
    Case("sidecar_wrong_role", 2, r"{f}: .*role", ["ref", "{f}"], {"f": with_sidecar([tensor(role="weights")], b"\0" * 256)}),
    Case("sidecar_type_mismatch", 2, r"{f}: tensors\[0\] \(input x\): type f32\[2, 8\] does not match", ["ref", "{f}"],
         {"f": with_sidecar([tensor(shape=(2, 8))], b"\0" * 256)}),
    Case("sidecar_no_expected", 2, r"graph side: the sidecar index has no expected output0", ["ref", "{f}"],
         {"f": with_sidecar([tensor()], b"\0" * 256, expected=False)}),

    # ---- graph text form (.txt) ----
    Case("text_garbage", 2, r"{f}:1", ["run", "{f}"], {"f": text("hello world\n", ".txt")}),
    Case("text_unknown_op", 2, r"{f}: node %y: unknown op 'frobnicate'", ["run", "{f}"],
         {"f": text("graph g {\n  %x: f32[4] = placeholder\n  %y: f32[4] = frobnicate(%x)\n  output(%y)\n}\n", ".txt")}),
    Case("text_undefined_operand", 2, r"{f}:\d+: .*%ghost", ["run", "{f}"],
         {"f": text("graph g {\n  %x: f32[4] = placeholder\n  %y: f32[4] = relu(%ghost)\n  output(%y)\n}\n", ".txt")}),
    Case("text_empty", 2, r"{f}", ["run", "{f}"], {"f": text("", ".txt")}),
    Case("text_binary", 2, r"{f}", ["run", "{f}"], {"f": text(bytes(range(256)), ".txt")}),
    Case("text_long_name", 2, r"{f}:2: node name '%xxxx.*\(1000000 bytes\)' is longer than 256", ["run", "{f}"],
         {"f": generated(lambda: "graph g {\n  %" + "x" * 1_000_000 + ": f32[4] = placeholder\n}\n", ".txt")}),
    Case("text_shape_wraps", 2, r"{f}:2: shape \[4294967296, 4294967296\] has too many elements", ["run", "{f}"],
         {"f": text("graph g {\n  %x: f32[4294967296, 4294967296] = placeholder\n  %y: f32[4294967296, 4294967296] = relu(%x)\n  output(%y)\n}\n", ".txt")}),

    # ---- assembly text (lpu sim) ----
    # Loops whose trip counts multiply past 10^8 fetches are refused before simulating (the
    # watchdog bounds time, not memory: these grew to bad_alloc under the default 600 s).
    # packed weights (docs/quantisation.md): read only by a gemm naming their format
    Case("asm_packed_format_mismatch", 2, r"{f}:5: reads int4/g64 blocks in buffer w, stored packed as int4/g32",
         ["sim", "{f}"], asm("  sxe.gemm f16 [1, 64, 8] lm:0x400 <- lm:0x0 [64, 1], hbm:0x0 [1, 64] int4/g64\n  halt\n",
                             head=PACKED_HEAD)),
    Case("asm_packed_read_by_dma", 2, r"{f}:5: source reads or writes plain elements in buffer w", ["sim", "{f}"],
         asm("  dma.load f16 [1, 64] lm:0x0 <- hbm:0x0 [64, 1]\n  halt\n", head=PACKED_HEAD)),
    Case("asm_packed_odd_group", 2, r"{f}:2: buffer w: 'int4/g33' is not a packed weight format", ["sim", "{f}"],
         asm("  halt\n", head=PACKED_HEAD.replace("weight int4/g32", "weight int4/g33"))),
    Case("asm_loop_2_40", 2, r"{f}:\d+: the program fetches 2199023255554 instructions", ["sim", "{f}"],
         asm("  loop 1099511627776\n  vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]\n  endloop\n  halt\n"), timeout=60),
    Case("asm_nested_loops_1e6", 2, r"{f}:\d+: the program fetches \d+ instructions with its loops expanded",
         ["sim", "{f}"],
         asm("  loop 1000000\n  loop 1000000\n  vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]\n  endloop\n  endloop\n  halt\n"),
         timeout=60),
    Case("asm_nested_dma_loops_1e6", 2, r"{f}:\d+: the program fetches \d+ instructions", ["sim", "{f}"],
         asm("  loop 1000000\n  loop 1000000\n  dma.load f32 [1, 16] lm:0x0 <- hbm:0x0 [16, 1]\n  endloop\n  endloop\n"
             "  halt\n"), timeout=60),
    Case("asm_loops_2e8_fetches", 2, r"{f}:\d+: the program fetches 200020002 instructions", ["sim", "{f}"],
         asm("  loop 10000\n  loop 10000\n  vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]\n  endloop\n  endloop\n  halt\n"),
         timeout=60),
    Case("asm_hbm_address_1TiB", 2, r"{f}:\d+: .*HBM", ["sim", "{f}", "--set", "hbm.capacity_gib=4"],
         asm_sub(r"<- hbm:0x0 ", "<- hbm:0x10000000000 ")),
    Case("asm_buffer_2_32_squared", 2, r"{f}:2: buffer x: shape .* has too many elements", ["sim", "{f}"],
         {"f": text(ASM_OK.replace(".buffer x hbm:0x0 f32[4, 8]", ".buffer x hbm:0x0 f32[4294967296, 4294967296]"), ".s")}),
    Case("asm_row_stride_huge", 2, r"{f}:\d+: .*", ["sim", "{f}"],
         asm_sub(r"<- hbm:0x0 \[8, 1\]", "<- hbm:0x0 [9223372036854775807, 1]")),
    Case("asm_negative_column_stride_below_lmu", 2, r"{f}:\d+: .*(LMU|local memory)", ["sim", "{f}"],
         asm_sub(r"<- lm:0x0 \[8, 1\]", "<- lm:0x0 [8, -1]")),
    Case("asm_lm_beyond_capacity", 2, r"{f}:\d+: .*(LMU|local memory)", ["sim", "{f}", "--set", "lmu.capacity_kib=1"],
         asm_sub(r"lm:0x100 <-", "lm:0x10000 <-")),
    Case("asm_unknown_instruction", 2, r"{f}:\d+: .*unknown instruction 'vxe'|{f}:\d+: .*unknown", ["sim", "{f}"],
         asm("  frob [4, 8]\n  halt\n")),
    Case("asm_loop_zero", 2, r"{f}:5: .*a loop runs at least once", ["sim", "{f}"], asm("  loop 0\n  endloop\n  halt\n")),
    Case("asm_endloop_without_loop", 2, r"{f}:5: .*endloop without loop", ["sim", "{f}"], asm("  endloop\n  halt\n")),
    Case("asm_loop_without_endloop", 2, r"{f}:\d+: 1 loop\(s\) without endloop", ["sim", "{f}"], asm("  loop 2\n  halt\n")),
    Case("asm_bad_hex", 2, r"{f}:\d+: ", ["sim", "{f}"], asm_sub(r"lm:0x100 <-", "lm:0xZZ <-")),
    Case("asm_missing_program", 2, r"{f}:1: missing .program directive", ["sim", "{f}"], {"f": text("  halt\n", ".s")}),
    Case("asm_empty", 2, r"{f}:1: missing .program directive", ["sim", "{f}"], {"f": text("", ".s")}),
    Case("asm_unknown_dtype", 2, r"{f}:\d+: ", ["sim", "{f}"], asm_sub(r"dma.load f32", "dma.load f128")),
    Case("asm_binary_garbage", 2, r"{f}:\d+: ", ["sim", "{f}"], {"f": text(bytes(range(1, 256)) * 4, ".s")}),
    Case("asm_number_too_large", 2, r"{f}:\d+: ", ["sim", "{f}"],
         asm_sub(r"\[4, 8\] lm:0x100", "[99999999999999999999999, 8] lm:0x100")),
    Case("asm_zero_tile", 2, r"{f}:\d+: .*tile shape must be positive", ["sim", "{f}"],
         asm_sub(r"vxe.relu \[4, 8\]", "vxe.relu [0, 8]")),
    Case("asm_dest_row_stride_below_cols", 2, r"{f}:6: vxe.relu: destination row stride 4 is less than the tile's 8",
         ["sim", "{f}"], asm_sub(r"lm:0x100 <-", "lm:0x100 [4, 1] <-")),
    Case("asm_dest_column_stride", 2, r"{f}:6: vxe.relu: the destination's column stride must be 1, got 2",
         ["sim", "{f}"], asm_sub(r"lm:0x100 <-", "lm:0x100 [16, 2] <-")),
    Case("asm_dest_row_stride_beyond_lmu", 2, r"{f}:6: vxe.relu destination touches local memory", ["sim", "{f}"],
         asm_sub(r"lm:0x100 <-", "lm:0x100 [100000, 1] <-")),
    Case("asm_reduction_dest_row_stride", 2, r"{f}:\d+: vxe.rsum: only vxe.<op> and vxe.mov take a destination row",
         ["sim", "{f}"], asm("  vxe.rsum [4, 8] lm:0x100 [8, 1] <- lm:0x0 [8, 1]\n  halt\n")),
    # ---- fused chains: vxe.OP.POST [=> rRED lm:0xA] (docs/isa.md) ----
    Case("asm_chain_post_op_arity_2", 2, r"{f}:6: vxe.relu.add: post op add takes 2 operands; a post op is unary",
         ["sim", "{f}"], asm_sub(ASM_RELU, "vxe.relu.add [4, 8] lm:0x100 <- lm:0x0 [8, 1]")),
    Case("asm_chain_unknown_post_op", 2, r"{f}:6: vxe.relu.frob: unknown post op 'frob'", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.relu.frob [4, 8] lm:0x100 <- lm:0x0 [8, 1]")),
    Case("asm_chain_post_op_on_mov", 2, r"{f}:6: vxe.mov.exp: only vxe.<op> takes a post op \(.exp\)", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.mov.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1]")),
    Case("asm_chain_row_reduction_on_mov", 2, r"{f}:6: vxe.mov: only vxe.<op> takes a row reduction \(=> rsum\)",
         ["sim", "{f}"], asm_sub(ASM_RELU, "vxe.mov [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0x200")),
    Case("asm_chain_rprod", 2, r"{f}:6: vxe.relu: row reduction => rprod is not one a chain does", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rprod lm:0x200")),
    Case("asm_chain_unknown_reduction", 2, r"{f}:6: vxe.relu: '=>' takes a row reduction .*got 'rfrob'", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rfrob lm:0x200")),
    Case("asm_chain_row_reduction_overlaps_destination", 2,
         r"{f}:6: vxe.exp: the row reduction's column \(=> rsum lm:0x110, \[4, 1\]\) overlaps the destination",
         ["sim", "{f}"], asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0x110")),
    Case("asm_chain_row_reduction_overlaps_source", 2,
         r"{f}:6: vxe.exp: the row reduction's column \(=> rsum lm:0x10, \[4, 1\]\) overlaps the source at lm:0x0",
         ["sim", "{f}"], asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0x10")),
    Case("asm_chain_row_reduction_no_address", 2, r"{f}:6: vxe.exp: '=> rsum' takes the column's address", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum")),
    Case("asm_chain_row_reduction_address_garbage", 2, r"{f}:6: expected an integer", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0xZZ")),
    Case("asm_chain_row_reduction_trailing_text", 2, r"{f}:6: unexpected trailing text", ["sim", "{f}"],
         asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0x200 lm:0x300")),
    Case("asm_chain_row_reduction_beyond_lmu", 2, r"{f}:6: vxe.exp row reduction touches local memory",
         ["sim", "{f}", "--set", "lmu.capacity_kib=1"],
         asm_sub(ASM_RELU, "vxe.exp [4, 8] lm:0x100 <- lm:0x0 [8, 1] => rsum lm:0x400")),
    Case("asm_no_such_file", 2, r"{tmp}/nope.s: cannot open", ["sim", "{tmp}/nope.s"]),
    Case("asm_two_programs_one_device", 2, r"2 programs but lpu-small has devices = 1", ["sim", "{f}", "{f}"],
         {"f": text(ASM_OK, ".s")}),

    # ---- binary programs (.lpubin) ----
    Case("bin_loop_count_zero", 2, r"{f}: .*loop.*at least once", ["sim", "{f}"], {"f": binary(loop_count_zero)}),
    Case("bin_unbalanced_loop", 2, r"{f}: .*without endloop", ["sim", "{f}"], {"f": binary(endloop_to_halt)}),
    Case("bin_dest_row_stride_below_cols", 2, r"{f}: byte \d+: instruction \d+: vxe\.\w+: destination row stride",
         ["sim", "{f}"], {"f": binary(vxe_dest_row_stride_below_cols)}),
    Case("bin_chain_post_op_outside_op_table", 2, r"{f}: byte \d+: instruction \d+: post op index 254 outside the op table",
         ["sim", "{f}"], {"f": binary(vxe_chain_byte(57, 255))}),
    Case("bin_chain_unknown_row_reduction", 2, r"{f}: byte \d+: instruction \d+: unknown row reduction code 9",
         ["sim", "{f}"], {"f": binary(vxe_chain_byte(58, 9))}),
    Case("bin_chain_post_op_on_dma", 2, r"{f}: byte \d+: instruction \d+: dma.load carries a post op or a row reduction",
         ["sim", "{f}"], {"f": binary(dma_load_post_op)}),
    Case("bin_truncated", 2, r"{f}: ", ["sim", "{f}"], {"f": binary(lambda b: b.__delitem__(slice(200, None)), False)}),
    Case("bin_bad_magic", 2, r"{f}: .*not an LPU program", ["sim", "{f}"],
         {"f": binary(lambda b: b.__setitem__(slice(0, 4), b"XXXX"))}),
    Case("bin_empty", 2, r"{f}: ", ["sim", "{f}"], {"f": text(b"", ".lpubin")}),
    Case("bin_wrong_version", 2, r"{f}: .*unsupported version 99", ["sim", "{f}"],
         {"f": binary(lambda b: struct.pack_into("<H", b, 4, 99))}),
    Case("bin_checksum_mismatch", 2, r"{f}: .*checksum mismatch", ["sim", "{f}"],
         {"f": binary(lambda b: b.__setitem__(-1, b[-1] ^ 0xFF), False)}),
    Case("bin_instruction_count_huge", 2, r"{f}: ", ["sim", "{f}"],
         {"f": binary(lambda b: struct.pack_into("<I", b, 24, 0xFFFFFFFF))}),
    Case("bin_text_renamed", 2, r"{f}: .*not an LPU program", ["sim", "{f}"], {"f": text(ASM_OK, ".lpubin")}),

    # ---- sweep files and flags ----
    Case("sweep_million_points", 0, r"1000000 points", ["sweep", "{f}", "-o", "{tmp}/out", "--dry-run"],
         sweep(million_points())),
    Case("sweep_over_a_million_points", 2, r"{f}:4: axes: the sweep has .* points; the limit is 1000000", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(million_points().replace("stop: 1000,", "stop: 1001,").replace("stop: 999,", "stop: 1000,"))),
    Case("sweep_workload_name_50MB", 2, r"{f}:\d+: workloads(\[0\])?: .*(bytes|no such)", ["sweep", "{f}", "-o", "{tmp}/out"],
         {"f": generated(lambda: "workloads: [" + "w" * 50_000_000 + "]\nfusion: [none]\n", ".yaml")}),
    Case("sweep_out_is_regular_file", 2, r"-o {o}: .*not a directory", ["sweep", "{f}", "-o", "{o}"],
         dict(sweep(SWEEP), o=regular_file())),
    Case("sweep_out_below_regular_file", 2, r"{o}/sub", ["sweep", "{f}", "-o", "{o}/sub"], dict(sweep(SWEEP), o=regular_file())),
    Case("sweep_timeout_negative", 2, r"--timeout: .*-1", ["sweep", "{f}", "-o", "{tmp}/out", "--timeout", "-1"], sweep(SWEEP)),
    Case("sweep_timeout_nan", 2, r"--timeout: .*nan", ["sweep", "{f}", "-o", "{tmp}/out", "--timeout", "nan"], sweep(SWEEP)),
    Case("sweep_timeout_inf", 2, r"--timeout: .*inf", ["sweep", "{f}", "-o", "{tmp}/out", "--timeout", "inf"], sweep(SWEEP)),
    Case("sweep_json_empty", 2, r"--json: .*empty", ["sweep", "{f}", "-o", "{tmp}/out", "--json", ""], sweep(SWEEP)),
    Case("flags_json_dash_run", 2, r"--json -: writing to standard output is not supported", ["run", "ln_gelu_add", "--json", "-"]),
    Case("flags_json_dash_sim", 2, r"--json -: writing to standard output", ["sim", "{f}", "--json", "-"], {"f": text(".program p\n.kernel 0 k\nhalt\n", ".s")}),
    Case("sweep_jobs_zero", 2, r"-j: expected >= 1, got 0", ["sweep", "{f}", "-j", "0", "-o", "{tmp}/out"], sweep(SWEEP)),
    Case("sweep_jobs_text", 2, r"-j", ["sweep", "{f}", "-j", "many", "-o", "{tmp}/out"], sweep(SWEEP)),
    Case("sweep_duplicate_key", 2, r"{f}:\d+: fusion: duplicate key", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP + "fusion: [greedy]\n")),
    Case("sweep_duplicate_axis", 2, r"{f}:\d+: axes.hbm.bandwidth_gbps: duplicate key", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP + "  hbm.bandwidth_gbps: [64]\n")),
    Case("sweep_axis_typo", 2, r"{f}:4: axes.hbm.bandwith_gbps: .*unknown key", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("bandwidth", "bandwith"))),
    Case("sweep_axis_value_bad", 2, r"{f}:4: axes.hbm.bandwidth_gbps", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("[128, 256]", "[128, -5]"))),
    Case("sweep_axis_value_wraps", 2, r"{f}:4: axes.lmu.capacity_kib", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("hbm.bandwidth_gbps: [128, 256]", "lmu.capacity_kib: [4294967552]"))),
    Case("sweep_axis_empty", 2, r"{f}:4: axes.hbm.bandwidth_gbps", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("[128, 256]", "[]"))),
    Case("sweep_range_step_zero", 2, r"{f}:4: axes.lmu.capacity_kib", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("hbm.bandwidth_gbps: [128, 256]", "lmu.capacity_kib: {start: 64, stop: 128, step: 0}"))),
    Case("sweep_range_backwards", 2, r"{f}:4: axes.lmu.capacity_kib.step: step 64 never gets from 64 to 0",
         ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("hbm.bandwidth_gbps: [128, 256]", "lmu.capacity_kib: {start: 64, stop: 0, step: 64}"))),
    Case("sweep_range_num_zero", 2, r"{f}:4: axes.lmu.capacity_kib", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("hbm.bandwidth_gbps: [128, 256]", "lmu.capacity_kib: {start: 64, stop: 128, num: 0}"))),
    Case("sweep_zip_mismatch", 2, r"{f}:\d+: ", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("axes:", "combine: zip\naxes:") + "  lmu.capacity_kib: [64, 128, 256]\n")),
    Case("sweep_unknown_policy", 2, r"{f}:2: fusion.*magic", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("[none]", "[magic]"))),
    Case("sweep_base_missing", 2, r"{f}:1: base", ["sweep", "{f}", "-o", "{tmp}/out"], sweep("base: nope\n" + SWEEP)),
    Case("sweep_no_workloads", 2, r"{f}:1: workloads", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("[ln_gelu_add]", "[]"))),
    Case("sweep_unknown_workload", 2, r"{f}:1: workloads.*nope", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SWEEP.replace("[ln_gelu_add]", "[nope]"))),
    Case("sweep_root_list", 2, r"{f}:1: <root>", ["sweep", "{f}", "-o", "{tmp}/out"], sweep("- a\n")),
    Case("sweep_no_file", 2, r"{tmp}/nope.yaml: cannot open", ["sweep", "{tmp}/nope.yaml", "-o", "{tmp}/out"]),

    # ---- serving sweeps: serve.* keys, their values, and what a serving sweep cannot run ----
    Case("sweep_serve_key_in_run_sweep", 2, r"{f}:5: axes.serve.rate: serving keys need `command: serve`",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SWEEP + "  serve.rate: [1]\n")),
    Case("sweep_serve_unknown_key", 2, r"{f}:4: axes.serve.rat: unknown serving key 'serve.rat'; expected one of: serve.rate",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("serve.rate", "serve.rat"))),
    Case("sweep_serve_output_key", 2, r"{f}:3: set.serve.json: unknown serving key", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SERVE_SWEEP.replace("axes:", "set: {serve.json: x.json}\naxes:"))),
    Case("sweep_serve_rate_text", 2, r"{f}:4: axes.serve.rate: value fast rejected by lpu serve: .*expected a finite number",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("[10, 20]", "[10, fast]"))),
    Case("sweep_serve_rate_zero", 2, r"{f}:4: axes.serve.rate: value 0 rejected by lpu serve: rate: expected > 0",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("[10, 20]", "[10, 0]"))),
    Case("sweep_serve_rate_nan", 2, r"{f}:4: axes.serve.rate: value .nan rejected by lpu serve",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("[10, 20]", "[.nan]"))),
    Case("sweep_serve_requests_fraction", 2, r"{f}:5: axes.serve.requests: .*expected a whole number",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP + "  serve.requests: [2.5]\n")),
    Case("sweep_serve_bool_text", 2, r"{f}:3: set.serve.chunked_prefill: .*expected true or false, got 'maybe'",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("axes:", "set: {serve.chunked_prefill: maybe}\naxes:"))),
    Case("sweep_serve_unknown_router", 2, r"{f}:5: axes.serve.router: value magic rejected by lpu serve: router: 'magic'",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP + "  serve.router: [round-robin, magic]\n")),
    Case("sweep_serve_chunk_zero", 2, r"{f}:5: axes.serve.chunk_size: .*chunk_size must be >= 1, got 0",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP + "  serve.chunk_size: [0, 64]\n")),
    Case("sweep_serve_slo_negative", 2, r"{f}:3: set.serve.slo_tpot_ms: rejected by lpu serve",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("axes:", "set: {serve.slo_tpot_ms: -5}\naxes:"))),
    Case("sweep_serve_zero_link_with_prefill_pool", 2,
         r"{f}:\d+: axes: the combination .*serve.prefill_replicas=1, serve.link_gbps=0 is rejected by lpu serve: link",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP + "  serve.prefill_replicas: [0, 1]\n  serve.link_gbps: [0]\n")),
    Case("sweep_serve_trace_missing", 2, r"{f}:3: set.serve.trace_file: rejected by lpu serve: .*nope.csv",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("axes:", "set: {serve.trace_file: nope.csv}\naxes:"))),
    Case("sweep_serve_not_a_decoder", 2, r"{f}:2: workloads\[0\]: workload ln_gelu_add is not a built-in LLM",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("tiny-llama", "ln_gelu_add"))),
    Case("sweep_serve_search_policy", 2, r"{f}:3: fusion\[0\]: 'search': serving prices every step with a fixed policy",
         ["sweep", "{f}", "-o", "{tmp}/out"], sweep(SERVE_SWEEP.replace("axes:", "fusion: [search]\naxes:"))),
    Case("sweep_serve_traces", 2, r"{f}:3: traces: a serving sweep records no traces", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SERVE_SWEEP.replace("axes:", "traces: all\naxes:"))),
    Case("sweep_unknown_command", 2, r"{f}:1: command: expected run or serve, got 'generate'", ["sweep", "{f}", "-o", "{tmp}/out"],
         sweep(SERVE_SWEEP.replace("command: serve", "command: generate"))),

    # ---- serve: traces, keys, requests the model or the KV cache cannot take ----
    Case("serve_requests_1e15", 2, r"requests: at most 10000000 generated requests",
         ["serve", "tiny-llama", "--requests", "1000000000000000"]),
    Case("serve_replicas_1e12", 2, r"--replicas / --prefill-replicas: at most 4096",
         ["serve", "tiny-llama", "--replicas", "1000000000000"]),
    # Binary data where a text format is expected: said in those words (a NUL cut the parser's
    # message short), and control bytes an error quotes are escaped.
    Case("serve_trace_binary", 2, r"{f}: binary data \(a NUL byte on line 1\), expected a request trace",
         ["serve", "tiny-llama", "--trace-file", "{f}"], {"f": text(bytes(range(256)), ".csv")}),
    Case("asm_nul_on_line_2", 2, r"{f}: binary data \(a NUL byte on line 2\), expected assembly text",
         ["sim", "{f}"], {"f": text(b".program p\nhal\x00t\n", ".s")}),
    Case("config_self_referential_alias", 2, r"{f}:\d+: memory.*expands to more than 1000000 nodes", ["check-config", "{f}"],
         {"f": text("memory: &a [*a]\n")}),
    Case("config_nul_byte", 2, r"{f}: binary data \(a NUL byte on line 2\), expected YAML",
         ["check-config", "{f}"], {"f": text(b"name: x\nclock_ghz: 1\x00\n")}),
    Case("graph_op_with_escaped_nul", 2, r"{f}: .*fro\\x00b\\x1bnicate",
         ["run", "{f}"], {"f": text('{"format": "lpu-graph", "version": 1, "name": "g", "nodes": [' + X48 + ','
                                    ' {"name": "y", "kind": "call", "op": "fro\\u0000b\\u001bnicate", "inputs": ["x"],'
                                    ' "dtype": "f32", "shape": [4, 8]}], "outputs": ["y"]}', ".json")}),
    Case("serve_trace_negative_arrival", 2, r"{f}:2: column 1 \(arrival_s\)", ["serve", "tiny-llama", "--trace-file", "{f}"],
         {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "-1,10,10\n", ".csv")}),
    Case("serve_trace_nan_arrival", 2, r"{f}:2: column 1 \(arrival_s\).*nan", ["serve", "tiny-llama", "--trace-file", "{f}"],
         {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "nan,10,10\n", ".csv")}),
    Case("serve_trace_decreasing_arrival", 2, r"{f}:3: .*before the previous", ["serve", "tiny-llama", "--trace-file", "{f}"],
         {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "1,10,10\n0.5,10,10\n", ".csv")}),
    Case("serve_trace_zero_tokens", 2, r"{f}:2: column 2 \(prompt_tokens\)", ["serve", "tiny-llama", "--trace-file", "{f}"],
         {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "1,0,10\n", ".csv")}),
    Case("serve_trace_jsonl_negative_output", 2, r"{f}:1: key 'output_tokens'", ["serve", "tiny-llama", "--trace-file", "{f}"],
         {"f": text('{"arrival_s": 0, "prompt_tokens": 4, "output_tokens": -3}\n', ".jsonl")}),
    Case("serve_trace_past_max_position", 2, r"{f}:2: request 0: .*300 tokens, more than tiny-llama's max_position 256",
         ["serve", "tiny-llama", "--trace-file", "{f}"], {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "1,200,100\n", ".csv")}),
    Case("serve_trace_directory", 2, r"trace file {d}: cannot open: it is a directory", ["serve", "tiny-llama", "--trace-file", "{d}"], {"d": directory()}),
    Case("serve_generated_past_max_position", 2, r"request 0 \(generated\).*max_position 4096",
         ["serve", "llama2-7b", "--arch", "lpu-asic", "--prompt", "4090", "--output", "10"]),
    Case("serve_kv_never_fits", 2, r"request 0 .*KV cache \(1599 tokens, .*can never fit .*needs about 2 devices",
         ["serve", "opt-1.3b", "--set", "hbm.capacity_gib=3.1", "--prompt", "1500", "--output", "100"]),
    Case("serve_weights_leave_no_kv", 2, r"opt-1.3b on lpu-small x 1 device.*no room for the KV cache.*devices would hold it",
         ["serve", "opt-1.3b", "--set", "hbm.capacity_gib=2.5"]),
    # --cost-cache names the memo serve replaces: a file that is not one is the user's, untouched.
    Case("serve_cost_cache_foreign_text", 2, r"--cost-cache {f}: exists and is not a step-cost memo.*refusing to overwrite",
         ["serve", "tiny-llama", "--requests", "3", "--cost-cache", "{f}"], {"f": text("root:x:0:0:root:/root:/bin/bash\n", "")},
         check=lambda paths: None if open(paths["f"]).read() == "root:x:0:0:root:/root:/bin/bash\n" else "the file was changed"),
    Case("serve_cost_cache_foreign_json", 2, r"--cost-cache {f}: exists and is not a step-cost memo",
         ["serve", "tiny-llama", "--requests", "3", "--cost-cache", "{f}"], {"f": text('{"points": [1, 2]}\n', ".json")},
         check=lambda paths: None if open(paths["f"]).read() == '{"points": [1, 2]}\n' else "the file was changed"),
    Case("serve_rate_zero", 2, r"--rate: expected a number > 0, got 0", ["serve", "tiny-llama", "--rate", "0"]),
    Case("serve_rate_nan", 2, r"--rate: expected a number > 0, got nan", ["serve", "tiny-llama", "--rate", "nan"]),
    Case("serve_rate_negative", 2, r"--rate: expected a number > 0, got -2", ["serve", "tiny-llama", "--rate", "-2"]),
    Case("serve_slo_ttft_zero", 2, r"--slo-ttft-ms: expected a number > 0", ["serve", "tiny-llama", "--slo-ttft-ms", "0"]),
    Case("serve_slo_tpot_inf", 2, r"--slo-tpot-ms: expected a number > 0", ["serve", "tiny-llama", "--slo-tpot-ms", "inf"]),
    Case("serve_unknown_router", 2, r"router: 'magic'", ["serve", "tiny-llama", "--router", "magic"]),
    Case("serve_unknown_arrivals", 2, r"--arrivals: 'weibull'", ["serve", "tiny-llama", "--arrivals", "weibull"]),
    Case("serve_zero_requests", 2, r"requests: expected >= 1", ["serve", "tiny-llama", "--requests", "0"]),
    Case("serve_zero_block_size", 2, r"--block-size: expected >= 1", ["serve", "tiny-llama", "--block-size", "0"]),
    Case("serve_zero_seqs", 2, r"--max-seqs: expected >= 1, got 0", ["serve", "tiny-llama", "--max-seqs", "0"]),
    Case("serve_zero_replicas", 2, r"--replicas: expected >= 1", ["serve", "tiny-llama", "--replicas", "0"]),
    Case("serve_zero_link", 2, r"--link-gbps: expected a number > 0", ["serve", "tiny-llama", "--prefill-replicas", "1", "--link-gbps", "0"]),
    Case("serve_not_a_decoder", 2, r"ln_gelu_add is not a built-in LLM", ["serve", "ln_gelu_add"]),
    Case("serve_search_policy", 2, r"--fusion search: serving prices every step with a fixed policy", ["serve", "tiny-llama", "--fusion", "search"]),
    Case("serve_find_rate_with_trace", 2, r"--find-rate: .*trace file", ["serve", "tiny-llama", "--find-rate", "--trace-file", "{f}"],
         {"f": text("arrival_s,prompt_tokens,output_tokens\n" + "1,10,10\n", ".csv")}),
    Case("serve_prefill_gpu_without_pool", 2, r"--prefill-gpu: the GPU pool needs --prefill-replicas", ["serve", "tiny-llama", "--prefill-gpu", "h200"]),
    Case("serve_prefill_gpu_unknown", 2, r"--prefill-gpu 'nope': no such GPU config .*h200",
         ["serve", "tiny-llama", "--prefill-gpu", "nope", "--prefill-replicas", "1"]),
    Case("serve_prefill_gpu_directory", 2, r"GPU config {d}: cannot open: it is a directory", ["serve", "tiny-llama", "--prefill-gpu", "{d}", "--prefill-replicas", "1"],
         {"d": directory()}),
    Case("serve_prefill_gpu_nan_key", 2, r"{f}:\d+: peak_tflops", ["serve", "tiny-llama", "--prefill-gpu", "{f}", "--prefill-replicas", "1"],
         {"f": sub("configs/gpus/h200.yaml", r"^peak_tflops: .*$", "peak_tflops: .nan")}),
    Case("serve_json_below_file", 2, r"--json {o}/s.json: cannot write", ["serve", "tiny-llama", "--json", "{o}/s.json"],
         {"o": regular_file()}),

    # ---- report inputs ----
    Case("report_json_nested_100000", 2, r"{f}: .*nested", ["report", "{f}", "-o", "{tmp}/rep"],
         {"f": generated(lambda: deep_json(100000), ".json")}),
    Case("report_not_json", 2, r"{f}: cannot read JSON", ["report", "{f}", "-o", "{tmp}/rep"], {"f": text("{oops", ".json")}),
    Case("report_no_input", 2, r"{tmp}/none.json: no such file", ["report", "{tmp}/none.json", "-o", "{tmp}/rep"]),
    Case("report_empty_directory", 2, r"{d}: not a sweep directory", ["report", "{d}", "-o", "{tmp}/rep"], {"d": directory()}),
    Case("report_out_is_regular_file", 2, r"-o {o}: .*not a directory", ["report", "{f}", "-o", "{o}"],
         {"f": text('{"workload": "w", "fusion": "none"}', ".json"), "o": regular_file()}),

    # ---- output flags: unwritable places ----
    Case("flags_run_json_below_file", 2, r"--json {o}/x.json: cannot write", ["run", "ln_gelu_add", "--json", "{o}/x.json"],
         {"o": regular_file()}),
    Case("flags_run_trace_below_file", 2, r"--trace {o}/t.json: cannot write", ["run", "ln_gelu_add", "--trace", "{o}/t.json"],
         {"o": regular_file()}),
    Case("flags_run_vcd_below_file", 2, r"--vcd {o}/w.vcd: cannot write", ["run", "ln_gelu_add", "--vcd", "{o}/w.vcd"],
         {"o": regular_file()}),
    Case("flags_run_vcd_unwritable_dir", 2, r"--vcd /proc/lpu.vcd: cannot write", ["run", "ln_gelu_add", "--vcd", "/proc/lpu.vcd"]),
    Case("flags_run_json_unwritable_dir", 2, r"--json /proc/lpu.json: cannot write",
         ["run", "ln_gelu_add", "--json", "/proc/lpu.json"]),
    Case("flags_sim_vcd_below_file", 2, r"--vcd {o}/w.vcd: cannot write", ["sim", "{f}", "--vcd", "{o}/w.vcd"],
         {"f": text(ASM_OK, ".s"), "o": regular_file()}),
    Case("flags_compile_out_below_file", 2, r"-o {o}/ir: cannot write|{o}/ir.*cannot", ["compile", "ln_gelu_add", "-o", "{o}/ir"],
         {"o": regular_file()}),
    Case("flags_compare_report_below_file", 2, r"--report {o}/rep: cannot write: {o} is not a directory",
         ["compare", "ln_gelu_add", "--report", "{o}/rep"], {"o": regular_file()}),
    Case("flags_compare_json_below_file", 2, r"--json {o}/c.json: cannot write",
         ["compare", "ln_gelu_add", "--json", "{o}/c.json"], {"o": regular_file()}),
    Case("flags_run_json_empty", 2, r"--json: .*empty", ["run", "ln_gelu_add", "--json", ""]),
    Case("flags_unknown_flag", 2, r"--frobnicate", ["run", "ln_gelu_add", "--frobnicate"]),
    Case("flags_unknown_policy", 2, r"unknown fusion policy", ["run", "ln_gelu_add", "--fusion", "magic"]),
    Case("flags_arch_name_too_long", 2, r"config 'aaaa.*\(3000 bytes\)': no such file", ["run", "ln_gelu_add", "--arch", "a" * 3000]),
    Case("flags_unknown_arch", 2, r"config 'nope': no such file", ["run", "ln_gelu_add", "--arch", "nope"]),
    Case("flags_on_unsupported_bogus", 2, r"--on-unsupported: expected error or break, got 'maybe'",
         ["run", "ln_gelu_add", "--on-unsupported", "maybe"]),
    Case("flags_unsupported_ops_unknown", 2, r"frobnicate", ["run", "ln_gelu_add", "--unsupported-ops", "frobnicate"]),
    Case("flags_emit_unknown", 2, r"--emit: unknown artefact 'bogus'", ["compile", "ln_gelu_add", "--emit", "bogus"]),
    Case("flags_list_bogus", 2, r"list: expected ops, workloads or configs, got 'bogus'", ["list", "bogus"]),
    Case("flags_no_subcommand", 2, r"", []),
]
