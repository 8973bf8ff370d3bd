#include "sweep/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "jobs/jobs.h"
#include "process/proc.h"
#include "process/progress.h"
#include "support/error.h"
#include "sweep/sweep_serve.h"
#include "sweep/sweep_store.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

using ojson = nlohmann::ordered_json;

// `lpu serve`'s exit status when the watchdog stopped an overloaded run: it still wrote what it
// measured (its `truncated` says so), and in a serving sweep that is the point's result.
constexpr int kServeTruncated = 3;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The child's stderr as one line: the reason a point failed.
std::string error_message(const std::string& stderr_text, const std::string& fallback) {
  std::string msg;
  std::stringstream in(stderr_text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) msg += (msg.empty() ? "" : " | ") + line;
  }
  constexpr size_t kMax = 2000;
  if (msg.size() > kMax) msg = "..." + msg.substr(msg.size() - kMax);
  return msg.empty() ? fallback : fallback + ": " + msg;
}

// File names for a point's trace: readable, and unique through a hash of the point id.
std::string trace_name(const std::string& workload, const std::string& policy, const std::string& id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  std::string base = workload + "-" + policy;
  for (char& c : base)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return base + "-" + std::string(hex, 8) + ".json";
}

struct Running {
  size_t point;
  Clock::time_point start;
  std::string json, err, trace_tmp, trace;
  bool timed_out = false;
};

