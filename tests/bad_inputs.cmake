# Bad inputs of the hardening sweep (issue 17), one row each: the exit code
# documented in the README and the message the user must see. Included from
# tests/CMakeLists.txt after tpuemu_cli_test; D is tests/data, P programs/.
set(P ${PROJECT_SOURCE_DIR}/programs)
set(MM ${P}/matmul_8x128.llo --in 0=${D}/run/x_8x128.npy --in 1=${D}/run/w_128x128.npy)

# Numeric options: one parser, no sign, no wrap, no trailing text, ranges named.
tpuemu_cli_test(bad.gen_add_chunk_zero 2 "tpuemu gen: the argument \\('0'\\) for option '--chunk' is invalid: expected a number of bytes >= 1 \\(65536, 64K, 1MiB" gen add --n 1024 --chunk 0)
tpuemu_cli_test(bad.gen_add_chunk_partial_tile 2 "add: --chunk 3 is not a whole number of 4096-byte f32 tiles \\(4096, 8192, ...\\)" gen add --n 1000 --chunk 3)
tpuemu_cli_test(bad.gen_add_chunk_negative 2 "option '--chunk' is invalid: expected a number of bytes >= 1" gen add --n 1024 --chunk -1)
tpuemu_cli_test(bad.gen_add_n_negative 2 "option '--n' is invalid: expected a whole number >= 1" gen add --n -1)
tpuemu_cli_test(bad.gen_add_beyond_hbm 2 "add: the operands need 13194139533312 bytes of HBM, the chip has 17179869184" gen add --n 1099511627776)
tpuemu_cli_test(bad.gen_matmul_beyond_64_bits 2 "matmul: the operands need more than 2\\^64 bytes of HBM" gen matmul --m 10000000000 --k 10000000000 --n 10000000000)
tpuemu_cli_test(bad.gen_matmul_m_negative 2 "option '--m' is invalid: expected a whole number >= 1" gen matmul --m -1 --k 128 --n 128)
tpuemu_cli_test(bad.gen_matmul_k_negative 2 "option '--k' is invalid: expected a whole number >= 1" gen matmul --m 8 --k -128 --n 128)
tpuemu_cli_test(bad.gen_matmul_m_trailing 2 "the argument \\('8x'\\) for option '--m' is invalid" gen matmul --m 8x --k 128 --n 128)
# --row-blocks (programs::MatmulSpec::row_blocks): what a shape or option needs, named.
tpuemu_cli_test(bad.gen_matmul_row_blocks_two_column_blocks 2 "matmul: 2 row blocks need one column block \\(N at most 512 columns\\)" gen matmul --m 256 --k 128 --n 640 --row-blocks 2)
tpuemu_cli_test(bad.gen_matmul_row_blocks_uneven 2 "M's 3 row tiles of 8 in 2 equal blocks" gen matmul --m 24 --k 128 --n 128 --row-blocks 2)
tpuemu_cli_test(bad.gen_matmul_row_blocks_odd_bf16 2 "M's 4 row tiles of 8 in 4 equal blocks of an even number \\(bf16 C\\)" gen matmul --m 32 --k 128 --n 128 --out-dtype bf16 --row-blocks 4)
tpuemu_cli_test(bad.gen_matmul_row_blocks_no_ring 2 "2 row blocks need the prefetch ring \\(double buffering\\)" gen matmul --m 256 --k 128 --n 128 --row-blocks 2 --no-double-buffer)
tpuemu_cli_test(bad.gen_matmul_row_blocks_zero 2 "option '--row-blocks' is invalid: expected a whole number >= 1" gen matmul --m 256 --k 128 --n 128 --row-blocks 0)
tpuemu_cli_test(bad.systolic_n_negative 2 "option '--n' is invalid: expected a whole number from 1 to 1024" systolic --n -8)
tpuemu_cli_test(bad.collective_sizes_negative 2 "size '-1' is not a whole number of bytes like 65536, 64K or 1G" collective --sizes -1)
tpuemu_cli_test(bad.collective_piece_negative 2 "size '-32' is not a whole number of bytes" collective --piece -32)
tpuemu_cli_test(bad.collective_sizes_overflow 2 "size '16777216T' is not a whole number of bytes" collective --sizes 16777216T)
tpuemu_cli_test(bad.collective_axes_empty_item 2 "--axes 'x,,y': an axis name is missing" collective --topology 4x4 --axes x,,y)
tpuemu_cli_test(bad.collective_axes_twice 2 "--axes 'x,x': axis x is named twice" collective --topology 4x4 --axes x,x)
tpuemu_cli_test(bad.run_quantum_zero 2 "option '--quantum' is invalid: expected a whole number >= 1" run ${MM} --quantum 0)
tpuemu_cli_test(bad.run_trace_max_events_negative 2 "option '--trace-max-events' is invalid: expected a whole number >= 1" run ${MM} --trace t.json --trace-max-events -1)
tpuemu_cli_test(bad.run_case_rtol_negative 2 "option '--rtol' is invalid: expected a finite number >= 0" run-case ${D} --rtol -1)
tpuemu_cli_test(bad.demo_single_chip_m_negative 2 "option '--m' is invalid: expected a whole number >= 1" demo --single-chip --m -8)
tpuemu_cli_test(bad.demo_f_not_whole_tiles 2 "--f 5 must be a multiple of 128" demo --f 5)
# 1e3:5e2 is 1000:500 (empty), not 1:5.
tpuemu_cli_test(bad.trace_window_exponent 2 "--trace-window 1e3:5e2: the window is empty" run ${MM} --trace t.json --trace-window 1e3:5e2)
tpuemu_cli_test(bad.trace_window_three_fields 2 "--trace-window 100:200:300: expected BEGIN:END in whole cycles" run ${MM} --trace t.json --trace-window 100:200:300)
tpuemu_cli_test(bad.topology_route_letters 2 "--route a,b: expected FROM,TO \\(two chip numbers" topology 4x4 --route a,b)
tpuemu_cli_test(bad.topology_route_three 2 "--route 0,5,7: expected FROM,TO" topology 4x4 --route 0,5,7)

