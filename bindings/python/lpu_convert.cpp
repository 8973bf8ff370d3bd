#include "lpu_convert.h"

#include <new>

#include "support/error.h"

namespace lpu::pymod {

namespace pyb = pybind11;

Sets::Sets(const std::vector<std::string>& all) {
  const std::string prefix = kWorkloadKeyPrefix;
  for (const auto& s : all)
    if (s.rfind(prefix, 0) == 0)
      workload.push_back(s.substr(prefix.size()));
    else
      arch.push_back(s);
}

WorkloadSpec load_workload(const WorkloadArg& w, const Sets& s) {
  if (w.yaml.empty()) return resolve_workload(w.name_or_path, s.workload);
  return load_workload_string(w.yaml, w.source, s.workload);
}

ArchConfig load_arch(const std::string& arch, const Sets& s, int tp) {
  std::vector<std::string> sets = s.arch;
  if (tp > 0) sets.push_back(strcat("devices=", tp));
  return load_arch_config(resolve_config_path(arch.empty() ? default_config_name() : arch), sets);
}

namespace {

// Held for the interpreter's lifetime: the classes live in the package, which outlives the module.
struct ErrorClasses {
  pyb::object input, check, stuck, internal;
};

ErrorClasses& error_classes() {
  static auto* const e = new ErrorClasses();  // never destroyed: Python may be gone by exit
  return *e;
}

void raise(const pyb::object& cls, const char* what) {
  if (cls) {
    PyErr_SetString(cls.ptr(), what);
  } else {  // the package did not set its classes (the module imported alone)
    PyErr_SetString(PyExc_RuntimeError, what);
  }
}

}  // namespace

void register_errors(pyb::module_& m) {
  m.def(
      "_set_error_classes",
      [](pyb::object input, pyb::object check, pyb::object stuck, pyb::object internal) {
        error_classes() = {input, check, stuck, internal};
      },
      "the package's exception classes, by exit class: bad input, failed check, stuck, internal");
  pyb::register_exception_translator([](std::exception_ptr p) {
    const ErrorClasses& c = error_classes();
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pyb::builtin_exception&) {
      throw;  // pybind11's own (TypeError ...): its translator
    } catch (const pyb::error_already_set&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // MemoryError
    } catch (const InputError& e) {
      raise(c.input, e.what());
    } catch (const CheckFailed& e) {
      raise(c.check, e.what());
    } catch (const SimulationStuck& e) {
      raise(c.stuck, e.what());
    } catch (const std::exception& e) {
      raise(c.internal, e.what());
    }
  });
}

std::string dump(const nlohmann::json& j) {
  // Invalid UTF-8 (a name from a file) replaced rather than thrown, as the sweep's rows do.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lpu::pymod
