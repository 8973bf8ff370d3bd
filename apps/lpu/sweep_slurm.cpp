#include "sweep_slurm.h"

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

#include "proc.h"
#include "slurm_client.h"
#include "support/error.h"
#include "sweep_layout.h"
#include "sweep_merge.h"

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
    throw InputError(strcat(flag, " '", v, "': expected one word of letters, digits and _.:,+=@%/- (it goes into an #SBATCH line)"));
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

}  // namespace

int slurm_sweep_command(const std::string& file, const SweepOptions& so, const SlurmOptions& sl, const std::string& json) {
  // Everything that can be wrong with the input is checked before DIR is touched.
  if (so.jobs < 1) throw InputError("-j: need at least 1 CPU per task");
  if (sl.array_size < 0) throw InputError(strcat("--array-size ", sl.array_size, ": expected a positive task count"));
  if (!sl.partition.empty()) check_token("--partition", sl.partition);
  if (!sl.time.empty()) check_token("--time", sl.time);
  if (!sl.mem.empty()) check_token("--mem", sl.mem);
  const std::string dir = fs::absolute(so.out_dir).lexically_normal().string();
  if (dir.find_first_of(" \t\n'\"\\$`") != std::string::npos)
    throw InputError("-o " + so.out_dir + ": a Slurm results directory may not contain spaces, quotes, $ or backslashes "
                     "(it goes into #SBATCH lines)");
  if (fs::exists(dir) && !fs::is_directory(dir)) throw InputError("-o " + so.out_dir + ": exists and is not a directory");
  std::string sbatch;
  if (!sl.dry_run) {
    sbatch = find_program("sbatch");
    if (sbatch.empty())
      throw InputError("--backend slurm: sbatch not found in PATH; run on a Slurm login node (or install slurm-client), "
                       "or use the local backend");
  }
  SweepSpec spec = load_sweep_file(file);
  const nlohmann::json manifest = sweep_manifest(spec);
  const std::string hash = manifest["sweep_hash"];
  const size_t points = manifest["points"];

  // What DIR holds already.
  const std::string sdir = dir + "/slurm", jobs_path = sdir + "/jobs.json";
  const bool existed = fs::exists(dir);
  bool have = fs::exists(jobs_path) || fs::exists(dir + "/results.jsonl") || (existed && !find_shard_files(dir).empty());
  if (have && !so.resume)
    throw InputError(dir + " already holds sweep results; pass --resume to continue that sweep, or choose another -o "
                           "directory");
  std::string had = existed ? manifest_hash(dir) : "";
  if (!had.empty() && had != hash)
    throw InputError(strcat(dir, " holds results of sweep ", had, "; ", file, " is sweep ", hash,
                            " (a different sweep, or the file changed): use another -o directory"));
  nlohmann::json jobs = {{"sweep_hash", hash}, {"shards", 0}, {"submissions", nlohmann::json::array()}};
  if (fs::exists(jobs_path)) {
    try {
      jobs = nlohmann::json::parse(read_text_file(jobs_path));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(strcat(jobs_path, ": not JSON (", e.what(), ")"));
    }
  }
  int shards = jobs.value("shards", 0);
  if (shards == 0 && existed)
    for (const auto& f : find_shard_files(dir)) shards = f.shard.count;  // shards run by hand (--shard)
  if (shards == 0) shards = static_cast<int>(std::min<size_t>(sl.array_size ? static_cast<size_t>(sl.array_size) : 100, std::max<size_t>(points, 1)));
  else if (sl.array_size && sl.array_size != shards)
    std::cout << "note: " << dir << " is split into " << shards << " shards; --array-size " << sl.array_size
              << " ignored on --resume\n";
  if (existed)
    for (const auto& f : find_shard_files(dir))
      if (f.shard.count != shards)
        throw InputError(strcat(f.jsonl, ": a shard of a split into ", f.shard.count, ", but ", dir, " is split into ",
                                shards, "; use another -o directory"));

  // The shards that still have points without a result.
  std::set<std::string> done;
  if (existed)
    for (const auto& f : find_shard_files(dir))
      for (const auto& row : read_result_rows(f.jsonl)) done.insert(row["point_id"].get<std::string>());
  std::vector<SweepPoint> all = expand_points(spec);
  std::vector<int> todo;
  size_t missing = 0;
  for (int i = 0; i < shards; ++i) {
    size_t m = 0;
    for (size_t p : shard_point_indices(all, Shard{i, shards})) m += !done.count(all[p].id);
    if (m) todo.push_back(i);
    missing += m;
  }

  // The script of this submission.
  const int submission = static_cast<int>(jobs["submissions"].size()) + 1;
  const std::string script_path = strcat(sdir, "/submit-", submission, ".sbatch");
  std::string job_name = "lpu-" + spec.name;
  for (char& c : job_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  std::ostringstream sc;
  sc << "#!/bin/bash\n"
     << "# Sweep " << spec.name << " (sweep hash " << hash << "): " << points << " points in " << shards << " shards.\n"
     << "# Written by `lpu sweep --backend slurm`. Array task I runs shard I (every " << shards << "th point,\n"
     << "# points ranked by a hash of their id) and appends them to " << dir << "/results-I-of-" << shards << ".*;\n"
     << "# --resume makes a task skip points an earlier attempt finished. This submission: "
     << (todo.size() == static_cast<size_t>(shards) ? "every shard" : "the shards with missing points") << ".\n"
     << "#SBATCH --job-name=" << job_name << "\n"
     << "#SBATCH --array=" << array_list(todo) << "\n"
     << "#SBATCH --cpus-per-task=" << so.jobs << "\n"
     << "#SBATCH --output=" << sdir << "/logs/task-%A_%a.log\n"
     << "#SBATCH --chdir=" << fs::current_path().string() << "\n";
  if (!sl.partition.empty()) sc << "#SBATCH --partition=" << sl.partition << "\n";
  if (!sl.time.empty()) sc << "#SBATCH --time=" << sl.time << "\n";
  if (!sl.mem.empty()) sc << "#SBATCH --mem=" << sl.mem << "\n";
  const std::string exe = so.exe.empty() ? self_exe() : so.exe;
  sc << "exec " << shell_quote(exe) << " sweep " << shell_quote(fs::absolute(file).lexically_normal().string())
     << " --shard \"$SLURM_ARRAY_TASK_ID/" << shards << "\" -j " << so.jobs << " -o " << shell_quote(dir) << " --resume";
  if (so.timeout_s > 0) sc << " --timeout " << so.timeout_s;
  sc << "\n";

  if (sl.dry_run) {
    if (todo.empty()) std::cout << "# nothing to submit: every point of the sweep has a result in " << dir << "\n";
    else std::cout << sc.str();
    return 0;
  }

  // Jobs of an earlier submission that are still queued or running: watch them, submit nothing.
  std::vector<std::string> active;
  for (const auto& s : jobs["submissions"]) {
    std::string id = s.value("job_id", "");
    Captured q = capture({"squeue", "-h", "-j", id, "-o", "%i"}, existed ? dir : ".");
    if (q.exit.ok() && !trim(q.out).empty()) active.push_back(id);
  }

  std::vector<std::string> watch = active;
  std::vector<std::string> created;  // what to remove again if the submission is refused
  if (active.empty() && !todo.empty()) {
    for (const auto& p : {dir, sdir, sdir + "/logs"})
      if (!fs::exists(p)) {
        fs::create_directories(p);
        created.push_back(p);
      }
    auto rollback = [&] {
      fs::remove(script_path);
      for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove_all(*it);
    };
    write_atomically(script_path, sc.str());
    fs::permissions(script_path, fs::perms::owner_exec, fs::perm_options::add);
    Captured r = capture({sbatch, "--parsable", script_path}, sdir);
    std::smatch m;
    static const std::regex id_re(R"(^\s*(\d+)(;\S+)?\s*$)");
    if (!r.exit.ok() || r.timed_out || !std::regex_match(r.out, m, id_re)) {
      std::string why = r.timed_out ? "sbatch did not answer within 60 s" : one_line(r.err + "\n" + r.out);
      rollback();
      throw InputError("Slurm refused the job array (" + (why.empty() ? r.exit.describe() : why) + "); nothing was submitted");
    }
    std::string job = m[1];
    // The manifest and a copy of the sweep, as a local sweep writes them (reports need them).
    write_atomically(dir + "/manifest.json", manifest.dump(2) + "\n");
    write_atomically(dir + "/sweep.yaml", read_text_file(file));
    jobs["sweep_hash"] = hash;
    jobs["shards"] = shards;
    jobs["submissions"].push_back({{"job_id", job},
                                   {"array", array_list(todo)},
                                   {"script", fs::relative(script_path, dir).string()},
                                   {"points", missing}});
    write_atomically(jobs_path, jobs.dump(2) + "\n");
    std::cout << "submitted job array " << job << " (tasks " << array_list(todo) << " of " << shards << ", " << missing
              << " points) with " << script_path << "\n"
              << "task logs: " << sdir << "/logs/task-" << job << "_I.log\n"
              << std::flush;
    watch.push_back(job);
  } else if (!active.empty()) {
    std::cout << "job " << active.front() << " of this sweep is still queued or running: watching it, submitting nothing"
              << " (run --resume again after it ends to resubmit missing points)\n";
  } else {
    std::cout << "nothing to submit: every point of the sweep has a result in " << dir << "\n";
  }

  // Progress: rows in the shard files, tasks from squeue. Waits as long as the cluster needs
  // (Ctrl-C stops watching; the jobs go on, and --resume watches them again).
  auto t0 = Clock::now();
  RowCounter rows;  // every row of the shard files, earlier submissions' included
  auto last_line_at = Clock::now() - std::chrono::hours(1);
  size_t last_rows = static_cast<size_t>(-1);
  bool drawn = false;
  int squeue_errors = 0;
  while (!watch.empty()) {
    size_t pending = 0, running = 0;
    std::vector<std::string> still;
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
    watch = still;
    rows.scan(dir, shards);
    size_t n = rows.rows;
    double el = seconds_since(t0);
    if (so.progress_bar) {
      constexpr int kWidth = 30;
      int fill = points ? static_cast<int>(kWidth * std::min(n, points) / points) : kWidth;
      std::printf("\r\033[K[%s%s] %zu/%zu points  %zu failed  tasks: %zu running, %zu pending  %s elapsed",
                  std::string(static_cast<size_t>(fill), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - fill), '.').c_str(), n, points, rows.failed, running, pending,
                  hms(el).c_str());
      std::fflush(stdout);
      drawn = true;
    } else if (n != last_rows && (seconds_since(last_line_at) >= 10 || watch.empty())) {
      std::cout << "sweep: " << n << "/" << points << " points (" << rows.failed << " failed), tasks: " << running
                << " running, " << pending << " pending, elapsed " << hms(el) << "\n"
                << std::flush;
      last_line_at = Clock::now();
      last_rows = n;
    }
    if (!watch.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(el < 60 ? 1000 : 5000));
  }
  if (drawn) std::cout << "\n";

  // Failed tasks, from every submission of this run.
  nlohmann::json failed_tasks = nlohmann::json::array();
  if (fs::exists(jobs_path)) jobs = nlohmann::json::parse(read_text_file(jobs_path));
  for (const auto& s : jobs["submissions"]) {
    std::string job = s.value("job_id", "");
    if (std::find(watch.begin(), watch.end(), job) != watch.end()) continue;
    if (s.value("reported", false)) continue;
    for (const auto& t : task_states(job, sdir)) {
      if (t.state == "COMPLETED") continue;
      std::string log = strcat(sdir, "/logs/task-", job, "_", t.task, ".log");
      std::string last = fs::exists(log) ? last_line(log) : "(no log)";
      std::cout << "task " << job << "_" << t.task << " (shard " << t.task << "/" << shards << "): " << t.state
                << ", exit " << t.exit_code << "; log " << log << (last.empty() ? "" : ": " + last) << "\n";
      failed_tasks.push_back({{"job_id", job}, {"task", t.task}, {"state", t.state}, {"exit_code", t.exit_code}, {"log", log}});
    }
  }
  for (auto& s : jobs["submissions"]) s["reported"] = true;
  if (fs::exists(jobs_path)) write_atomically(jobs_path, jobs.dump(2) + "\n");

  // The combined results, as a local sweep leaves them.
  MergeSummary ms;
  if (!find_shard_files(dir).empty()) ms = merge_shards({dir}, dir);
  ms.points = points;
  std::cout << "sweep " << spec.name << ": " << points << " points, " << ms.ok << " ok, " << ms.failed << " failed, "
            << ms.missing() << " missing, in " << shards << " Slurm array tasks\n"
            << "results: " << dir << "/results.csv, " << dir << "/results.jsonl\n";
  if (!json.empty())
    std::ofstream(json) << nlohmann::json({{"dir", dir},
                                           {"sweep_hash", hash},
                                           {"points", points},
                                           {"ok", ms.ok},
                                           {"failed", ms.failed},
                                           {"missing", ms.missing()},
                                           {"shards", shards},
                                           {"failed_tasks", failed_tasks}})
                               .dump(2)
                        << "\n";
  if (ms.missing())
    std::cerr << ms.missing() << " point(s) have no result (a task failed or was cancelled); run again with --resume to "
                 "resubmit only them\n";
  if (ms.failed) std::cerr << ms.failed << " point(s) failed; their errors are in the error column of the results\n";
  return ms.missing() || ms.failed ? 1 : 0;
}

}  // namespace lpu