# Endless programs stop at the cycle limit, naming core, bundle and source line; SystemC's own chatter stays off stdout.
tpuemu_cli_test(bad.run_endless_loop_default_limit 3 "program fault: chip 0 core 0 bundle 0x0 \\(.*endless_loop.llo:3\\): the run reached the cycle limit \\(100000000 cycles, --max-cycles\\)" run ${D}/run/endless_loop.llo)
tpuemu_cli_test(bad.pod_endless_loop_stdout_quiet 3 "^tpuemu run: program fault: chip 0 core 0 bundle 0x0 .*cycle limit \\(100 cycles" run ${D}/run/endless_loop.llo --topology 2 --max-cycles 100)
set_tests_properties(cli.bad.pod_endless_loop_stdout_quiet PROPERTIES ENVIRONMENT EXPECT_STDOUT_EMPTY=1)
tpuemu_cli_test(bad.max_cycles_zero 2 "option '--max-cycles' is invalid: expected a whole number >= 1" run ${D}/run/endless_loop.llo --max-cycles 0)

# The allocation table is checked against every memory space at load; .const values are checked where they are used.
tpuemu_cli_test(bad.run_allocation_beyond_vmem 2 "huge_allocation.llo:2:1: error: #allocation0 \\(offset 0x0, size 0xffffffffffff\\) does not fit vmem: v5e has 134217728 bytes of it \\(vmem.size\\)" run ${D}/bad/huge_allocation.llo)
tpuemu_cli_test(bad.check_next_allocation_beyond_vmem 2 "huge_allocation.llo:3:1: error: #allocation1 \\(offset 0x1000000000000, size 0x1000\\) does not fit vmem" check ${D}/bad/huge_allocation.llo)
tpuemu_cli_test(bad.run_smem_allocation_too_big 2 "smem_too_big.llo:2:1: error: #allocation0 \\(offset 0x0, size 0x10000000\\) does not fit smem: v5e has 1048576 bytes of it \\(smem.size\\)" run ${D}/bad/smem_too_big.llo)
tpuemu_cli_test(bad.check_const_beyond_2_62 2 "const_beyond_2_62.llo:2:14: error: '0x7fffffffffffffff' is out of range: integers are at most 2\\^62" check ${D}/bad/const_beyond_2_62.llo)
tpuemu_cli_test(bad.asm_const_beyond_32_bits 2 "const_beyond_32_bits.llo:2:14: error: constant 'A' = 4294967296 does not fit in 32 bits" asm ${D}/bad/const_beyond_32_bits.llo -o const.tpub)
tpuemu_cli_test(bad.asm_const_product_overflow 2 "const_product_overflow.llo:1:33: error: constant expression overflows 64 bits" asm ${D}/bad/const_product_overflow.llo -o const.tpub)
tpuemu_cli_test(bad.asm_const_shift_overflow 2 "const_shift_overflow.llo:2:18: error: constant expression overflows 64 bits" asm ${D}/bad/const_shift_overflow.llo -o const.tpub)

