#include "sweep.h"

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
#include <sstream>
#include <thread>

#include "jobs.h"
#include "proc.h"
#include "progress.h"
#include "support/error.h"
#include "sweep_store.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

using ojson = nlohmann::ordered_json;

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

}  // namespace

nlohmann::json SweepSummary::to_json() const {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& [id, msg] : failures) f.push_back({{"point_id", id}, {"error", msg}});
  nlohmann::json b = nlohmann::json::array();
  for (const auto& r : best) b.push_back(nlohmann::json::parse(r.dump()));
  return {{"sweep", name},   {"dir", dir},         {"points", points},
          {"skipped", skipped}, {"ran", ran},      {"ok", ok},
          {"failed", failed}, {"wall_s", wall_s},  {"results_csv", dir + "/" + stem + ".csv"},
          {"results_jsonl", dir + "/" + stem + ".jsonl"}, {"failures", f}, {"fastest", b}};
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& opts, std::ostream& out) {
  if (opts.jobs < 1) throw InputError("-j: need at least 1 job");
  auto t0 = Clock::now();
  const std::string dir = opts.out_dir;
  const Shard& shard = opts.shard;
  const nlohmann::json manifest = sweep_manifest(spec);
  const std::string hash = manifest["sweep_hash"];
  // Shards of one sweep may share DIR; shards of another sweep may not (their rows could
  // never be merged). A whole sweep may still resume after an edit (docs/sweeps.md).
  if (shard.active()) {
    std::string had = manifest_hash(dir);
    if (!had.empty() && had != hash)
      throw InputError(strcat(dir, " holds results of sweep ", had, "; ", spec.file, " is sweep ", hash,
                              " (a different sweep, or the file changed): use another -o directory"));
  }
  fs::create_directories(dir);
  DirLock lock(dir, shard);

  std::vector<std::string> axis_keys;
  for (const auto& a : spec.axes) axis_keys.push_back(a.key);
  ResultStore store(dir, identity_columns(axis_keys), opts.resume, "results" + shard.suffix());
  for (const auto& n : store.notes()) out << "note: " << n << "\n";
  if (shard.active())
    for (const auto& row : store.all_rows())
      if (row.value("sweep_hash", "") != hash)
        throw InputError(strcat(store.jsonl_path(), ": holds rows of sweep ", row.value("sweep_hash", "(none)"),
                                "; this is sweep ", hash, ": use another -o directory"));

  write_atomically(dir + "/manifest.json", manifest.dump(2) + "\n");
  if (fs::absolute(spec.file) != fs::absolute(dir + "/sweep.yaml")) write_atomically(dir + "/sweep.yaml", read_text(spec.file));
  // Children write here, and the parent moves what it keeps. Leftovers are from a killed
  // sweep (its children died with it: die_with_parent), so with the lock held they can go.
  const std::string tmp = dir + "/.tmp" + shard.suffix();
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  if (spec.traces != "none") fs::create_directories(dir + "/traces");

  std::vector<size_t> pending;
  std::vector<SweepPoint> all_points = expand_points(spec);
  std::vector<SweepPoint> points;  // this shard's (all of them when not sharded)
  for (size_t i : shard_point_indices(all_points, shard)) points.push_back(std::move(all_points[i]));
  for (size_t i = 0; i < points.size(); ++i)
    if (!store.finished().count(points[i].id)) pending.push_back(i);

  SweepSummary sum;
  sum.name = spec.name;
  sum.dir = dir;
  sum.points = points.size();
  sum.stem = "results" + shard.suffix();
  if (shard.active()) sum.shard = shard.text();
  sum.skipped = points.size() - pending.size();
  if (sum.skipped) out << "resuming: " << sum.skipped << " of " << points.size() << " points already in " << dir << "\n";
  const std::string exe = opts.exe.empty() ? self_exe() : opts.exe;

  Progress progress(out, points.size(), sum.skipped, opts.progress_bar);
  std::map<pid_t, Running> running;
  ExitWatch watch;
  size_t next = 0, done = 0, failed_now = 0, seq = 0;

  auto start = [&](size_t pi) {
    const SweepPoint& p = points[pi];
    Running r;
    r.point = pi;
    std::string stem = strcat(tmp, "/", ::getpid(), "-", seq++);
    r.json = stem + ".json";
    r.err = stem + ".err";
    ChildSpec c;
    c.argv = {exe, "run", spec.workloads[p.workload].file, "--arch", spec.base};
    for (const auto& s : point_sets(spec, p)) c.argv.insert(c.argv.end(), {"--set", s});
    c.argv.insert(c.argv.end(), {"--fusion", p.policy, "--json", r.json});
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
    watch.add(pid);
    running[pid] = r;
  };

  auto finish = [&](const Running& r, const ChildExit& ex) {
    const SweepPoint& p = points[r.point];
    double wall = seconds_since(r.start);
    nlohmann::json run;
    std::string error;
    // The loop checks timeouts at least every 100 ms; a point that overran but exited before the
    // check (a busy machine) has still broken its limit.
    if (r.timed_out || (opts.timeout_s > 0 && wall > opts.timeout_s)) {
      error = strcat("timed out after ", opts.timeout_s, " s (--timeout)");
    } else if (!ex.ok()) {
      error = error_message(read_text(r.err), ex.describe());
    } else {
      try {
        run = nlohmann::json::parse(read_text(r.json));
      } catch (const nlohmann::json::exception& e) {
        error = strcat("exit 0 but no statistics JSON (", e.what(), ")");
      }
    }
    bool ok = error.empty();
    std::string trace;
    if (ok && !r.trace.empty() && fs::exists(r.trace_tmp)) {
      fs::rename(r.trace_tmp, dir + "/" + r.trace);
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
    id.push_back({"sweep_hash", hash});
    store.append(make_row(id, ok ? &run : nullptr));
    for (const auto& f : {r.json, r.err, r.trace_tmp})
      if (!f.empty()) fs::remove(f);
    ++done;
    if (!ok) {
      ++failed_now;
      progress.message("point " + p.id + " failed: " + error);
    }
  };

  while (next < pending.size() || !running.empty()) {
    bool reaped = false;
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = running.find(pid);
      if (it == running.end()) continue;  // not a point (cannot happen: we start no others)
      Running r = it->second;
      running.erase(it);
      watch.remove(pid);
      finish(r, decode_wait_status(status));
      reaped = true;
    }
    if (opts.timeout_s > 0)
      for (auto& [cpid, r] : running)
        if (!r.timed_out && seconds_since(r.start) > opts.timeout_s) {
          ::kill(cpid, SIGKILL);
          r.timed_out = true;
        }
    while (next < pending.size() && running.size() < static_cast<size_t>(opts.jobs)) start(pending[next++]);
    progress.update(done, failed_now, running.size(), reaped);
    // Sleeps until a point exits; wakes at least every 100 ms for timeouts and the bar.
    if (!reaped) watch.wait(100);
  }
  progress.update(done, failed_now, 0, true);
  progress.finish();
  store.close();
  fs::remove_all(tmp);

  // Totals over every point of this sweep file, including those run before a --resume.
  std::map<std::string, const ojson*> by_id;
  for (const auto& row : store.all_rows()) by_id[row["point_id"].get<std::string>()] = &row;
  std::map<std::pair<std::string, std::string>, const ojson*> best;
  for (const auto& p : points) {
    auto it = by_id.find(p.id);
    if (it == by_id.end()) continue;
    const ojson& row = *it->second;
    if (row.value("status", "") != "ok") {
      ++sum.failed;
      sum.failures.push_back({p.id, row.value("error", "")});
      continue;
    }
    ++sum.ok;
    auto key = std::make_pair(row.value("workload", ""), row.value("fusion", ""));
    if (row.contains("latency_us") && (!best.count(key) || row["latency_us"] < (*best[key])["latency_us"]))
      best[key] = &row;
  }
  for (const auto& [k, row] : best) {
    ojson b = {{"workload", k.first}, {"fusion", k.second}, {"latency_us", (*row)["latency_us"]}};
    for (const auto& a : spec.axes) b[a.key] = (*row)[a.key];
    sum.best.push_back(b);
  }
  sum.ran = done;
  sum.wall_s = seconds_since(t0);
  return sum;
}

