# The layer libraries (docs/layers.md). layers.txt at the repository root is the layer DAG;
# scripts/check_layers.py reads it, here to give CMake each layer's public and private layers
# (LPU_LAYER_<name>_PUBLIC / _PRIVATE), and at build time to check every #include against it.
#
#   lpu_layer(NAME SOURCES file... [PUBLIC_LIBS lib...] [PRIVATE_LIBS lib...])
# makes the static library lpu_NAME from SOURCES (relative to the current source directory,
# which becomes its public include directory), linked PUBLIC to lpu_<each public layer> and
# PRIVATE to lpu_<each private layer>, plus the given non-layer libraries. It is built only
# after the layer check (target lpu_layers) has passed, so a back-edge fails `cmake --build`.
#   lpu_layer_sources(NAME file...) adds sources to lpu_NAME later (conditional ones).
# Debian's interpreter, as the tests use (tests/CMakeLists.txt); the checker needs only the
# standard library.
find_program(LPU_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT LPU_PYTHON3)
  find_program(LPU_PYTHON3 NAMES python3 REQUIRED)
endif()
set(LPU_LAYERS_FILE ${PROJECT_SOURCE_DIR}/layers.txt)
set(LPU_LAYERS_CHECK ${PROJECT_SOURCE_DIR}/scripts/check_layers.py)
set(LPU_LAYERS_MANIFEST ${PROJECT_BINARY_DIR}/layer_sources.txt)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${LPU_LAYERS_FILE} ${LPU_LAYERS_CHECK})
execute_process(
  COMMAND ${LPU_PYTHON3} ${LPU_LAYERS_CHECK} --root ${PROJECT_SOURCE_DIR} --dag-only
          --cmake-out ${PROJECT_BINARY_DIR}/layers.cmake
  RESULT_VARIABLE _lpu_layers_rc ERROR_VARIABLE _lpu_layers_err)
if(NOT _lpu_layers_rc EQUAL 0)
  message(FATAL_ERROR "layers.txt: ${_lpu_layers_err}")
endif()
include(${PROJECT_BINARY_DIR}/layers.cmake)

function(lpu_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "SOURCES;PUBLIC_LIBS;PRIVATE_LIBS")
  if(NOT name IN_LIST LPU_LAYERS)
    message(FATAL_ERROR "lpu_layer(${name}): no layer '${name}' in layers.txt (layers: ${LPU_LAYERS})")
  endif()
  list(TRANSFORM LPU_LAYER_${name}_PUBLIC PREPEND lpu_ OUTPUT_VARIABLE _public)
  list(TRANSFORM LPU_LAYER_${name}_PRIVATE PREPEND lpu_ OUTPUT_VARIABLE _private)
  add_library(lpu_${name} STATIC)
  target_include_directories(lpu_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(lpu_${name} PRIVATE LPU_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(lpu_${name} PUBLIC ${_public} ${L_PUBLIC_LIBS} PRIVATE ${_private} ${L_PRIVATE_LIBS} lpu_warnings)
  add_dependencies(lpu_${name} lpu_layers)
  lpu_layer_sources(${name} ${L_SOURCES})
endfunction()

function(lpu_layer_sources name)
  foreach(src ${ARGN})
    target_sources(lpu_${name} PRIVATE ${src})
    get_filename_component(_abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_abs})
    set_property(GLOBAL APPEND PROPERTY LPU_LAYER_MANIFEST "${name} ${_rel}")
  endforeach()
endfunction()

# The check, before any layer library compiles: again whenever layers.txt, the checker, the
# manifest or any C++ file under compiler/, sim/, tuner/, workbench/, apps/ or bindings/ (the
# clients the check covers too) changes (new files are found by the glob).
file(GLOB_RECURSE LPU_LAYERED_FILES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/compiler/*.h ${PROJECT_SOURCE_DIR}/compiler/*.cpp
     ${PROJECT_SOURCE_DIR}/sim/*.h ${PROJECT_SOURCE_DIR}/sim/*.cpp
     ${PROJECT_SOURCE_DIR}/tuner/*.h ${PROJECT_SOURCE_DIR}/tuner/*.cpp
     ${PROJECT_SOURCE_DIR}/workbench/*.h ${PROJECT_SOURCE_DIR}/workbench/*.cpp
     ${PROJECT_SOURCE_DIR}/apps/*.h ${PROJECT_SOURCE_DIR}/apps/*.cpp
     ${PROJECT_SOURCE_DIR}/bindings/*.h ${PROJECT_SOURCE_DIR}/bindings/*.cpp)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/layers.ok
  COMMAND ${LPU_PYTHON3} ${LPU_LAYERS_CHECK} --root ${PROJECT_SOURCE_DIR} --manifest ${LPU_LAYERS_MANIFEST}
          --stamp ${PROJECT_BINARY_DIR}/layers.ok --quiet
  DEPENDS ${LPU_LAYERS_FILE} ${LPU_LAYERS_CHECK} ${LPU_LAYERS_MANIFEST} ${LPU_LAYERED_FILES}
  COMMENT "Checking every #include of compiler/, sim/, tuner/, workbench/, apps/ and bindings/ against the layer DAG (layers.txt)"
  VERBATIM)
add_custom_target(lpu_layers ALL DEPENDS ${PROJECT_BINARY_DIR}/layers.ok)

# Called once every layer library exists: the manifest of which sources went into which
# library, which the check compares with layers.txt (written only when it changes).
function(lpu_layers_write_manifest)
  get_property(_lines GLOBAL PROPERTY LPU_LAYER_MANIFEST)
  list(JOIN _lines "\n" _text)
  file(CONFIGURE OUTPUT ${LPU_LAYERS_MANIFEST} CONTENT "${_text}\n" @ONLY)
endfunction()