# Output paths are checked before the run; refused inputs exit 2, not as program faults.
tpuemu_cli_test(bad.demo_report_unwritable 2 "tpuemu demo: --report /nonexistent/r.json: cannot write this file \\(folder /nonexistent" demo --report /nonexistent/r.json)
tpuemu_cli_test(bad.pod_demo_report_unwritable 2 "tpuemu demo: --report /nonexistent/r.json: cannot write this file" demo --topology 2 --report /nonexistent/r.json)
tpuemu_cli_test(bad.demo_single_chip_report_unwritable 2 "tpuemu demo: --report /nonexistent/r.json: cannot write this file" demo --single-chip --report /nonexistent/r.json)
tpuemu_cli_test(bad.run_case_report_unwritable 2 "tpuemu run-case: --report /nonexistent/r.json: cannot write this file" run-case ${D} --report /nonexistent/r.json)
tpuemu_cli_test(bad.run_out_unwritable 2 "tpuemu run: --out /nonexistent/o.npy: cannot write this file" run ${MM} --out 2=/nonexistent/o.npy)
tpuemu_cli_test(bad.run_report_is_directory 2 "tpuemu run: --report ${D}: cannot write this file \\(it is a directory\\)" run ${MM} --report ${D})
tpuemu_cli_test(bad.pod_out_unwritable 2 "tpuemu run: --out /nonexistent/o_0.npy: cannot write this file" run ${P}/ring_shift.llo --topology 2 --out 1=/nonexistent/o_{chip}.npy)
tpuemu_cli_test(bad.collective_json_unwritable 2 "tpuemu collective: --json /nonexistent/c.json: cannot write this file" collective --topology 2 --sizes 1M --json /nonexistent/c.json)
tpuemu_cli_test(bad.gen_output_unwritable 2 "tpuemu gen: --output /nonexistent/a.llo: cannot write this file" gen add --n 1024 -o /nonexistent/a.llo)
tpuemu_cli_test(bad.collective_beyond_hbm 2 "size 17179869184: the buffers need 25769803776 bytes of HBM per chip but v5e has 17179869184" collective --topology 2 --sizes 16G --no-data)
tpuemu_cli_test(bad.run_in_twice 2 "--in 0=.*: operand 0 is given twice" run ${MM} --in 0=${D}/run/x_8x128.npy)
tpuemu_cli_test(bad.pod_in_twice 2 "--in 0=a_{chip}.npy: operand 0 is given twice" run ${P}/ring_shift.llo --topology 2 --in 0=a_{chip}.npy --in 0=a_{chip}.npy)
tpuemu_cli_test(bad.run_out_without_data 2 "--out needs the data that a timing-only run \\(--no-data\\) does not compute" run ${MM} --no-data --out 2=o.npy)
# Timing-only runs read no array inputs: files that do not exist (or never end) are not opened.
tpuemu_cli_test(bad.run_no_data_reads_no_inputs 0 "cycles +1937" run ${P}/matmul_8x128.llo --no-data --in 0=/nonexistent/a.npy --in 1=/dev/zero)

