#!/usr/bin/env bash
# The format and size checks of CI (.ci/run): the listed C++ files follow .clang-format
# (Debian's clang-format; the list grows as files are touched, since a tree-wide reformat would
# collide with parallel work), no merge conflict markers, README.md stays a map of at most
# README_MAX_LINES lines (the details live in docs/), and no function in compiler/, sim/,
# tuner/, apps/, workbench/ or bindings/ is over 100 lines (scripts/check_funclen.py). Every check runs;
# the exit code is 1 when any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(sim/model/repeat_blocks.h sim/model/repeat_blocks.cpp sim/model/layer_memo.h sim/model/layer_memo.cpp sim/model/wake_order.h sim/model/wake_order.cpp tests/test_layer_memo.cpp compiler/isa/hbm_layout.h compiler/isa/hbm_layout.cpp compiler/codegen/hbm_assign.h compiler/codegen/hbm_assign.cpp compiler/support/layer_tag.h compiler/support/layer_tag.cpp compiler/driver/front_end_template.h compiler/driver/front_end_template.cpp workbench/generate/front_end_steps.h workbench/generate/front_end_steps.cpp compiler/support/allocator.h compiler/support/allocator.cpp compiler/support/json_util.h compiler/support/json_util.cpp compiler/support/input_file.h compiler/support/input_file.cpp
       compiler/ops/*.h compiler/ops/*.cpp
       compiler/graph/attrs_json.h compiler/graph/attrs_json.cpp compiler/loopir/kernel.h fuzz/*.cpp fuzz/*.h
       sim/program_check.h sim/program_check.cpp compiler/loopir/parse.cpp compiler/loopir/verify.cpp
       compiler/support/line_cursor.h tests/test_loopir_text.cpp workbench/process/proc.h workbench/process/proc.cpp
       sim/model/attribution.h sim/model/attribution.cpp
       workbench/jobs/op_class.h workbench/jobs/op_class.cpp workbench/jobs/roofline.h workbench/jobs/roofline.cpp tests/test_roofline.cpp tests/test_isu.cpp
       compiler/codegen/column_split.h compiler/codegen/column_split.cpp
       compiler/codegen/tile_plan.h compiler/codegen/tile_plan.cpp tests/test_column_tiling.cpp
       compiler/codegen/tile_footprint.h compiler/codegen/tile_footprint.cpp compiler/codegen/region_allocator.h tests/test_tile_footprint.cpp
       compiler/codegen/tile_walk.h compiler/codegen/tile_walk.cpp compiler/codegen/tile_replay.h compiler/codegen/kernel_emitter.h compiler/codegen/kernel_emitter.cpp
       compiler/handlers/triton_*.h compiler/handlers/triton_*.cpp compiler/handlers/torch_*.h compiler/handlers/torch_*.cpp tests/test_triton.cpp compiler/schedule/verify_schedule.cpp
       compiler/isa/program_template.h compiler/isa/program_template.cpp compiler/isa/program_fields.h compiler/isa/program_fields.cpp
       compiler/isa/layer_template.h compiler/isa/layer_template.cpp workbench/generate/regional.h workbench/generate/regional.cpp tests/test_regional.cpp
       workbench/generate/generate.h workbench/generate/generate.cpp workbench/process/progress.h workbench/process/progress.cpp workbench/process/forked_work.h workbench/process/forked_work.cpp tests/test_generate.cpp
       tuner/*.h tuner/*.cpp tests/test_tuner.cpp sim/energy.h sim/energy.cpp tests/test_energy.cpp
       tests/test_workload_keys.cpp tests/legacy_transformer.h
       compiler/graph/collective.h compiler/graph/collective.cpp compiler/codegen/collective.h compiler/codegen/collective.cpp
       compiler/workload/tensor_parallel.h compiler/workload/tensor_parallel.cpp tests/test_tensor_parallel.cpp
       sim/model/esl_link.h sim/model/esl_link.cpp sim/device_symmetry.h sim/device_symmetry.cpp
       apps/lpu/*.h apps/lpu/*.cpp sim/host_pricing.h sim/host_pricing.cpp compiler/driver/compile_cache.h
       compiler/driver/compile_cache.cpp workbench/jobs/{cli_support,run_report,compare,backends,triton_data,listings}.h
       workbench/jobs/{cli_support,run_report,compare,backends,triton_data,listings,scalar_json}.cpp
       workbench/jobs/scalar_json.h workbench/sweep/sweep.cpp workbench/sweep/sweep_slurm.cpp workbench/sweep/sweep_merge.cpp workbench/sweep/sweep_serve.h workbench/sweep/sweep_serve.cpp
       workbench/serve/*.h workbench/serve/*.cpp tests/test_serve*.cpp tests/serve_test_util.h
       compiler/isa/opcodes.h compiler/isa/operands.h compiler/isa/program.h compiler/isa/program.cpp
       compiler/isa/encoding.cpp sim/simulator.cpp sim/model/device.h sim/model/device.cpp sim/model/engine.h
       sim/model/engine.cpp sim/config/arch_config.h sim/config/arch_config.cpp tests/test_toy_engine.cpp
       tests/toy/toy_isa.h tests/toy/toy_engine.cpp compiler/loopir/lower.cpp workbench/jobs/jobs.cpp
       compiler/ref/quantise.h compiler/ref/quantise.cpp tests/test_quantise.cpp bindings/python/*.h bindings/python/*.cpp
       sim/model/dram_banks.h sim/model/dram_banks.cpp sim/model/hbm.h sim/model/hbm.cpp sim/config/memory_config.h
       sim/config/memory_config.cpp sim/config/arch_config.h sim/config/arch_config.cpp tests/test_memory.cpp
       sim/model/vxe.h sim/model/vxe.cpp sim/model/vxe_rtl.h sim/model/vxe_rtl_none.cpp sim/model/vxe_timing.h sim/rtl/rtl_vxe.h sim/rtl/rtl_vxe.cpp sim/rtl/sfu_port.h sim/rtl/vxe_rtl_unit.cpp sim/rtl/vxe_sfu_ref.h sim/rtl/rtl_compare.cpp tests/test_rtl_vxe.cpp tests/test_vxe_rtl.cpp tests/test_vxe_chain.cpp
       sim/model/isu.h sim/model/isu.cpp sim/model/sim_context.h sim/model/dma.cpp sim/model/sxe.cpp sim/model/esl.cpp
       sim/rtl/gated_clock.h sim/rtl/sxe_rtl_unit.cpp compiler/codegen/tile_skew.h compiler/codegen/tile_skew.cpp)
failed=0
# A merge that left conflict markers in any tracked file (one reached the README once).
if git grep -n -E '^(<<<<<<<|>>>>>>>) [^ ]' -- . 2>/dev/null; then
  echo "format-check: merge conflict markers above" >&2
  failed=1
fi
README_MAX_LINES=300
readme_lines=$(wc -l < README.md)
if [ "$readme_lines" -gt "$README_MAX_LINES" ]; then
  echo "format-check: README.md has $readme_lines lines (at most $README_MAX_LINES: move details to docs/)" >&2
  failed=1
fi
python3_bin=/usr/bin/python3
[ -x "$python3_bin" ] || python3_bin=python3
"$python3_bin" scripts/check_funclen.py || failed=1
if clang-format --dry-run --Werror "${FILES[@]}"; then
  echo "format-check: ${#FILES[@]} files ok"
else
  failed=1
fi
exit "$failed"
