// Architecture configuration: every number about the hardware, loaded from YAML and
// validated on load (unknown keys, missing required keys, out-of-range values are
// InputErrors naming file, line and key). Two layers, as in DRAMSys: the YAML schema is read
// into this resolved struct, with documented defaults for optional keys (docs/config.md).
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lpu {

struct VxeOpTiming {
  int latency = 4;  // cycles from issue to first result
  double ii = 1.0;  // cycles per group of `lanes` elements (initiation interval)
};

struct ArchConfig {
  std::string name;
  std::string file;
  double clock_ghz = 1.0;
  int devices = 1;

  struct Hbm {
    double bandwidth_gbps = 0;  // GB/s (1e9 bytes/s), all channels together
    int channels = 0;
    double capacity_gib = 0;
    double latency_ns = 100;     // access latency added to every transfer
    int burst_bytes = 64;        // minimum access granule; shorter runs waste the rest
    int interleave_bytes = 256;  // address interleaving granule across channels
    double efficiency = 0.9;     // sustained fraction of peak bandwidth (refresh, bank conflicts)
  } hbm;

  // The device memory's timing model (docs/memory.md). `bandwidth` is the model of `hbm`
  // above (per-channel service at bandwidth x efficiency); `banks` serves every access through
  // channels, pseudo-channels, bank groups and banks with row buffers, activation windows,
  // refresh and read/write turnaround, from the timing of a named technology
  // (configs/memory/TECHNOLOGY.yaml), any key of which the section may override. `hbm` stays
  // the capacity and the bandwidth model's description under both models.
  struct Memory {
    enum class Model { Bandwidth, Banks };
    enum class PagePolicy { Open, Closed };
    Model model = Model::Bandwidth;
    std::string technology;     // empty: the config has no memory section
    double data_rate_mtps = 0;  // per data pin, MT/s
    int channel_bits = 0;       // data bus width of one channel
    int pseudo_channels = 1;    // independent halves of a channel, each with its own banks
    int bank_groups = 1, banks_per_group = 1;
    int row_bytes = 0;     // row buffer (page) of one bank of one pseudo-channel
    int burst_length = 0;  // beats per column access
    double tRCD_ns = 0, tRP_ns = 0, tCL_ns = 0, tRAS_ns = 0, tRRD_ns = 0, tFAW_ns = 0;
    double tWTR_ns = 0, tRTW_ns = 0, tREFI_ns = 0, tRFC_ns = 0;
    PagePolicy page_policy = PagePolicy::Open;
    std::string address_mapping;  // fields Ro Ba Bg Co Pc Ch, most significant first
    // Channels of the device: given, or the count whose peak is nearest hbm.bandwidth_gbps
    // (which it must match within 5%).
    int channels = 0;
    bool configured() const { return !technology.empty(); }
    int pseudo_channel_bits() const { return channel_bits / pseudo_channels; }
    int burst_bytes() const { return burst_length * pseudo_channel_bits() / 8; }
    double channel_gbps() const { return data_rate_mtps * 1e-3 * channel_bits / 8; }
    double peak_gbps() const { return channel_gbps() * channels; }
  } memory;

  struct Dma {
    int engines = 2;        // transfers in flight at once
    int setup_cycles = 16;  // descriptor processing per transfer
    int queue_depth = 8;
  } dma;

  struct Lmu {
    int capacity_kib = 0;
    int banks = 16;
    int bytes_per_cycle = 256;  // port bandwidth shared by DMA and VXE
    bool double_buffer = true;  // compiler may split LMU into two tile buffers
  } lmu;

  struct Vxe {
    int lanes = 0;
    int queue_depth = 8;
    std::map<std::string, VxeOpTiming> ops;  // by op name (add, exp, rsum, mov, ...)
    VxeOpTiming timing(const std::string& op) const;
    // Timing of exp, div and reciprocal: the closed form, or the Verilator RTL of the
    // special-function pipeline inside the device simulation (sim/model/vxe_rtl.h; builds with
    // LPU_WITH_RTL only).
    enum class Model { Approx, Rtl };
    Model model = Model::Approx;
    // The engine runs chains, `vxe.OP.POST ... => rRED` (docs/isa.md): a unary op and a row
    // reduction in the pass of an element-wise op. false: such an instruction is refused and
    // the compiler emits each op on its own (CodegenOptions::vector_chains).
    bool chains = true;
  } vxe;

  struct Sxe {
    // Timing model of the matrix engine: the closed form (sim/model/sxe_timing.h) or the
    // Verilator RTL of a MAC tree inside the device simulation (sim/model/sxe_rtl.h; builds
    // with LPU_WITH_RTL only, else simulate() says so with an InputError).
    enum class Model { Approx, Rtl };
    int mac_trees = 0;
    int lanes = 0;
    int pipeline_depth = 8;
    int queue_depth = 4;
    // sxe.gemm weight streams in flight at once: the stream unit requests the next gemm's
    // weights while the MAC trees still work on earlier ones (the trees stay one resource:
    // MAC work runs in issue order). 1 = one gemm at a time. The RTL model runs one at a time.
    int streams = 1;
    Model model = Model::Approx;
    // Packed weights (workload weight_dtype, docs/quantisation.md): pipeline stages the
    // dequantiser on the input path adds, and how many narrow weights one lane multiplies per
    // cycle, by format (1: the trees run at their f16 rate, so packing saves bytes, not MAC
    // time). By format name (graph/types.h, quant_format_name); absent: 1.
    int dequant_cycles = 1;
    std::map<std::string, int> packed_lanes;
    int packed_lanes_of(const std::string& format) const {
      auto it = packed_lanes.find(format);
      return it == packed_lanes.end() ? 1 : it->second;
    }
  } sxe;

  struct Isu {
    int issue_cycles = 1;          // cycles to decode and issue one instruction
    bool chaining = false;         // a VXE consumer may start on an SXE producer's first results
    bool weight_prefetch = false;  // an sxe.gemm may stream its weights before its activation is ready
    int prefetch_depth = 1;        // with weight_prefetch: sxe.gemms at most in flight waiting on their activation
    // Issue window: instructions fetched ahead of the oldest unissued one. 1 = strictly in
    // program order; W > 1 lets a later instruction of another engine issue past a blocked
    // one (never past an earlier unissued instruction it conflicts with, nor past one of its
    // own engine).
    int lookahead = 1;
  } isu;

  struct Esl {
    double latency_ns = 500;      // device-to-device sync link: one token or message
    double bandwidth_gbps = 100;  // GB/s per link
  } esl;

  struct Host {
    double link_gbps = 32;  // host link bandwidth for graph breaks (GB/s)
    double latency_us = 5;  // one host round trip
    double op_us = 10;      // host time per fallback op
  } host;

  // Energy per counted event and static power (docs/config.md, "energy"; docs/energy.md).
  // Optional as a section: without it energy is not modelled (`configured` false) and the
  // statistics carry none; with it every key is required, so no energy number hides in code.
  struct Energy {
    bool configured = false;
    double hbm_read_pj_per_bit = 0, hbm_write_pj_per_bit = 0;  // per bit a channel moves (burst-rounded)
    double sxe_pj_per_mac = 0;                                 // per useful MAC of an sxe.gemm
    double sxe_pj_per_dequant = 0;                             // per packed weight dequantised (optional key)
    std::map<std::string, double> vxe_pj_per_op;               // by op class: energy_vxe_classes()
    double lmu_read_pj_per_byte = 0, lmu_write_pj_per_byte = 0;
    double esl_pj_per_bit = 0;                // per bit sent over the ESL
    std::map<std::string, double> static_mw;  // by engine: energy_engines()
    double vxe_pj(const std::string& op_class) const;
    double static_w(const std::string& engine) const;
  } energy;

  struct Sim {
    double max_us = 1e9;      // watchdog: simulated time limit (1000 s: a serving step on a small
                              // device, a long prefill batch, runs for tens of seconds)
    double max_wall_s = 600;  // watchdog: wall-clock time limit of one simulation
    // Decoder layers whose machine state repeats are simulated once and the rest skipped
    // (sim/model/layer_memo.h): the same statistics, faster. Off: every layer simulated.
    bool memoize = true;
  } sim;

  // The sections of engines outside the built-in ones (ConfigSectionRegistration below), by
  // section and key; empty without any.
  std::map<std::string, std::map<std::string, double>> extensions;
  double extension(const std::string& section, const std::string& key) const;

  double period_ps() const { return 1000.0 / clock_ghz; }
  double hbm_bytes_per_cycle() const { return hbm.bandwidth_gbps / clock_ghz; }
  int64_t lmu_bytes() const { return static_cast<int64_t>(lmu.capacity_kib) * 1024; }
};

// The config section of an engine outside the built-in ones (docs/adding-an-engine.md):
// numeric keys, each with its default and range. A static object of ConfigSectionRegistration
// in the engine's module makes every config accept the section (optional, as are its keys) and
// read it into ArchConfig::extensions[name].
struct ConfigSection {
  struct Key {
    std::string name;
    double fallback, lo, hi;
  };
  std::string name;
  std::vector<Key> keys;
};
struct ConfigSectionRegistration {
  explicit ConfigSectionRegistration(ConfigSection section);
};

// Loads `path`, applying `overrides` ("key.path=value", as from --set) before validation.
ArchConfig load_arch_config(const std::string& path, const std::vector<std::string>& overrides = {});
ArchConfig load_arch_config_string(const std::string& yaml, const std::string& name,
                                   const std::vector<std::string>& overrides = {});

struct YamlDoc;
// One config text checked against many override sets (a sweep validates every axis value and
// combination against its base): the text is parsed once, and each load() resolves a copy of
// that document with its overrides. load(o) returns what load_arch_config_string(yaml, name, o)
// returns and throws the same InputError, message included; it only skips parsing the text again.
class PreparsedArchConfig {
 public:
  PreparsedArchConfig(std::string yaml, std::string name);
  ArchConfig load(const std::vector<std::string>& overrides) const;
  // load(fixed + varying), cheaper when successive calls give the same `fixed` and assign the
  // same keys in `varying` (the values of one axis): the copy with `fixed` applied is kept and
  // only those keys are assigned again, as a later --set replaces an earlier one.
  ArchConfig load(const std::vector<std::string>& fixed, const std::vector<std::string>& varying) const;

 private:
  std::string yaml_, name_;
  std::shared_ptr<const YamlDoc> doc_;  // null when the text does not parse (load() then throws that)
  // The kept copy: doc_ with work_fixed_ applied, then assignments to work_keys_.
  mutable std::shared_ptr<YamlDoc> work_;
  mutable std::vector<std::string> work_fixed_, work_keys_;
};

// Accepts a path, or a name of a file in configs/ ("lpu-small" -> configs/lpu-small.yaml).
std::string resolve_config_path(const std::string& name_or_path);
std::string default_config_name();

nlohmann::json arch_to_json(const ArchConfig& a);
// The VXE op classes energy is given for: the op table's classes (alu, transcendental, divide:
// ops/scalar_ops.h), reductions and moves: "alu", "transcendental", "divide", "reduce", "mov".
const std::vector<std::string>& energy_vxe_classes();
// The engines energy is split over, in report order: "hbm", "sxe", "vxe", "lmu", "dma", "esl", "isu".
const std::vector<std::string>& energy_engines();
const char* sxe_model_name(ArchConfig::Sxe::Model m);
const char* memory_model_name(ArchConfig::Memory::Model m);
// The technologies configs/memory/ describes (file stems, sorted).
std::vector<std::string> memory_technologies();
// A technology's preset alone (channels 0: the caller sets how many), validated as a config's
// memory section would be; an InputError for a name configs/memory/ does not have.
ArchConfig::Memory load_memory_technology(const std::string& name);

}  // namespace lpu