# SIGINT/SIGTERM stop a run like a fault (exit 130/143); the waveform's limit is a bad input (2), not a program fault.
add_test(NAME cli.bad.signals_stop_runs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/signals.sh $<TARGET_FILE:tpuemu> ${D}/run/endless_loop.llo)
set_tests_properties(cli.bad.signals_stop_runs PROPERTIES LABELS cli)
# A signal after the emulation has ended stops nothing (the outputs are written whole) and says so;
# an LD_PRELOAD shim sends it at the run's first fflush(stdout), right after the report. Unsanitized
# builds only: a preloaded library ahead of the sanitizer runtime makes ASan refuse to start.
if(NOT TPUEMU_SANITIZE)
  add_library(raise_sigint_at_flush MODULE ${CMAKE_CURRENT_SOURCE_DIR}/cli/raise_sigint_at_flush.cpp)
  target_link_libraries(raise_sigint_at_flush PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME cli.bad.signal_after_run
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/signal_after_run.sh $<TARGET_FILE:tpuemu>
            $<TARGET_FILE:raise_sigint_at_flush> ${MM})
  set_tests_properties(cli.bad.signal_after_run PROPERTIES LABELS cli)
endif()

# Inputs are regular files of bounded size, checked before they are read; a program must hold bundles.
tpuemu_cli_test(bad.run_directory 2 "tests/data: error: is a directory, not a file" run ${D})
# Two writes of one register in a bundle (unless both are predicated), and what run refuses at load (a branch to no bundle), fail check too.
tpuemu_cli_test(bad.check_two_writes 2 "two_writes: 1 bundles, 2 ops \\(SALU 2\\): 1 error.*two_writes.llo:2:19: error: %s1 is written twice in one bundle \\(also by the op at 2:3\\)" check ${D}/bad/two_writes.llo)
tpuemu_cli_test(bad.run_two_writes 2 "two_writes.llo:2:19: error: %s1 is written twice in one bundle" run ${D}/bad/two_writes.llo)
tpuemu_cli_test(bad.check_sphi_registers 2 "sphi_registers.llo:4:3: error: sphi: its result %s3 and every input must be one register \\(a phi is a no-op once registers are allocated; %s1 would not reach the result\\)" check ${D}/bad/sphi_registers.llo)
tpuemu_cli_test(bad.run_sphi_registers 2 "sphi_registers.llo:4:3: error: sphi: its result %s3" run ${D}/bad/sphi_registers.llo)
tpuemu_cli_test(check_exclusive_writes 0 "exclusive_writes: 2 bundles, 3 ops \\(SALU 3\\)$" check ${D}/isa/exclusive_writes.llo)
tpuemu_cli_test(bad.check_branch_nowhere 2 "branch_nowhere: 3 bundles, 3 ops \\(SALU 2, BRANCH 1\\): 1 error.*branch_nowhere.llo:3:3: branch target bundleno = 600 is not the address of a bundle" check ${D}/bad/branch_nowhere.llo)
tpuemu_cli_test(bad.check_directory 2 "data: error: is a directory, not a file" check ${D})
tpuemu_cli_test(bad.asm_directory 2 "data: error: is a directory, not a file" asm ${D} -o dir.tpub)
tpuemu_cli_test(bad.run_dev_zero 2 "^/dev/zero: error: is not a regular file" run /dev/zero)
tpuemu_cli_test(bad.run_in_dev_zero 2 "tpuemu run: /dev/zero: is not a regular file" run ${P}/matmul_8x128.llo --in 0=/dev/zero --in 1=${D}/run/w_128x128.npy)
tpuemu_cli_test(bad.run_in_directory 2 "tpuemu run: ${D}: is a directory, not a file" run ${P}/matmul_8x128.llo --in 0=${D} --in 1=${D}/run/w_128x128.npy)
tpuemu_cli_test(bad.disasm_dev_zero 2 "/dev/zero: error: is not a regular file" disasm /dev/zero)
tpuemu_cli_test(bad.run_empty_program 2 "empty.llo:1:1: error: no bundles: the file holds no program" run ${D}/bad/empty.llo)
tpuemu_cli_test(bad.check_empty_program 2 "empty.llo:1:1: error: no bundles" check ${D}/bad/empty.llo)
tpuemu_cli_test(bad.include_dev_zero 2 "include_dev_zero.llo:2:10: error: cannot include '/dev/zero': is not a regular file" run ${D}/bad/include_dev_zero.llo)