// Holds DIR/.lock so two sweeps never append to the same files.
class DirLock {
 public:
  DirLock(const std::string& dir, const Shard& shard) {
    std::string p = dir + "/.lock" + shard.suffix();
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InputError(strcat("cannot create ", p, ": ", std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw InputError(strcat(dir, " is in use by another running sweep",
                              shard.active() ? " (shard " + shard.text() + ")" : std::string()));
    }
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// One local sweep (or shard) in its phases: prepare DIR (lock, result store, manifest, scratch),
// plan the points still without a result, run them as child processes N at a time (start,
// reap, time out, record), and summarise every point of the sweep file.
class LocalSweep {
 public:
  LocalSweep(const SweepSpec& spec, const SweepOptions& opts, std::ostream& out)
      : spec_(spec), opts_(opts), out_(out), dir_(opts.out_dir), shard_(opts.shard) {}
  SweepSummary run();

 private:
  void prepare();
  void plan();
  void start(size_t pi);
  void finish(const Running& r, const ChildExit& ex);
  void run_points();
  void summarise();

  const SweepSpec& spec_;
  const SweepOptions& opts_;
  std::ostream& out_;
  const std::string dir_;
  const Shard& shard_;
  std::string hash_, tmp_, exe_;
  nlohmann::json manifest_;
  std::unique_ptr<DirLock> lock_;
  std::unique_ptr<ResultStore> store_;
  std::vector<SweepPoint> points_;  // this shard's (all of them when not sharded)
  std::vector<size_t> pending_;
  SweepSummary sum_;
  std::unique_ptr<Progress> progress_;
  std::map<pid_t, Running> running_;
  ExitWatch watch_;
  size_t done_ = 0, failed_now_ = 0, seq_ = 0;
};

// DIR locked, its result store opened (checked against this sweep), manifest and sweep file
// written, the children's scratch directory made.
void LocalSweep::prepare() {
  const std::string& dir = dir_;
  manifest_ = sweep_manifest(spec_);
  hash_ = manifest_["sweep_hash"].get<std::string>();
  // Shards of one sweep may share DIR; shards of another sweep may not (their rows could
  // never be merged). A whole sweep may still resume after an edit (docs/sweeps.md).
  if (shard_.active()) {
    std::string had = manifest_hash(dir);
    if (!had.empty() && had != hash_)
      throw InputError(strcat(dir, " holds results of sweep ", had, "; ", spec_.file, " is sweep ", hash_,
                              " (a different sweep, or the file changed): use another -o directory"));
  }
  fs::create_directories(dir);
  lock_ = std::make_unique<DirLock>(dir, shard_);
  std::vector<std::string> axis_keys;
  for (const auto& a : spec_.axes) axis_keys.push_back(a.key);
  store_ = std::make_unique<ResultStore>(dir, identity_columns(axis_keys), opts_.resume, "results" + shard_.suffix());
  for (const auto& n : store_->notes()) out_ << "note: " << n << "\n";
  if (shard_.active())
    for (const auto& row : store_->all_rows())
      if (row.value("sweep_hash", "") != hash_)
        throw InputError(strcat(store_->jsonl_path(), ": holds rows of sweep ", row.value("sweep_hash", "(none)"),
                                "; this is sweep ", hash_, ": use another -o directory"));
  write_atomically(dir + "/manifest.json", manifest_.dump(2) + "\n");
  if (fs::absolute(spec_.file) != fs::absolute(dir + "/sweep.yaml"))
    write_atomically(dir + "/sweep.yaml", read_text(spec_.file));
  // Children write here, and the parent moves what it keeps. Leftovers are from a killed
  // sweep (its children died with it: die_with_parent), so with the lock held they can go.
  tmp_ = dir + "/.tmp" + shard_.suffix();
  fs::remove_all(tmp_);
  fs::create_directories(tmp_);
  if (spec_.traces != "none") fs::create_directories(dir + "/traces");
}

// This shard's points, those without a result, and the summary's fixed fields.
void LocalSweep::plan() {
  std::vector<SweepPoint> all_points = expand_points(spec_);
  for (size_t i : shard_point_indices(all_points, shard_)) points_.push_back(std::move(all_points[i]));
  for (size_t i = 0; i < points_.size(); ++i)
    if (!store_->finished().count(points_[i].id)) pending_.push_back(i);
  sum_.name = spec_.name;
  sum_.dir = dir_;
  sum_.points = points_.size();
  sum_.stem = "results" + shard_.suffix();
  if (shard_.active()) sum_.shard = shard_.text();
  sum_.skipped = points_.size() - pending_.size();
  if (sum_.skipped)
    out_ << "resuming: " << sum_.skipped << " of " << points_.size() << " points already in " << dir_ << "\n";
  exe_ = opts_.exe.empty() ? self_exe() : opts_.exe;
  progress_ = std::make_unique<Progress>(out_, points_.size(), sum_.skipped, opts_.progress_bar);
}

// The child's command line: `lpu run W --arch BASE --set k=v... --fusion P --json TMP`, or in a
// serving sweep `lpu serve W --arch BASE --set k=v... [serve flags] --fusion P --json TMP`.
std::vector<std::string> point_argv(const SweepSpec& spec, const SweepPoint& p, const std::string& exe,
                                    const std::string& json) {
  std::vector<std::string> argv = {exe, spec.command, spec.workloads[p.workload].file, "--arch", spec.base};
  const std::vector<std::string> sets = point_sets(spec, p);
  for (const auto& s : sets)
    if (!is_serve_key(s)) argv.insert(argv.end(), {"--set", s});
  if (spec.serving())
    for (const auto& f : serve_flags(sets, spec.base_dir)) argv.push_back(f);
  argv.insert(argv.end(), {"--fusion", p.policy, "--json", json});
  return argv;
}

// Point `pi` as a child `lpu run` (or `lpu serve`), writing its statistics (and trace) into the
// scratch directory.
void LocalSweep::start(size_t pi) {
  const SweepSpec& spec = spec_;
  const SweepPoint& p = points_[pi];
  Running r;
  r.point = pi;
  std::string stem = strcat(tmp_, "/", ::getpid(), "-", seq_++);
  r.json = stem + ".json";
  r.err = stem + ".err";
  ChildSpec c;
  c.argv = point_argv(spec, p, exe_, r.json);
  if (spec.traces == "all" || (spec.traces == "reference" && p.arch_point == 0)) {
    r.trace_tmp = stem + ".trace.json";
    r.trace = "traces/" + trace_name(spec.workloads[p.workload].name, p.policy, p.id);
    c.argv.insert(c.argv.end(), {"--trace", r.trace_tmp});
  }
  c.stdout_path = "/dev/null";
  c.stderr_path = r.err;
  c.die_with_parent = true;  // a killed sweep leaves no orphans writing into DIR
  r.start = Clock::now();
  pid_t pid = spawn_child(c);
  watch_.add(pid);
  running_[pid] = r;
}

// A point's child has exited: its row (statistics, or the error) goes into the store.
void LocalSweep::finish(const Running& r, const ChildExit& ex) {
  const SweepSpec& spec = spec_;
  const SweepPoint& p = points_[r.point];
  double wall = seconds_since(r.start);
  nlohmann::json run;
  std::string error;
  // The loop checks timeouts at least every 100 ms; a point that overran but exited before the
  // check (a busy machine) has still broken its limit.
  if (r.timed_out || (opts_.timeout_s > 0 && wall > opts_.timeout_s)) {
    error = strcat("timed out after ", opts_.timeout_s, " s (--timeout)");
  } else if (!ex.ok() && !(spec.serving() && ex.code == kServeTruncated && !ex.signal && fs::exists(r.json))) {
    error = error_message(read_text(r.err), ex.describe());
  } else {
    try {
      run = nlohmann::json::parse(read_text(r.json));
    } catch (const nlohmann::json::exception& e) {
      error = strcat("exit 0 but no statistics JSON (", e.what(), ")");
    }
    // A serving point's row holds its summary, not every request and step series (hundreds of
    // kB per point): `lpu serve` of the point's settings gives those.
    if (spec.serving() && run.is_object())
      for (const char* bulky : {"requests", "replicas"}) run.erase(bulky);
  }
  bool ok = error.empty();
  std::string trace;
  if (ok && !r.trace.empty() && fs::exists(r.trace_tmp)) {
    fs::rename(r.trace_tmp, dir_ + "/" + r.trace);
    trace = r.trace;
  }
  std::vector<std::pair<std::string, nlohmann::json>> id = {
      {"point_id", p.id},
      {"status", ok ? "ok" : "failed"},
      {"exit_code", ex.signal ? nlohmann::json(nullptr) : nlohmann::json(ex.code)},
      {"error", error},
      {"workload", spec.workloads[p.workload].name},
      {"fusion", p.policy}};
  for (size_t i = 0; i < spec.axes.size(); ++i) id.push_back({spec.axes[i].key, scalar_to_json(p.values[i])});
  id.push_back({"wall_s", std::round(wall * 1000) / 1000});
  id.push_back({"trace", trace});
  id.push_back({"sweep_hash", hash_});
  store_->append(make_row(id, ok ? &run : nullptr));
  for (const auto& f : {r.json, r.err, r.trace_tmp})
    if (!f.empty()) fs::remove(f);
  ++done_;
  if (!ok) {
    ++failed_now_;
    progress_->message("point " + p.id + " failed: " + error);
  }
}

// At most -j points at a time until every pending one has finished.
void LocalSweep::run_points() {
  size_t next = 0;
  while (next < pending_.size() || !running_.empty()) {
    bool reaped = false;
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = running_.find(pid);
      if (it == running_.end()) continue;  // not a point (cannot happen: we start no others)
      Running r = it->second;
      running_.erase(it);
      watch_.remove(pid);
      finish(r, decode_wait_status(status));
      reaped = true;
    }
    if (opts_.timeout_s > 0)
      for (auto& [cpid, r] : running_)
        if (!r.timed_out && seconds_since(r.start) > opts_.timeout_s) {
          ::kill(cpid, SIGKILL);
          r.timed_out = true;
        }
    while (next < pending_.size() && running_.size() < static_cast<size_t>(opts_.jobs)) start(pending_[next++]);
    progress_->update(done_, failed_now_, running_.size(), reaped);
    // Sleeps until a point exits; wakes at least every 100 ms for timeouts and the bar.
    if (!reaped) watch_.wait(100);
  }
  progress_->update(done_, failed_now_, 0, true);
  progress_->finish();
  store_->close();
  fs::remove_all(tmp_);
}

// Totals over every point of this sweep file, including those run before a --resume.
void LocalSweep::summarise() {
  std::map<std::string, const ojson*> by_id;
  for (const auto& row : store_->all_rows()) by_id[row["point_id"].get<std::string>()] = &row;
  std::map<std::pair<std::string, std::string>, const ojson*> best;
  // The best point per workload and policy: the fastest run, or the serving run of the highest
  // goodput (requests/s meeting both SLOs).
  const std::string metric = spec_.serving() ? kGoodputColumn : "latency_us";
  auto better = [&](const ojson& a, const ojson& b) {
    return spec_.serving() ? a[metric] > b[metric] : a[metric] < b[metric];
  };
  for (const auto& p : points_) {
    auto it = by_id.find(p.id);
    if (it == by_id.end()) continue;
    const ojson& row = *it->second;
    if (row.value("status", "") != "ok") {
      ++sum_.failed;
      sum_.failures.push_back({p.id, row.value("error", "")});
      continue;
    }
    ++sum_.ok;
    auto key = std::make_pair(row.value("workload", ""), row.value("fusion", ""));
    if (row.contains(metric) && row[metric].is_number() && (!best.count(key) || better(row, *best[key])))
      best[key] = &row;
  }
  sum_.metric = metric;
  for (const auto& [k, row] : best) {
    ojson b = {{"workload", k.first}, {"fusion", k.second}, {metric, (*row)[metric]}};
    for (const auto& a : spec_.axes) b[a.key] = (*row)[a.key];
    sum_.best.push_back(b);
  }
  sum_.ran = done_;
}

SweepSummary LocalSweep::run() {
  if (opts_.jobs < 1) throw InputError("-j: need at least 1 job");
  auto t0 = Clock::now();
  prepare();
  plan();
  run_points();
  summarise();
  sum_.wall_s = seconds_since(t0);
  return sum_;
}

}  // namespace

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& opts, std::ostream& out) {
  return LocalSweep(spec, opts, out).run();
}

