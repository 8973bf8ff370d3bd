#include "process/progress.h"

#include <cmath>
#include <cstdio>

#include "support/error.h"

namespace lpu {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string hms(double s) {
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

Progress::Progress(std::ostream& out, size_t total, size_t skipped, bool bar, std::string what, std::string unit,
                   bool counts)
    : out_(out),
      total_(total),
      skipped_(skipped),
      bar_(bar),
      what_(std::move(what)),
      unit_(std::move(unit)),
      counts_(counts),
      start_(Clock::now()),
      last_line_(start_) {}

void Progress::update(size_t done, size_t failed, size_t running, bool force) {
  size_t todo = total_ - skipped_;
  double el = seconds_since(start_);
  std::string eta = done == 0 ? "?" : hms(el / static_cast<double>(done) * static_cast<double>(todo - done));
  if (bar_) {
    if (!force && seconds_since(last_draw_) < 0.2) return;
    last_draw_ = Clock::now();
    constexpr int kWidth = 30;
    int fill = todo ? static_cast<int>(kWidth * done / todo) : kWidth;
    std::string counts = counts_ ? strcat("  ", failed, " failed  ", running, " running") : "";
    char buf[320];
    std::snprintf(buf, sizeof buf, "\r\033[K[%s%s] %zu/%zu%s%s  %s elapsed  ETA %s",
                  std::string(static_cast<size_t>(fill), '#').c_str(),
                  std::string(static_cast<size_t>(kWidth - fill), '.').c_str(), done, todo,
                  skipped_ ? strcat(" (+", skipped_, " done before)").c_str() : "", counts.c_str(), hms(el).c_str(),
                  eta.c_str());
    out_ << buf << std::flush;
    drawn_ = true;
    return;
  }
  // Plain lines (a log file, CI): one per 10 % of the total, or every 10 s.
  if (done == last_done_ || (done < todo * static_cast<size_t>(next_pct_) / 100 && seconds_since(last_line_) < 10))
    return;
  while (next_pct_ <= 100 && done >= todo * static_cast<size_t>(next_pct_) / 100) next_pct_ += 10;
  last_line_ = Clock::now();
  last_done_ = done;
  out_ << what_ << ": " << done << "/" << todo << " " << unit_ << " done";
  if (counts_) out_ << " (" << failed << " failed, " << running << " running)";
  out_ << ", elapsed " << hms(el) << ", ETA " << eta << "\n" << std::flush;
}

void Progress::message(const std::string& line) {
  if (bar_ && drawn_) out_ << "\r\033[K";
  out_ << line << "\n" << std::flush;
  drawn_ = false;
}

void Progress::finish() {
  if (bar_ && drawn_) out_ << "\n" << std::flush;
}

}  // namespace lpu