# --expect with a *.bits.npy file compares raw bits (bf16 as uint16), as --out writes them.
set(ADD_BF16 ${TPUEMU_LLO_CORPUS}/vector_add_bf16)
if(EXISTS ${ADD_BF16}/expected.bits.npy)
  tpuemu_cli_test(bad.run_expect_bits 0 "check +operand 2 vs .*expected.bits.npy: bit-exact \\(2048 elements\\)" run ${ADD_BF16}/1772770874393474645-add.3-74-final_bundles.txt --in 0=${ADD_BF16}/inputs/x.bits.npy --in 1=${ADD_BF16}/inputs/y.bits.npy --expect 2=${ADD_BF16}/expected.bits.npy)
  # Raw bits in a file not named *.bits.npy: refused before the run, naming both dtypes and the naming rule.
  configure_file(${ADD_BF16}/expected.bits.npy ${CMAKE_CURRENT_BINARY_DIR}/expected_bits_plain_name.npy COPYONLY)
  tpuemu_cli_test(bad.run_expect_dtype_named 2 "expected_bits_plain_name.npy holds uint16 \\[8,256\\], but operand 2 \\(bf16\\[8,256\\]\\) comes out as float32 \\[8,256\\]; its raw bits compare with a file named \\*.bits.npy" run ${ADD_BF16}/1772770874393474645-add.3-74-final_bundles.txt --in 0=${ADD_BF16}/inputs/x.bits.npy --in 1=${ADD_BF16}/inputs/y.bits.npy --expect 2=${CMAKE_CURRENT_BINARY_DIR}/expected_bits_plain_name.npy)
endif()

# Messages: suggestions, visible -v, edu in the demo.
tpuemu_cli_test(bad.unknown_command_suggestion 2 "unknown command or flag 'colective'; did you mean 'collective'\\?" colective)
tpuemu_cli_test(bad.verbose_shows_info 0 "\\[info\\] chip v5e: .*\\[info\\] program .*matmul_8x128.llo: 34 bundles, 4 allocations" -v run ${P}/matmul_8x128.llo --no-data)
tpuemu_cli_test(bad.demo_edu_refused 2 "tpuemu demo: the demo multiplies bf16 tiles on 128x128 MXUs; edu has 8x8 MXUs" demo --chip edu)
tpuemu_cli_test(bad.demo_single_chip_edu_refused 2 "tpuemu demo: the demo multiplies bf16 tiles on 128x128 MXUs; edu has 8x8 MXUs" demo --single-chip --chip edu)

# A single-chip run with data that cannot fit the host is refused before any device copy (exit 2).
tpuemu_cli_test(bad.demo_host_memory_single_chip 2 "tpuemu demo: the run on v5e needs about 57.9 MiB of host memory \\(one chip\\), more than the 1.0 MiB available" demo --single-chip)
set_tests_properties(cli.bad.demo_host_memory_single_chip PROPERTIES ENVIRONMENT TPUEMU_HOST_MEMORY_LIMIT=1M)
tpuemu_cli_test(bad.wrap_and_no_wrap 2 "--wrap x and --no-wrap contradict each other" topology 4x4 --wrap x --no-wrap)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/case_missing_key/case.json "{\"kernels\": 3}\n")
tpuemu_cli_test(bad.run_case_missing_key 2 "case_missing_key/case.json: not a case description: the top level: no field 'kernel_chain'$" run-case ${CMAKE_CURRENT_BINARY_DIR}/case_missing_key)
# A field of the wrong type is named by its path.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/case_wrong_type/case.json "{\"kernel_chain\": [{\"dump\": 5, \"operands\": []}]}\n")
tpuemu_cli_test(bad.run_case_wrong_type 2 "case_wrong_type/case.json: not a case description: kernel_chain\\[0\\].dump: expected a string, got number 5$" run-case ${CMAKE_CURRENT_BINARY_DIR}/case_wrong_type)

