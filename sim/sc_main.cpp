#include <cstdio>

// libsystemc.so provides a main() that calls sc_main(); every executable of ours defines its
// own main() and drives the kernel through lpu::simulate(), but the shared library still
// needs the symbol to link. Reaching it means someone linked without a main of their own.
// Exported even from code built with hidden visibility: the Python module (bindings/python) is
// such a shared object, and libsystemc resolves the symbol against it when Python loads it.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) {
  std::fprintf(stderr, "lpu: this program has no SystemC sc_main entry; use the lpu CLI\n");
  return 4;
}
