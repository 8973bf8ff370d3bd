// Numbers with units, for everything a person reads (CLI tables, messages, benchmarks). One
// convention everywhere:
//   - traffic and sizes of data in decimal SI units: 1 kB = 10^3 B, 1 MB = 10^6 B, 1 GB = 10^9 B
//     (like bandwidths in GB/s, so bytes / bandwidth needs no conversion);
//   - memory capacities as configs give them, in binary units: 1 KiB = 2^10 B, 1 GiB = 2^30 B;
//   - times scaled to ns, us, ms or s; rates per second.
// JSON keeps raw numbers whose keys name the unit (`hbm_read_bytes`, `latency_us`).
#pragma once
#include <cstdint>
#include <string>

namespace lpu {

std::string format_bytes(double bytes);             // "14.30 GB", "532.5 kB", "512 B"
std::string format_binary_bytes(double bytes);      // "4.00 GiB", "256.0 KiB", "512 B"
std::string format_duration_us(double us);          // "850 ns", "68.09 us", "1.234 ms", "1.009 s"
std::string format_bandwidth(double bytes_per_s);   // "3.28 TB/s", "460.0 GB/s"
std::string format_percent(double fraction);        // "75.1 %"
std::string format_energy(double joules);           // "412 nJ", "3.456 uJ", "87.21 mJ", "1.203 J"
// printf-style formatting of one number: format_number("%.3f us", 1.5).
std::string format_number(const char* format, double v);

}  // namespace lpu