# A by-value scalar operand bound to an input of the case (tests/data/case_scalar_input, run by cli.run_case_scalar_input):
# each variant changes one field of that case.json, written with absolute paths into the build tree.
set(SI ${D}/case_scalar_input)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SI}/case.json)
file(READ ${SI}/case.json SI_CASE)
string(JSON SI_CASE SET "${SI_CASE}" kernel_chain 0 dump "\"${SI}/scale_add.llo\"")
string(JSON SI_CASE SET "${SI_CASE}" output file "\"${SI}/expected.npy\"")
string(JSON SI_INPUTS LENGTH "${SI_CASE}" inputs)
math(EXPR SI_LAST "${SI_INPUTS} - 1")
foreach(i RANGE ${SI_LAST})
  foreach(key file bits_file)
    string(JSON f ERROR_VARIABLE no_file GET "${SI_CASE}" inputs ${i} ${key})
    if(NOT no_file)
      string(JSON SI_CASE SET "${SI_CASE}" inputs ${i} ${key} "\"${SI}/${f}\"")
    endif()
  endforeach()
endforeach()
function(scalar_input_case name)  # ARGN: a JSON path and the value to set there
  string(JSON json SET "${SI_CASE}" ${ARGN})
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${name}/case.json "${json}\n")
endfunction()
set(SI_OP1 "kernel 0 \\(scale_add\\): scalar operand 1 \\(f32\\[\\]\\)")
scalar_input_case(scalar_input_missing kernel_chain 0 operands 1 binds "\"init (f32 by value)\"")
tpuemu_cli_test(bad.run_case_scalar_input_missing 2 "^tpuemu run-case: ${SI_OP1} binds 'init', which is neither a constant nor an input of the case \\(inputs: bias, offset, scale, x\\)$" run-case ${CMAKE_CURRENT_BINARY_DIR}/scalar_input_missing)
scalar_input_case(scalar_input_not_one kernel_chain 0 operands 1 binds "\"x\"")
tpuemu_cli_test(bad.run_case_scalar_input_not_one 2 "^tpuemu run-case: ${SI_OP1} from input 'x' \\([^)]*/inputs/x.npy\\): the array has 1024 elements \\(float32, shape \\(8, 128\\)\\), but by-value operand 1 \\(f32\\[\\]\\) takes one$" run-case ${CMAKE_CURRENT_BINARY_DIR}/scalar_input_not_one)
scalar_input_case(scalar_input_not_whole kernel_chain 0 operands 3 binds "\"scale\"")
tpuemu_cli_test(bad.run_case_scalar_input_not_whole 2 "^tpuemu run-case: kernel 0 \\(scale_add\\): scalar operand 3 \\(s32\\[\\]\\) from input 'scale' \\([^)]*/inputs/scale.bits.npy\\): 1.5 \\(bfloat16 bits as uint16, shape \\(\\)\\) does not convert to operand 3's dtype s32: it is not a whole number$" run-case ${CMAKE_CURRENT_BINARY_DIR}/scalar_input_not_whole)
scalar_input_case(scalar_input_dtype_disagrees kernel_chain 0 operands 1 dtype "\"s32\"")
tpuemu_cli_test(bad.run_case_scalar_input_dtype_disagrees 2 "^tpuemu run-case: kernel 0 \\(scale_add\\): case.json gives scalar operand 1 dtype s32, but the kernel declares f32\\[\\]$" run-case ${CMAKE_CURRENT_BINARY_DIR}/scalar_input_dtype_disagrees)

