#include "sweep/sweep_slurm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "process/proc.h"
#include "support/error.h"
#include "sweep/slurm_client.h"
#include "sweep/sweep_layout.h"
#include "sweep/sweep_merge.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A value that goes into an #SBATCH line: one plain token (no spaces, quotes, newlines).
void check_token(const std::string& flag, const std::string& v) {
  static const std::regex ok(R"([A-Za-z0-9_.:,+=@%/-]+)");
  if (!std::regex_match(v, ok))
    throw InputError(
        strcat(flag, " '", v, "': expected one word of letters, digits and _.:,+=@%/- (it goes into an #SBATCH line)"));
}

std::string hms(double s) {
  long t = std::lround(s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

// Rows finished so far in the shard files, read incrementally (only bytes appended since the
// last look; a partial last line waits for its '\n').
class RowCounter {
 public:
  void scan(const std::string& dir, int shards) {
    for (const auto& f : find_shard_files(dir)) {
      if (f.shard.count != shards) continue;
      auto& st = files_[f.jsonl];
      std::ifstream in(f.jsonl, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(st.offset));
      std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      size_t pos = 0;
      for (size_t nl; (nl = chunk.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        std::string line = chunk.substr(pos, nl - pos);
        if (line.empty()) continue;
        ++rows;
        if (line.find("\"status\":\"ok\"") == std::string::npos) ++failed;
      }
      st.offset += pos;
    }
  }
  size_t rows = 0, failed = 0;

 private:
  struct State {
    size_t offset = 0;
  };
  std::map<std::string, State> files_;
};

std::string last_line(const std::string& path) {
  std::string text = read_text_file(path), last;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!trim(line).empty()) last = trim(line);
  return last;
}

// One `lpu sweep --backend slurm` in its phases: validate the flags, read what DIR holds, plan
// the shards still missing points, write the sbatch script, submit it (or watch what an earlier
// submission left running), watch the tasks, report the failed ones, merge and summarise.
class SlurmSweep {
 public:
  SlurmSweep(const std::string& file, const SweepOptions& so, const SlurmOptions& sl) : file_(file), so_(so), sl_(sl) {}
  int run(const std::string& json);

 private:
  void validate();
  void read_state();
  void plan();
  std::string script() const;
  void submit(const std::string& script);
  void watch();
  nlohmann::json report_failed_tasks();
  int summarise(const nlohmann::json& failed_tasks, const std::string& json);

  const std::string& file_;
  const SweepOptions& so_;
  const SlurmOptions& sl_;
  std::string dir_, sdir_, jobs_path_, sbatch_, hash_;
  SweepSpec spec_;
  nlohmann::json manifest_, jobs_;
  size_t points_ = 0, missing_ = 0;
  bool existed_ = false;
  int shards_ = 0;
  std::vector<int> todo_;           // the shards that still have points without a result
  std::vector<std::string> watch_;  // job ids to watch
};

// Everything that can be wrong with the input is checked before DIR is touched.
void SlurmSweep::validate() {
  if (so_.jobs < 1) throw InputError("-j: need at least 1 CPU per task");
  if (sl_.array_size < 0) throw InputError(strcat("--array-size ", sl_.array_size, ": expected a positive task count"));
  if (!sl_.partition.empty()) check_token("--partition", sl_.partition);
  if (!sl_.time.empty()) check_token("--time", sl_.time);
  if (!sl_.mem.empty()) check_token("--mem", sl_.mem);
  dir_ = fs::absolute(so_.out_dir).lexically_normal().string();
  if (dir_.find_first_of(" \t\n'\"\\$`") != std::string::npos)
    throw InputError("-o " + so_.out_dir +
                     ": a Slurm results directory may not contain spaces, quotes, $ or backslashes "
                     "(it goes into #SBATCH lines)");
  if (fs::exists(dir_) && !fs::is_directory(dir_))
    throw InputError("-o " + so_.out_dir + ": exists and is not a directory");
  if (!sl_.dry_run) {
    sbatch_ = find_program("sbatch");
    if (sbatch_.empty())
      throw InputError(
          "--backend slurm: sbatch not found in PATH; run on a Slurm login node (or install slurm-client), "
          "or use the local backend");
  }
  spec_ = load_sweep_file(file_);
  manifest_ = sweep_manifest(spec_);
  hash_ = manifest_["sweep_hash"].get<std::string>();
  points_ = manifest_["points"].get<size_t>();
}

// What DIR holds already: results of this sweep (else refused), the submissions, the split.
void SlurmSweep::read_state() {
  sdir_ = dir_ + "/slurm";
  jobs_path_ = sdir_ + "/jobs.json";
  const std::string& dir = dir_;
  existed_ = fs::exists(dir);
  bool have =
      fs::exists(jobs_path_) || fs::exists(dir + "/results.jsonl") || (existed_ && !find_shard_files(dir).empty());
  if (have && !so_.resume)
    throw InputError(dir +
                     " already holds sweep results; pass --resume to continue that sweep, or choose another -o "
                     "directory");
  std::string had = existed_ ? manifest_hash(dir) : "";
  if (!had.empty() && had != hash_)
    throw InputError(strcat(dir, " holds results of sweep ", had, "; ", file_, " is sweep ", hash_,
                            " (a different sweep, or the file changed): use another -o directory"));
  jobs_ = {{"sweep_hash", hash_}, {"shards", 0}, {"submissions", nlohmann::json::array()}};
  if (fs::exists(jobs_path_)) {
    try {
      jobs_ = nlohmann::json::parse(read_text_file(jobs_path_));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(strcat(jobs_path_, ": not JSON (", e.what(), ")"));
    }
  }
  int shards = jobs_.value("shards", 0);
  if (shards == 0 && existed_)
    for (const auto& f : find_shard_files(dir)) shards = f.shard.count;  // shards run by hand (--shard)
  if (shards == 0)
    shards = static_cast<int>(
        std::min<size_t>(sl_.array_size ? static_cast<size_t>(sl_.array_size) : 100, std::max<size_t>(points_, 1)));
  else if (sl_.array_size && sl_.array_size != shards)
    std::cout << "note: " << dir << " is split into " << shards << " shards; --array-size " << sl_.array_size
              << " ignored on --resume\n";
  if (existed_)
    for (const auto& f : find_shard_files(dir))
      if (f.shard.count != shards)
        throw InputError(strcat(f.jsonl, ": a shard of a split into ", f.shard.count, ", but ", dir, " is split into ",
                                shards, "; use another -o directory"));
  shards_ = shards;
}

// The shards that still have points without a result.
void SlurmSweep::plan() {
  std::set<std::string> done;
  if (existed_)
    for (const auto& f : find_shard_files(dir_))
      for (const auto& row : read_result_rows(f.jsonl)) done.insert(row["point_id"].get<std::string>());
  std::vector<SweepPoint> all = expand_points(spec_);
  for (int i = 0; i < shards_; ++i) {
    size_t m = 0;
    for (size_t p : shard_point_indices(all, Shard{i, shards_})) m += !done.count(all[p].id);
    if (m) todo_.push_back(i);
    missing_ += m;
  }
}

// The script of this submission.
std::string SlurmSweep::script() const {
  const int shards = shards_;
  const std::string& sdir = sdir_;
  std::string job_name = "lpu-" + spec_.name;
  for (char& c : job_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  std::ostringstream sc;
  sc << "#!/bin/bash\n"
     << "# Sweep " << spec_.name << " (sweep hash " << hash_ << "): " << points_ << " points in " << shards
     << " shards.\n"
     << "# Written by `lpu sweep --backend slurm`. Array task I runs shard I (every " << shards << "th point,\n"
     << "# points ranked by a hash of their id) and appends them to " << dir_ << "/results-I-of-" << shards << ".*;\n"
     << "# --resume makes a task skip points an earlier attempt finished. This submission: "
     << (todo_.size() == static_cast<size_t>(shards) ? "every shard" : "the shards with missing points") << ".\n";
  // A serving sweep's points are `lpu serve` runs (command: serve), which the shard starts as it
  // would `lpu run` ones: said here, so the script tells what its tasks compute.
  if (spec_.serving())
    sc << "# Serving sweep: every point runs `lpu serve WORKLOAD --arch BASE --set ... [serve.* flags]`.\n";
  sc << "#SBATCH --job-name=" << job_name << "\n"
     << "#SBATCH --array=" << array_list(todo_) << "\n"
     << "#SBATCH --cpus-per-task=" << so_.jobs << "\n"
     << "#SBATCH --output=" << sdir << "/logs/task-%A_%a.log\n"
     << "#SBATCH --chdir=" << fs::current_path().string() << "\n";
  if (!sl_.partition.empty()) sc << "#SBATCH --partition=" << sl_.partition << "\n";
  if (!sl_.time.empty()) sc << "#SBATCH --time=" << sl_.time << "\n";
  if (!sl_.mem.empty()) sc << "#SBATCH --mem=" << sl_.mem << "\n";
  const std::string exe = so_.exe.empty() ? self_exe() : so_.exe;
  sc << "exec " << shell_quote(exe) << " sweep " << shell_quote(fs::absolute(file_).lexically_normal().string())
     << " --shard \"$SLURM_ARRAY_TASK_ID/" << shards << "\" -j " << so_.jobs << " -o " << shell_quote(dir_)
     << " --resume";
  if (so_.timeout_s > 0) sc << " --timeout " << so_.timeout_s;
  sc << "\n";
  return sc.str();
}

// Submits the script, unless jobs of an earlier submission are still queued or running (then
// watches those) or nothing is missing.
void SlurmSweep::submit(const std::string& script) {
  const std::string& dir = dir_;
  const std::string& sdir = sdir_;
  std::vector<std::string> active;
  for (const auto& s : jobs_["submissions"]) {
    std::string id = s.value("job_id", "");
    Captured q = capture({"squeue", "-h", "-j", id, "-o", "%i"}, existed_ ? dir : ".");
    if (q.exit.ok() && !trim(q.out).empty()) active.push_back(id);
  }
  watch_ = active;
  if (!active.empty()) {
    std::cout << "job " << active.front()
              << " of this sweep is still queued or running: watching it, submitting nothing"
              << " (run --resume again after it ends to resubmit missing points)\n";
    return;
  }
  if (todo_.empty()) {
    std::cout << "nothing to submit: every point of the sweep has a result in " << dir << "\n";
    return;
  }
  const int submission = static_cast<int>(jobs_["submissions"].size()) + 1;
  const std::string script_path = strcat(sdir, "/submit-", submission, ".sbatch");
  std::vector<std::string> created;  // what to remove again if the submission is refused
  for (const auto& p : {dir, sdir, sdir + "/logs"})
    if (!fs::exists(p)) {
      fs::create_directories(p);
      created.push_back(p);
    }
  write_atomically(script_path, script);
  fs::permissions(script_path, fs::perms::owner_exec, fs::perm_options::add);
  Captured r = capture({sbatch_, "--parsable", script_path}, sdir);
  std::smatch m;
  static const std::regex id_re(R"(^\s*(\d+)(;\S+)?\s*$)");
  if (!r.exit.ok() || r.timed_out || !std::regex_match(r.out, m, id_re)) {
    std::string why = r.timed_out ? "sbatch did not answer within 60 s" : one_line(r.err + "\n" + r.out);
    fs::remove(script_path);
    for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove_all(*it);
    throw InputError("Slurm refused the job array (" + (why.empty() ? r.exit.describe() : why) +
                     "); nothing was submitted");
  }
  std::string job = m[1];
  // The manifest and a copy of the sweep, as a local sweep writes them (reports need them).
  write_atomically(dir + "/manifest.json", manifest_.dump(2) + "\n");
  write_atomically(dir + "/sweep.yaml", read_text_file(file_));
  jobs_["sweep_hash"] = hash_;
  jobs_["shards"] = shards_;
  jobs_["submissions"].push_back({{"job_id", job},
                                  {"array", array_list(todo_)},
                                  {"script", fs::relative(script_path, dir).string()},
                                  {"points", missing_}});
  write_atomically(jobs_path_, jobs_.dump(2) + "\n");
  std::cout << "submitted job array " << job << " (tasks " << array_list(todo_) << " of " << shards_ << ", " << missing_
            << " points) with " << script_path << "\n"
            << "task logs: " << sdir << "/logs/task-" << job << "_I.log\n"
            << std::flush;
  watch_.push_back(job);
}

// Tasks of `watch` by state (squeue); the jobs squeue still knows go into `still`.
void count_tasks(const std::vector<std::string>& watch, const std::string& sdir, int& squeue_errors, size_t& pending,
                 size_t& running, std::vector<std::string>& still) {
  for (const auto& job : watch) {
    Captured q = capture({"squeue", "-h", "-r", "-j", job, "-o", "%T"}, sdir);
    if (!q.exit.ok()) {
      // A job id the controller has forgotten is finished; anything else is worth a word.
      if (q.err.find("Invalid job id") == std::string::npos) {
        if (squeue_errors++ % 30 == 0) std::cerr << "warning: squeue: " << one_line(q.err + q.out) << "\n";
        still.push_back(job);
      }
      continue;
    }
    std::stringstream in(q.out);
    bool any = false;
    for (std::string st; std::getline(in, st);) {
      st = trim(st);
      if (st.empty()) continue;
      any = true;
      (st == "PENDING" ? pending : running)++;
    }
    if (any) still.push_back(job);
  }
}

// Progress: rows in the shard files, tasks from squeue. Waits as long as the cluster needs
// (Ctrl-C stops watching; the jobs go on, and --resume watches them again).
void SlurmSweep::watch() {
  const size_t points = points_;
  auto t0 = Clock::now();
  RowCounter rows;  // every row of the shard files, earlier submissions' included
  auto last_line_at = Clock::now() - std::chrono::hours(1);
  size_t last_rows = static_cast<size_t>(-1);
  bool drawn = false;
  int squeue_errors = 0;
  while (!watch_.empty()) {
    size_t pending = 0, running = 0;
    std::vector<std::string> still;
    count_tasks(watch_, sdir_, squeue_errors, pending, running, still);
    watch_ = still;
    rows.scan(dir_, shards_);
    size_t n = rows.rows;
    double el = seconds_since(t0);
    if (so_.progress_bar) {
      constexpr int kWidth = 30;
      int fill = points ? static_cast<int>(kWidth * std::min(n, points) / points) : kWidth;
      std::printf("\r\033[K[%s%s] %zu/%zu points  %zu failed  tasks: %zu running, %zu pending  %s elapsed",
                  std::string(static_cast<size_t>(fill), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - fill), '.').c_str(), n, points, rows.failed, running,
                  pending, hms(el).c_str());
      std::fflush(stdout);
      drawn = true;
    } else if (n != last_rows && (seconds_since(last_line_at) >= 10 || watch_.empty())) {
      std::cout << "sweep: " << n << "/" << points << " points (" << rows.failed << " failed), tasks: " << running
                << " running, " << pending << " pending, elapsed " << hms(el) << "\n"
                << std::flush;
      last_line_at = Clock::now();
      last_rows = n;
    }
    if (!watch_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(el < 60 ? 1000 : 5000));
  }
  if (drawn) std::cout << "\n";
}

// Failed tasks, from every submission of this run.
nlohmann::json SlurmSweep::report_failed_tasks() {
  nlohmann::json failed_tasks = nlohmann::json::array();
  if (fs::exists(jobs_path_)) jobs_ = nlohmann::json::parse(read_text_file(jobs_path_));
  for (const auto& s : jobs_["submissions"]) {
    std::string job = s.value("job_id", "");
    if (std::find(watch_.begin(), watch_.end(), job) != watch_.end()) continue;
    if (s.value("reported", false)) continue;
    for (const auto& t : task_states(job, sdir_)) {
      if (t.state == "COMPLETED") continue;
      std::string log = strcat(sdir_, "/logs/task-", job, "_", t.task, ".log");
      std::string last = fs::exists(log) ? last_line(log) : "(no log)";
      std::cout << "task " << job << "_" << t.task << " (shard " << t.task << "/" << shards_ << "): " << t.state
                << ", exit " << t.exit_code << "; log " << log << (last.empty() ? "" : ": " + last) << "\n";
      failed_tasks.push_back(
          {{"job_id", job}, {"task", t.task}, {"state", t.state}, {"exit_code", t.exit_code}, {"log", log}});
    }
  }
  for (auto& s : jobs_["submissions"]) s["reported"] = true;
  if (fs::exists(jobs_path_)) write_atomically(jobs_path_, jobs_.dump(2) + "\n");
  return failed_tasks;
}

// The combined results, as a local sweep leaves them.
int SlurmSweep::summarise(const nlohmann::json& failed_tasks, const std::string& json) {
  const std::string& dir = dir_;
  MergeSummary ms;
  if (!find_shard_files(dir).empty()) ms = merge_shards({dir}, dir);
  ms.points = points_;
  std::cout << "sweep " << spec_.name << ": " << points_ << " points, " << ms.ok << " ok, " << ms.failed << " failed, "
            << ms.missing() << " missing, in " << shards_ << " Slurm array tasks\n"
            << "results: " << dir << "/results.csv, " << dir << "/results.jsonl\n";
  if (!json.empty())
    std::ofstream(json) << nlohmann::json({{"dir", dir},
                                           {"sweep_hash", hash_},
                                           {"points", points_},
                                           {"ok", ms.ok},
                                           {"failed", ms.failed},
                                           {"missing", ms.missing()},
                                           {"shards", shards_},
                                           {"failed_tasks", failed_tasks}})
                               .dump(2)
                        << "\n";
  if (ms.missing())
    std::cerr << ms.missing()
              << " point(s) have no result (a task failed or was cancelled); run again with --resume to "
                 "resubmit only them\n";
  if (ms.failed) std::cerr << ms.failed << " point(s) failed; their errors are in the error column of the results\n";
  return ms.missing() || ms.failed ? 1 : 0;
}

int SlurmSweep::run(const std::string& json) {
  validate();
  read_state();
  plan();
  std::string sc = script();
  if (sl_.dry_run) {
    if (todo_.empty())
      std::cout << "# nothing to submit: every point of the sweep has a result in " << dir_ << "\n";
    else
      std::cout << sc;
    return 0;
  }
  submit(sc);
  watch();
  return summarise(report_failed_tasks(), json);
}

}  // namespace

int slurm_sweep_command(const std::string& file, const SweepOptions& so, const SlurmOptions& sl,
                        const std::string& json) {
  return SlurmSweep(file, so, sl).run(json);
}

}  // namespace lpu
