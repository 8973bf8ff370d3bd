#include "support/units.h"

#include <cmath>
#include <cstdio>

namespace lpu {

std::string format_number(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

namespace {
// Scales v by the largest step whose unit keeps it >= 1; three significant figures at least.
std::string scaled(double v, double step, const char* const* units, int n, const char* suffix = "") {
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < n && a >= step) {
    a /= step;
    v /= step;
    ++i;
  }
  const char* f = i == 0 && v == std::floor(v) ? "%.0f %s%s" : a >= 100 ? "%.1f %s%s" : "%.2f %s%s";
  char buf[96];
  std::snprintf(buf, sizeof buf, f, v, units[i], suffix);
  return buf;
}
}  // namespace

std::string format_bytes(double bytes) {
  static const char* const u[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return scaled(bytes, 1000.0, u, 6);
}

std::string format_binary_bytes(double bytes) {
  static const char* const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return scaled(bytes, 1024.0, u, 5);
}

std::string format_bandwidth(double bytes_per_s) {
  static const char* const u[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  return scaled(bytes_per_s, 1000.0, u, 6, "/s");
}

std::string format_duration_us(double us) {
  double a = std::fabs(us);
  if (a < 1.0) return format_number("%.0f ns", us * 1e3);
  if (a < 1e3) return format_number("%.3f us", us);
  if (a < 1e6) return format_number("%.3f ms", us / 1e3);
  return format_number("%.3f s", us / 1e6);
}

std::string format_percent(double fraction) { return format_number("%.1f %%", 100.0 * fraction); }

std::string format_energy(double j) {
  double a = std::fabs(j);
  if (a == 0) return "0 J";
  if (a < 1e-6) return format_number("%.0f nJ", j * 1e9);
  if (a < 1e-3) return format_number("%.3f uJ", j * 1e6);
  if (a < 1.0) return format_number("%.3f mJ", j * 1e3);
  return format_number("%.3f J", j);
}

}  // namespace lpu