# v6e's 256x256 MXU is not modelled: every MXU op is refused before the run (file:line:col), exit 2; the rest of v6e runs.
set(V6E_MXU "v6e's 256x256 MXU is not modelled \\(the model's vreg interface to an MXU is 128 lanes wide")
tpuemu_cli_test(bad.v6e_matmul_refused 2 "^tpuemu run: [^\\n]*matmul_8x128.llo:33:162: error: vmatpush.msra.mxu0: ${V6E_MXU}[^\\n]*; programs without MXU ops run\\n\\(17 more; see `tpuemu check`\\)" run ${MM} --chip v6e)
tpuemu_cli_test(bad.v6e_matmul_refused_no_data 2 "^tpuemu run: [^\\n]*matmul_8x128.llo:33:162: error: vmatpush.msra.mxu0: ${V6E_MXU}" run ${P}/matmul_8x128.llo --chip v6e --no-data)
tpuemu_cli_test(bad.v6e_matmul_refused_pod 2 "matmul_8x128.llo:33:162: error: vmatpush.msra.mxu0: ${V6E_MXU}" run ${MM} --chip v6e --topology 2)
tpuemu_cli_test(bad.v6e_check_every_mxu_op 2 "matmul_8x128.llo:53:3: error: vmatmul.f32.vlgmr.msra.gmra.mxu0: ${V6E_MXU}.*matmul_8x128.llo:54:3: error: vpop.f32.mrf.mxu0: ${V6E_MXU}" check ${P}/matmul_8x128.llo --chip v6e)
tpuemu_cli_test(bad.v6e_gen_matmul_refused 2 "tpuemu gen: matmul: ${V6E_MXU}\\); the generator targets MXUs of at most 128x128" gen matmul --chip v6e --m 8 --k 128 --n 128)
tpuemu_cli_test(bad.v6e_demo_refused 2 "^tpuemu demo: the demo multiplies bf16 tiles on 128x128 MXUs; ${V6E_MXU}\\): programs without MXU ops run on v6e" demo --chip v6e)
tpuemu_cli_test(bad.v6e_demo_single_chip_refused 2 "^tpuemu demo: the demo multiplies bf16 tiles on 128x128 MXUs; ${V6E_MXU}" demo --single-chip --chip v6e)

# The bounded JSON reader and parameter ranges; the inputs are generated (10,000 levels are 60 KB).
string(REPEAT "{\"a\": " 10000 _deep_open)
string(REPEAT "}" 10000 _deep_close)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deep.json "${_deep_open}1${_deep_close}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/bad_case/case.json "{\"kernel_chain\": [}\n")
tpuemu_cli_test(bad.chips_deep_nesting 2 "deep.json: parse error at line 1, column 385: objects and arrays nested more than 64 deep" chips --chip-file ${CMAKE_CURRENT_BINARY_DIR}/deep.json)
tpuemu_cli_test(bad.chips_chip_file_directory 2 "data: is a directory, not a file" chips --chip-file ${D})
tpuemu_cli_test(bad.chips_set_out_of_range 2 "--set: field 'mxu.count': 1000000 is above the maximum 64 \\(range 0 to 64\\)" chips v5e --set mxu.count=1000000)
tpuemu_cli_test(bad.chips_set_lanes_blamed 2 "--set: field 'vpu.lanes': 7 lanes make 28-byte VMEM rows" chips v5e --set vpu.lanes=7)
tpuemu_cli_test(bad.run_case_malformed_json 2 "bad_case/case.json: parse error at line 1, column 19" run-case ${CMAKE_CURRENT_BINARY_DIR}/bad_case)
tpuemu_cli_test(bad.chips_set_tensorcores_out_of_range 2 "--set: field 'tensorcores_per_chip': 1000 is above the maximum 8" chips v5e --set tensorcores_per_chip=1000)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/base_v9.json "{\"base\": \"v9\"}\n")
tpuemu_cli_test(bad.chips_unknown_base 2 "base_v9.json: field 'base': unknown chip preset 'v9'" chips --chip-file ${CMAKE_CURRENT_BINARY_DIR}/base_v9.json)
# A waveform over --vcd-max-changes exits 2, not 3: cli.vcd_overflow (tests/CMakeLists.txt, with the other VCD tests).

# Found by exploratory testing: a sweep over a word option failed at every point; a plot named .png held SVG.
tpuemu_cli_test(bad.workload_sweep_word_option 2 "--sweep 'strategy=1:2': --strategy is not a whole-number option \\(its default is 'fsdp'\\)" workload mlp --sweep strategy=1:2 --no-data)
tpuemu_cli_test(bad.workload_plot_not_svg 2 "--plot sweep.png: the plot is SVG: name a file ending in .svg" workload mlp --sweep batch=512:1024 --no-data --plot sweep.png)
tpuemu_cli_test(bad.collective_plot_not_svg 2 "--plot busbw.png: the plot is SVG: name a file ending in .svg" collective --op all-gather --topology 4 --sizes 64K --no-data --plot busbw.png)
