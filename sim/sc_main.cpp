#include <cstdio>

// libsystemc.so provides a main() that calls sc_main(); every executable of ours defines its
// own main() and drives the kernel through lpu::simulate(), but the shared library still
// needs the symbol to link. Reaching it means someone linked without a main of their own.
extern "C" int sc_main(int, char*[]) {
  std::fprintf(stderr, "lpu: this program has no SystemC sc_main entry; use the lpu CLI\n");
  return 4;
}