nlohmann::json SweepSummary::to_json() const {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& [id, msg] : failures) f.push_back({{"point_id", id}, {"error", msg}});
  nlohmann::json b = nlohmann::json::array();
  for (const auto& r : best) b.push_back(nlohmann::json::parse(r.dump()));
  return {{"sweep", name},
          {"dir", dir},
          {"points", points},
          {"skipped", skipped},
          {"ran", ran},
          {"ok", ok},
          {"failed", failed},
          {"wall_s", wall_s},
          {"results_csv", dir + "/" + stem + ".csv"},
          {"results_jsonl", dir + "/" + stem + ".jsonl"},
          {"failures", f},
          {metric == kGoodputColumn ? "highest_goodput" : "fastest", b}};
}

int sweep_dry_run(const std::string& file, const SweepOptions& opts) {
  SweepSpec spec = load_sweep_file(file);
  std::vector<SweepPoint> points = expand_points(spec);
  const std::vector<size_t> owned = shard_point_indices(points, opts.shard);
  const size_t mine = owned.size();
  std::cout << "sweep " << spec.name << " (hash " << sweep_hash(spec) << "): " << points.size()
            << " points = " << spec.workloads.size() << " workload(s) x " << spec.policies.size() << " policy(ies) x "
            << arch_points(spec).size() << " config point(s)";
  if (opts.shard.active()) std::cout << "; shard " << opts.shard.index << "/" << opts.shard.count << " has " << mine;
  std::cout << "\n";
  size_t shown = 0;
  for (size_t i : owned) {
    if (shown == 10) break;
    std::cout << "  " << points[i].id << "\n";
    ++shown;
  }
  if (mine > shown) std::cout << "  ... and " << (mine - shown) << " more\n";
  // A serving sweep's points run another command: show the first one's, as it would run.
  if (spec.serving() && !owned.empty()) {
    std::cout << "each point runs `lpu serve`; the first:";
    for (const auto& a : point_argv(spec, points[owned.front()], "lpu", "TMP.json")) std::cout << " " << a;
    std::cout << "\n";
  }
  std::cout << "dry run: nothing was run or written (drop --dry-run to run them into " << opts.out_dir << ")\n";
  return 0;
}