int sweep_dry_run(const std::string& file, const SweepOptions& opts) {
  SweepSpec spec = load_sweep_file(file);
  std::vector<SweepPoint> points = expand_points(spec);
  const std::vector<size_t> owned = shard_point_indices(points, opts.shard);
  const size_t mine = owned.size();
  std::cout << "sweep " << spec.name << " (hash " << sweep_hash(spec) << "): " << points.size() << " points = "
            << spec.workloads.size() << " workload(s) x " << spec.policies.size() << " policy(ies) x "
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
  std::cout << "dry run: nothing was run or written (drop --dry-run to run them into " << opts.out_dir << ")\n";
  return 0;
}

int sweep_command(const std::string& file, const SweepOptions& opts, const std::string& json) {
  SweepSpec spec = load_sweep_file(file);
  SweepSummary s = run_sweep(spec, opts, std::cout);
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f", s.wall_s);
  std::cout << "sweep " << s.name << (s.shard.empty() ? "" : " shard " + s.shard) << ": " << s.points << " points, " << s.ok << " ok, " << s.failed << " failed ("
            << s.ran << " run now, " << s.skipped << " done before) in " << wall << " s with -j " << opts.jobs << "\n";
  if (!s.best.empty()) {
    std::vector<std::string> header = {"workload", "fusion", "fastest latency_us"};
    for (const auto& a : spec.axes) header.push_back(a.key);
    std::vector<std::vector<std::string>> rows;
    for (const auto& b : s.best) {
      std::vector<std::string> r;
      for (const auto& [k, v] : b.items())
        r.push_back(v.is_number_float() && k == "latency_us" ? strcat(std::fixed, std::setprecision(3), v.get<double>())
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
