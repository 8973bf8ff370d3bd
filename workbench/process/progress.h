// Progress of a long command (a sweep's points, a generation's steps): one bar redrawn in
// place on a terminal, plain lines at 10 % steps (or every 10 s) otherwise, so logs stay short.
#pragma once
#include <chrono>
#include <ostream>
#include <string>

namespace lpu {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t);
std::string hms(double s);  // "m:ss" or "h:mm:ss"

class Progress {
 public:
  // `what` starts the plain lines ("sweep"), `unit` names what is counted ("points");
  // `counts`: show the failed and running counts (a sweep's), or not (one process's steps).
  Progress(std::ostream& out, size_t total, size_t skipped, bool bar, std::string what = "sweep",
           std::string unit = "points", bool counts = true);

  void update(size_t done, size_t failed, size_t running, bool force = false);
  // A line that must not be overwritten by the bar (a failed point).
  void message(const std::string& line);
  void finish();

 private:
  std::ostream& out_;
  size_t total_, skipped_;
  bool bar_;
  std::string what_, unit_;
  bool counts_;
  Clock::time_point start_, last_line_, last_draw_{};
  int next_pct_ = 10;
  size_t last_done_ = 0;
  bool drawn_ = false;
};

}  // namespace lpu