int sweep_command(const std::string& file, const SweepOptions& opts, const std::string& json) {
  SweepSpec spec = load_sweep_file(file);
  SweepSummary s = run_sweep(spec, opts, std::cout);
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f", s.wall_s);
  std::cout << "sweep " << s.name << (s.shard.empty() ? "" : " shard " + s.shard) << ": " << s.points << " points, "
            << s.ok << " ok, " << s.failed << " failed (" << s.ran << " run now, " << s.skipped << " done before) in "
            << wall << " s with -j " << opts.jobs << "\n";
  if (!s.best.empty()) {
    const bool goodput = s.metric == kGoodputColumn;
    std::vector<std::string> header = {"workload", "fusion", goodput ? "highest goodput_rps" : "fastest latency_us"};
    for (const auto& a : spec.axes) header.push_back(a.key);
    std::vector<std::vector<std::string>> rows;
    for (const auto& b : s.best) {
      std::vector<std::string> r;
      for (const auto& [k, v] : b.items())
        r.push_back(v.is_number_float() && k == s.metric ? strcat(std::fixed, std::setprecision(3), v.get<double>())
                                                         : csv_cell(v));
      rows.push_back(r);
    }
    std::cout << format_table(header, rows);
  }
  std::cout << "results: " << s.dir << "/" << s.stem << ".csv, " << s.dir << "/" << s.stem << ".jsonl\n";
  if (!json.empty()) {
    fs::path p(json);
    if (p.has_parent_path()) fs::create_directories(p.parent_path());
    std::ofstream(json) << s.to_json().dump(2) << "\n";
  }
  if (s.failed) {
    std::cerr << s.failed << " point(s) failed; their errors are in the error column of the results\n";
    return 1;
  }
  return 0;
}

}  // namespace lpu
